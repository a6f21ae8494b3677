/**
 * A task call's life after its creation, on the gateway's side: its audit record is completed with
 * the task's end (completed, failed, cancelled, expired, lost) however the caller follows it, and a
 * repeated idempotency key answers with the task while it runs (the same handle, for the same
 * caller only) and with the task's final result once it ended. See docs/mcp.md#tasks.
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult, ServerContext } from '@modelcontextprotocol/server';
import { decodeContextosCall, isJsonObject, type JsonObject, failure, toolError, type ToolOutcome } from 'tool-envelope/core';
import type { GovernancePipeline, RunHooks } from '../../governance/pipeline.js';
import { stamped } from '../../governance/pipeline-outcomes.js';
import type { Store } from '../../store/types.js';
import { withBinaryDescribed } from '../binary.js';
import { rpcToolFailure, toProtocolError } from '../upstream/fault-outcomes.js';
import { type StartedTask, type TaskCallParams, type TaskFetched, callThroughTasks } from './calls.js';
import type { CallExecuted, GatewayCall } from '../call.js';
import type { Identity } from '../../governance/identity.js';
import { readToolResult } from '../reader.js';
import {
  type GatewayTasks,
  TASK_INSTANCE_SEPARATOR,
  TASKS_EXTENSION,
  type TaskEnd,
  type TaskFinal,
  type TaskCallOf,
  endOfTask,
  openTaskHandle,
  sealTaskHandle,
  taskCallerOf,
  taskOwnerKey,
} from './index.js';
import { UpstreamFault, type UpstreamSpec } from '../upstream/upstream.js';

/**
 * What executing a routed call gives back: the gateway's {@link CallExecuted}, with the task the call
 * started (its end is watched to complete the call's record).
 */
export interface TaskExecuted extends CallExecuted {
  started?: StartedTask;
}

/** One call the tasks module routes, as {@link taskCallPlan} needs it. */
export interface RoutedCall {
  /** The tasks module and the name it routes the upstream by (an isolated upstream's: its instance's). */
  routed: { tasks: GatewayTasks; via: string };
  spec: Pick<UpstreamSpec, 'name' | 'failureRules'>;
  call: GatewayCall & { caller: Identity };
  ctx: ServerContext;
  /** The params as forwarded (the upstream's tool name); their `_meta` may declare the extension (2025 era). */
  forwarded: Record<string, unknown> | undefined;
  deadlineMs: number;
  /** Where a keyed task's end is kept for replays (the governance's store). */
  store?: Store | undefined;
}

/**
 * The outcome a task's end is recorded as: a completed task's result read like any tool result;
 * a failed one's JSON-RPC error classified like any upstream error; `task-cancelled`,
 * `task-expired` (its handle ran out before it ended) and `upstream-task-lost` failures.
 */
export function taskEndOutcome(end: TaskEnd, upstream: string, rules?: UpstreamSpec['failureRules']): ToolOutcome {
  switch (end.status) {
    case 'completed': {
      const raw = end.result as unknown as CallToolResult;
      const outcome = withBinaryDescribed(
        readToolResult(raw as Parameters<typeof readToolResult>[0], rules ? { rules } : undefined),
        raw.content as ToolOutcome['content'],
      );
      if (Array.isArray(raw.content)) outcome.content = raw.content as ToolOutcome['content'];
      return outcome;
    }
    case 'failed': {
      const err = toProtocolError(new UpstreamFault('rpc', upstream, end.error.message, { rpcCode: end.error.code }));
      return (
        rpcToolFailure(err, rules) ??
        failure(toolError('internal', 'upstream-rpc-error', end.error.message, { details: { upstream, rpcCode: end.error.code } }))
      );
    }
    case 'cancelled':
      return failure(toolError('internal', 'task-cancelled', `The task was cancelled before it ended${end.message ? `: ${end.message}` : ''}.`));
    case 'expired':
      return failure(toolError('timeout', 'task-expired', 'The task did not end before its handle expired; whether it took effect is unknown.'));
    default:
      return failure(toolError('internal', 'upstream-task-lost', `The task's end is unknown: ${end.message}.`, { details: { upstream } }));
  }
}

/** The idempotency-store key of a keyed task's end, for its owner only. */
function endKey(handleHash: string, owner: string): string {
  return `task-end:${handleHash}:${owner}`;
}

/**
 * One routed call: `fetch` sends it through the tasks module; `stamp` gives the creation outcome the
 * task (sealed handle) for replays; the hooks complete its audit record at the task's end, and
 * answer a replayed creation with the task's current state or end.
 */
export interface TaskCallPlan {
  fetch: (headers?: Record<string, string>) => Promise<TaskFetched>;
  stamp: (executed: TaskExecuted) => TaskExecuted;
  hooks: RunHooks<TaskExecuted>;
}

