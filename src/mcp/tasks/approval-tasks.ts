/**
 * A paused call as a task (#37): a client that declared the tasks extension gets a call that waits
 * for an approval as a task. Its handle is an ordinary caller-bound handle in the store's table,
 * under a reserved upstream name no configured upstream may have ({@link APPROVAL_TASK_UPSTREAM}),
 * the approval id in place of an upstream task id; `tasks/get` reads the request from the store.
 * While it waits (pending, or approved and not yet run) the task is `working`: `input_required`
 * would ask the client for input it cannot give (the approver decides elsewhere). Settled, it is
 * `completed` with the run's enveloped result (a failed run is a tool error inside it, as for any
 * call), or `failed` for a rejected or expired request, the refusal's envelope in the error's data.
 */
import type { JsonObject, ToolOutcome } from 'tool-envelope/core';
import { settledAnswer } from '../../governance/approval-join.js';
import type { TaskHandleRecord, TaskHandleTable } from '../../store/index.js';
import type { Store } from '../../store/types.js';
import { type TaskCaller, mintTaskHandle, taskHandleHash, taskOwnerKey } from './handles.js';

/** The upstream name of an approval's task handle: `@` cannot start a configured upstream's name. */
export const APPROVAL_TASK_UPSTREAM = '@approval';
/** The JSON-RPC code of a refused (rejected or expired) request's failed task: a server error, not the caller's. */
export const APPROVAL_REFUSED_CODE = -32000;
const POLL_INTERVAL_MS = 1_000;

/** What the router needs to answer an approval's task. */
export interface ApprovalTasks {
  store: Pick<Store, 'getApproval'>;
  /** A settled request's outcome as the gateway answers a call with it (a CallToolResult in its dialect). */
  envelope: (outcome: ToolOutcome) => JsonObject;
}

/** What a paused call keeps in its handle: the ids its answer carries (see `settledAnswer`). */
const KEPT_IDS = ['toolCallId', 'runId', 'traceId', 'policyDecisionId', 'sessionId'] as const;

/**
 * Stores the handle of a paused call's task, bound to its caller, and returns the task the caller
 * gets (`resultType: 'task'`). Undefined when the outcome names no approval request.
 */
export async function createApprovalTask(
  taskHandles: TaskHandleTable,
  paused: ToolOutcome,
  tool: string,
  caller: TaskCaller,
  ttlMs: number,
  now: number,
): Promise<JsonObject | undefined> {
  const approvalId = paused.metadata?.approvalId;
  if (paused.status !== 'paused' || typeof approvalId !== 'string' || approvalId === '') return undefined;
  const handle = mintTaskHandle();
  const context: JsonObject = {};
  for (const k of KEPT_IDS) if (typeof paused[k] === 'string') context[k] = paused[k] as string;
  // Stored before the caller sees the handle: a tasks/get for it resolves at once.
  await taskHandles.put({
    handleHash: taskHandleHash(handle),
    owner: taskOwnerKey(caller),
    upstream: APPROVAL_TASK_UPSTREAM,
    upstreamTaskId: approvalId,
    tool,
    context,
    createdAt: now,
    expiresAt: now + ttlMs,
  });
  const at = new Date(now).toISOString();
  return { resultType: 'task', taskId: handle, ...waiting(approvalId, 'pending', at, at, ttlMs) };
}

/**
 * `tasks/get` of an approval's task: the request read from the store (see the module comment).
 * Undefined when the store no longer has it (the caller gets an unknown task).
 */
export async function approvalTaskView(tasks: ApprovalTasks, record: TaskHandleRecord, handle: string, now: number): Promise<JsonObject | undefined> {
  const a = await tasks.store.getApproval(record.upstreamTaskId);
  if (!a || a.tool !== record.tool) return undefined;
  const created = new Date(record.createdAt).toISOString();
  const updated = new Date(a.decidedAt ?? record.createdAt).toISOString();
  const ttlMs = record.expiresAt === null ? null : record.expiresAt - record.createdAt;
  const base = { taskId: handle, createdAt: created, lastUpdatedAt: updated, ttlMs };
  const paused = { ...(record.context as Partial<ToolOutcome>), status: 'paused', capabilityId: record.tool } as ToolOutcome;
  const outcome = settledAnswer(a, paused, Math.max(0, now - record.createdAt));
  if (!outcome) return { ...base, ...waiting(a.id, a.state, created, updated, ttlMs) };
  const result: JsonObject = { ...tasks.envelope(outcome), resultType: 'complete' };
  if (a.state === 'completed' || a.state === 'failed') return { ...base, status: 'completed', result };
  const message = outcome.error?.detail ?? `the approval request was ${a.state}`;
  return { ...base, status: 'failed', statusMessage: message.slice(0, 200), error: { code: APPROVAL_REFUSED_CODE, message, data: { result } } };
}

function waiting(approvalId: string, state: string, createdAt: string, lastUpdatedAt: string, ttlMs: number | null): JsonObject {
  const statusMessage = state === 'approved' ? `Approved (${approvalId}): running` : `Waiting for an approver (${approvalId})`;
  return { status: 'working', statusMessage, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs: POLL_INTERVAL_MS };
}