/** The {@link TaskCallPlan} of one routed call. */
export function taskCallPlan(routedCall: RoutedCall): TaskCallPlan {
  return new Plan(routedCall);
}

// The plan's steps: fetch and stamp on the way in, then the end recorded (goesOn) or a replay answered.
class Plan implements TaskCallPlan {
  readonly fetch: TaskCallPlan['fetch'];
  readonly stamp: TaskCallPlan['stamp'];
  readonly hooks: RunHooks<TaskExecuted>;
  private readonly owner: string;
  private readonly key: string | undefined;
  private readonly who: TaskCallOf;
  // Kept with the task's handle, so that whichever replica sees the task's end completes this call's
  // record (its id, set once the pipeline wrote it) and keeps a keyed call's end for replays.
  private readonly context: JsonObject;

  constructor(private readonly routedCall: RoutedCall) {
    const { call, ctx, forwarded } = routedCall;
    const params = forwarded as TaskCallParams;
    this.owner = taskOwnerKey(taskCallerOf(call.caller, call.sessionId));
    this.key = call.idempotencyKey ?? undefined;
    const envelope = (ctx.mcpReq as { envelope?: unknown }).envelope ?? params._meta;
    this.who = { identity: call.caller, ...(call.sessionId ? { sessionId: call.sessionId } : {}), envelope, signal: ctx.mcpReq.signal };
    this.context = { toolCallId: call.toolCallId, ...(this.key ? { keyed: true } : {}) };
    const { routed, spec, deadlineMs } = routedCall;
    const context = this.context;
    this.fetch = (headers) => callThroughTasks(routed.tasks, routed.via, params, { identity: call.caller, ctx, deadlineMs, headers, context, name: spec.name });
    this.stamp = (executed) => this.stamped(executed);
    this.hooks = {
      begun: (auditId) => {
        context.auditId = auditId;
      },
      goesOn: (executed, finish) => this.goesOn(executed, finish),
      replayed: (stored) => this.currentOfReplay(stored),
    };
  }

  private stamped(executed: TaskExecuted): TaskExecuted {
    const { started, outcome } = executed;
    if (!started || !this.key) return executed;
    // What a replay needs to give this caller its task again; the handle itself only sealed.
    const taskRef = { handleHash: started.handleHash, sealed: sealTaskHandle(String(started.task.taskId), this.key, this.owner) };
    executed.outcome = { ...outcome, metadata: { ...outcome.metadata, taskRef } };
    return executed;
  }

  private goesOn(executed: TaskExecuted, finish: (outcome: ToolOutcome) => Promise<unknown>): boolean {
    const started = executed.started;
    if (!started) return false;
    const { spec, store } = this.routedCall;
    void started
      .end()
      .then(async (end) => {
        // No end: the gateway closed first (the record stays `started`, read as interrupted), or
        // another request (on any replica) won the claim on the end and records it.
        if (!end) return;
        const final = taskEndOutcome(end, spec.name, spec.failureRules);
        if (this.key && store) await keepEnd(store, endKey(started.handleHash, this.owner), final).catch(() => {});
        await finish(final);
      })
      .catch(() => {});
    return true;
  }

  /** A replayed creation: the kept end, else the task's end or current state (for this caller only). */
  private async currentOfReplay(stored: ToolOutcome): Promise<TaskExecuted> {
    const ref = stored.metadata?.taskRef;
    if (!isJsonObject(ref) || typeof ref.handleHash !== 'string') return { outcome: stored };
    const { taskRef: _t, ...metadata } = stored.metadata as JsonObject;
    const replayed = (o: ToolOutcome): TaskExecuted => ({ outcome: { ...o, metadata: { ...o.metadata, ...metadata } } });
    const store = this.routedCall.store;
    const kept = store ? await store.getIdempotency(endKey(ref.handleHash, this.owner)).catch(() => undefined) : undefined;
    if (kept?.state === 'done' && kept.outcome) return replayed(kept.outcome as unknown as ToolOutcome);
    const handle = this.key ? openTaskHandle(ref.sealed, this.key, this.owner) : undefined;
    // Another caller (another session of the principal) opens nothing: it gets no part of the task.
    if (!handle) {
      return {
        outcome: failure(
          toolError('invalid-argument', 'idempotency-key-reused', 'This idempotency key started a task for another caller (another session); use a new key.'),
        ),
      };
    }
    const task = await this.taskOf(handle);
    if (!task) {
      return {
        outcome: failure(
          toolError('no-target', 'task-not-found', 'The task this idempotency key started is no longer known (expired or gone); its end is in the audit log.'),
        ),
      };
    }
    const end = endOfTask(task);
    const { name, failureRules } = this.routedCall.spec;
    // tasks/get gave the result enveloped: read back like any upstream envelope.
    if (end)
      return replayed(taskEndOutcome(end.status === 'completed' ? { status: 'completed', result: stripResultType(end.result) } : end, name, failureRules));
    if (!this.routedCall.routed.tasks.declares(this.who.envelope)) return { outcome: stillRunning() };
    const current = replayed({ ...stored, metadata: {}, result: { task: String(task.status) } });
    current.task = { ...runningTaskFields(task), resultType: 'task', taskId: handle };
    return current;
  }

  /** The task of a handle, asked with the extension declared (a repeat that did not declare it still gets the end). */
  private taskOf(handle: string): Promise<JsonObject | undefined> {
    return this.routedCall.routed.tasks.request('tasks/get', { taskId: handle }, { ...this.who, envelope: DECLARES_TASKS }).catch(() => undefined);
  }
}

function runningTaskFields(task: JsonObject): JsonObject {
  const fields: JsonObject = {};
  for (const k of ['status', 'statusMessage', 'createdAt', 'lastUpdatedAt', 'ttlMs', 'pollIntervalMs'] as const) if (task[k] !== undefined) fields[k] = task[k];
  return fields;
}

const DECLARES_TASKS = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } } };

function stillRunning(): ToolOutcome {
  return failure(
    toolError(
      'timeout',
      'idempotency-key-in-flight',
      'The task this idempotency key started is still running; declare the tasks extension (io.modelcontextprotocol/tasks) to follow it, or retry later.',
      { retryable: true },
    ),
  );
}

function stripResultType(result: JsonObject): JsonObject {
  const { resultType: _r, ...rest } = result;
  return rest;
}

/**
 * Where a task's end that a caller's request saw is recorded, on whichever replica won the store's
 * claim on it (the `onFinal` of the tasks module): the call's `started` record, named by the handle's
 * context, is completed with the end as the creating replica would have (see {@link taskEndOutcome}),
 * and a keyed call's end is kept for its replays. Never throws.
 */
export function taskEndRecorder(pipeline: GovernancePipeline, upstreams: readonly Pick<UpstreamSpec, 'name' | 'failureRules'>[]): (final: TaskFinal) => void {
  return (final) => {
    void recordTaskEnd(pipeline, final, upstreams);
  };
}

async function recordTaskEnd(pipeline: GovernancePipeline, final: TaskFinal, upstreams: readonly Pick<UpstreamSpec, 'name' | 'failureRules'>[]): Promise<void> {
  // An isolated upstream's instance is routed as `name#key`: its rules are the upstream's.
  const name = final.upstream.split(TASK_INSTANCE_SEPARATOR)[0] as string;
  const outcome = taskEndOutcome(final.end, name, upstreams.find((u) => u.name === name)?.failureRules);
  const { auditId, toolCallId, keyed } = final.context;
  if (keyed === true) await keepEnd(pipeline.store, endKey(final.handleHash, final.owner), outcome).catch(() => {});
  if (typeof auditId === 'string')
    await completeOpenRecord(pipeline, auditId, outcome, { ...(typeof toolCallId === 'string' ? { toolCallId } : {}), stamp: true });
}

/**
 * Completes a call's `started` record (by its id, from the store: the call may have started in
 * another process) with `outcome`, under the call and decision the record holds. Nothing when the
 * record is absent, already completed, or (with `toolCallId`) of another call; `stamp` puts the
 * call's ids on an outcome that has none of its own. Never throws.
 */
export async function completeOpenRecord(
  pipeline: GovernancePipeline,
  auditId: string,
  outcome: ToolOutcome,
  options: { toolCallId?: string; stamp?: boolean } = {},
): Promise<void> {
  try {
    const started = await pipeline.store.getAudit(auditId);
    // The store reads a started record no outcome completed yet as interrupted.
    if (!started || (started.status !== 'started' && started.status !== 'interrupted')) return;
    if (options.toolCallId !== undefined && started.toolCallId !== options.toolCallId) return;
    const call = decodeContextosCall(started.callEnvelope);
    const { latencyMs: _l, ...rest } = options.stamp ? stamped(outcome, call) : outcome;
    const of = { call, decision: started.policyDecision as JsonObject | null, startedAt: started.startedAt };
    await pipeline.audit(of, rest, { auditId, approvalId: started.approvalId });
  } catch {
    // The outcome stands; a record that cannot be written is the writer's to report.
  }
}

/**
 * Keeps a keyed call's end where a replay finds it (through the idempotency store's own interface):
 * a task's end, or the final round of a call that took several input rounds (rounds/relay.ts).
 */
export async function keepEnd(store: Store, key: string, outcome: ToolOutcome): Promise<void> {
  const claimToken = randomUUID();
  const claim = await store.claimIdempotency({ key, fingerprint: 'task-end', tool: 'task-end', toolCallId: key, claimToken, createdAt: Date.now() });
  if (claim.claimed) await store.completeIdempotency(key, claimToken, JSON.parse(JSON.stringify(outcome)) as JsonObject, Date.now());
}
