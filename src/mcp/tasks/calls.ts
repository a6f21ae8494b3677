/**
 * The gateway's side of the tasks extension (`io.modelcontextprotocol/tasks`): the tasks object
 * of src/mcp/tasks made from the gateway's options, a routed `tools/call` read as an upstream
 * answer the gateway envelopes like any other, and `tasks/get|update|cancel` answered through
 * caller-bound handles. A task request that cannot go through the module is refused: no upstream
 * task id ever reaches a caller unwrapped.
 */
import { ProtocolError, ProtocolErrorCode as ErrorCode, type CallToolResult, type Result, type ServerContext } from '@modelcontextprotocol/server';
import type { JsonObject, ToolOutcome } from 'tool-envelope/core';
import type { Identity } from '../../governance/identity.js';
import type { TaskHandleTable } from '../../store/index.js';
import type { Store } from '../../store/types.js';
import { type Dialect, type ToCallToolResultOptions, outcomeToCallToolResult } from '../envelope.js';
import { rpcError } from '../wire/rpc-errors.js';
import { readToolResult } from '../reader.js';
import { TASK_INSTANCE_SEPARATOR, createGatewayTasks, type GatewayTasks, type TaskEnd, type TaskFinal, TaskRpcError } from './index.js';
import type { UpstreamPool } from '../upstream/instances.js';
import { type Upstream, UpstreamFault, type UpstreamState } from '../upstream/upstream.js';

/** The methods of the extension the gateway serves (every other `tasks/*` method is refused). */
export const TASK_METHODS = ['tasks/get', 'tasks/update', 'tasks/cancel'] as const;

/**
 * Options of {@link gatewayTasksFor}: how the gateway envelopes results (its dialect, preview limit,
 * the draft ToolFailure metadata), its version, and its tasks' lifetime and end recorder.
 */
export interface GatewayTasksForOptions {
  dialect: Dialect;
  previewLimitBytes: number;
  version: string;
  handleTtlMs?: number | undefined;
  /** Records a task's end seen by a caller's request (on any replica; see `taskEndRecorder`). */
  onFinal?: ((final: TaskFinal) => void) | undefined;
  /** A failed task result also carries the draft ToolFailure metadata (the gateway's `toolFailureMeta`). */
  toolFailureMeta?: boolean | undefined;
  /** The store of approval requests, for paused calls as tasks (approval-tasks.ts; the gateway's `approvalTasks`). */
  approvals?: Pick<Store, 'getApproval'> | undefined;
}

/**
 * The gateway's tasks for a handle table: a completed task's result is enveloped in the gateway's
 * dialect, as any tool result (a failed one with the draft ToolFailure metadata when asked, its
 * correlation id the creating call's).
 */
export function gatewayTasksFor(taskHandles: TaskHandleTable, options: GatewayTasksForOptions): GatewayTasks {
  const { dialect, previewLimitBytes, handleTtlMs, onFinal } = options;
  return createGatewayTasks({
    taskHandles,
    ...(handleTtlMs !== undefined ? { handleTtlMs } : {}),
    ...(onFinal ? { onFinal } : {}),
    ...(options.approvals ? { approvals: { store: options.approvals, envelope: (o: ToolOutcome) => enveloped(o, dialect, previewLimitBytes) } } : {}),
    clientInfo: { name: 'tool-envelope-gateway', version: options.version },
    envelope: (result, task) => {
      const raw = result as unknown as CallToolResult;
      const outcome = { ...readToolResult(raw as Parameters<typeof readToolResult>[0]), capabilityId: task.tool };
      const toResult: ToCallToolResultOptions = { dialect, previewLimitBytes, content: raw.content };
      if (options.toolFailureMeta) {
        const id = task.context.toolCallId;
        toResult.toolFailure = { upstreamMeta: raw._meta, ...(typeof id === 'string' ? { correlationId: id } : {}) };
      }
      return outcomeToCallToolResult(outcome, toResult).result as unknown as JsonObject;
    },
  });
}

// A settled approval's outcome as the gateway answers a call with it (a paused call's task, approval-tasks.ts).
function enveloped(outcome: ToolOutcome, dialect: Dialect, previewLimitBytes: number): JsonObject {
  return outcomeToCallToolResult(outcome, { dialect, previewLimitBytes }).result as unknown as JsonObject;
}

// The name each upstream instance is routed by in the tasks module (an isolated one's names its instance key).
const routedNames = new WeakMap<Upstream, string>();

/**
 * Keeps the tasks module in step with an upstream: attached on every (re)connect, detached while it
 * is down or closed. An isolated upstream is routed per instance (`instanceKey`, its pool's key),
 * as `name#key`, so that a task is always polled, updated and cancelled on the instance that runs
 * it; its shared (template) instance never runs tasks.
 */
export function attachOnState(tasks: GatewayTasks, up: Upstream, state: UpstreamState, instanceKey?: string): void {
  const isolated = up.spec.isolation === 'tenant' || up.spec.isolation === 'session';
  // A released instance has left its pool before it closes: its name is the one it was routed by.
  const name = routedNames.get(up) ?? (instanceKey !== undefined ? `${up.name}${TASK_INSTANCE_SEPARATOR}${instanceKey}` : isolated ? undefined : up.name);
  if (name === undefined) return;
  routedNames.set(up, name);
  const transport = up.transport;
  if (state === 'ready' && transport) tasks.attach({ name, transport, protocolVersion: up.protocolVersion, capabilities: up.capabilities });
  else tasks.detach(name);
}

/**
 * Where the tasks module routes a call to `up`, or undefined when it does not route it: by the
 * upstream's own name, or for an isolated upstream (one of `pools`) by that of the caller's
 * instance (the instance of `key(up)`, started on first use; no `key`: no session, no instance).
 */
export function taskRouteOf(
  tasks: GatewayTasks,
  up: Upstream,
  pools: ReadonlyMap<Upstream, UpstreamPool>,
  key: ((up: Upstream) => string) | undefined,
): TaskRoute | undefined | Promise<TaskRoute | undefined> {
  const pool = key && pools.get(up);
  // A shared upstream is decided at once: no promise and no await on the per-call path.
  if (!pool) return tasks.routes(up.name) ? { tasks, via: up.name } : undefined;
  // An instance that cannot start is not routed here: the ordinary call path reports it.
  return pool.get(key(up)).then(
    (i) => {
      const via = routedNames.get(i);
      return via !== undefined && tasks.routes(via) ? { tasks, via } : undefined;
    },
    () => undefined,
  );
}

/** Where the tasks module routes one call: the module and the name of the upstream (or instance) it goes to. */
export interface TaskRoute {
  tasks: GatewayTasks;
  via: string;
}

/** The params of a `tools/call` as the gateway forwards it (its name the upstream's). */
export type TaskCallParams = JsonObject & { name: string };

/**
 * A task a call started for a declaring caller: the task as the caller gets it (its id a bound
 * handle), the handle's hash, and its end to watch.
 */
export interface StartedTask {
  task: JsonObject;
  handleHash: string;
  end: () => Promise<TaskEnd | undefined>;
}

/**
 * What a routed `tools/call` gives back: the upstream's answer as the gateway envelopes it, and for a
 * declaring caller the task (to hand back as it is) and the task it started (to watch its end).
 */
export interface TaskFetched {
  raw: CallToolResult;
  task?: JsonObject;
  started?: StartedTask;
}

/**
 * A `tools/call` to an upstream the tasks module routes, as the upstream's answer the gateway
 * envelopes: a final result is returned; the upstream's JSON-RPC error is thrown as an `rpc` fault
 * (the gateway classifies it like any upstream error); the deadline is a timeout fault. A task for a
 * declaring caller comes back beside the answer, whose outcome is then `{ task: status }`.
 */
export async function callThroughTasks(
  tasks: GatewayTasks,
  upstream: string,
  params: TaskCallParams,
  /**
   * `headers`: the HTTP headers of the upstream call (a URL upstream's `Mcp-Param-*`); `context`:
   * what a task's handle keeps of the call (its audit record's id), for whichever replica sees its
   * end; `name`: the upstream's name in messages (`upstream` is the name it is routed by).
   */
  who: {
    identity: Identity;
    ctx: ServerContext;
    deadlineMs: number;
    headers?: Record<string, string> | undefined;
    context?: JsonObject;
    name?: string;
  },
): Promise<TaskFetched> {
  // The 2025-11-25 `task` field has no meaning on the extension: the caller's envelope decides.
  const { task: _task, ...forwarded } = params;
  const { identity, ctx, deadlineMs } = who;
  const name = who.name ?? upstream;
  const call = {
    identity,
    ...(ctx.sessionId ? { sessionId: ctx.sessionId } : {}),
    envelope: (ctx.mcpReq as { envelope?: unknown }).envelope ?? params._meta,
    deadlineMs,
    signal: ctx.mcpReq.signal,
    headers: who.headers,
    context: who.context,
  };
  const got = await tasks.callTool(upstream, params.name, forwarded as JsonObject, call);
  if (got.kind === 'final') return { raw: got.result as unknown as CallToolResult };
  if (got.kind === 'rpc-error') throw new UpstreamFault('rpc', name, got.error.message, { rpcCode: got.error.code, rpcData: got.error.data });
  if (got.kind === 'timeout') throw new UpstreamFault('timeout', name, `Upstream '${name}' did not finish its task within ${deadlineMs} ms.`);
  // What governance and the audit see of a started task: its status, never its handle.
  const raw: CallToolResult = { content: [], structuredContent: { task: typeof got.task.status === 'string' ? got.task.status : 'working' } };
  return { raw, task: got.task, started: { task: got.task, handleHash: got.handleHash, end: got.end } };
}

/**
 * Refuses a task-augmented `tools/call` (`params.task`, the 2025-11-25 tasks) that the tasks
 * module does not route: forwarding it would hand the upstream's task id to the caller unbound.
 */
export function refuseUnroutedTask(params: Record<string, unknown>, upstream: string): void {
  if (params.task === undefined) return;
  throw rpcError(
    ErrorCode.InvalidParams,
    `task-augmented tools/call is not supported for upstream '${upstream}': the gateway routes tasks only through the io.modelcontextprotocol/tasks extension (2026-07-28)`,
  );
}

/**
 * Answers `tasks/get`, `tasks/update` or `tasks/cancel` through the tasks module for the verified
 * caller; without one (no routed upstream) the method is refused, never forwarded.
 */
export async function taskRequest(
  tasks: GatewayTasks | undefined,
  method: string,
  params: JsonObject,
  ctx: ServerContext,
  identity: Identity,
): Promise<Result> {
  if (!tasks?.extensions()) throw rpcError(ErrorCode.MethodNotFound, `${method}: no upstream of this gateway routes tasks (io.modelcontextprotocol/tasks)`);
  const req = ctx.mcpReq as { envelope?: unknown; inputResponses?: unknown };
  try {
    return (await tasks.request(method, params, {
      identity,
      ...(ctx.sessionId ? { sessionId: ctx.sessionId } : {}),
      envelope: req.envelope ?? params._meta,
      ...(req.inputResponses !== undefined ? { inputResponses: req.inputResponses } : {}),
      signal: ctx.mcpReq.signal,
    })) as Result;
  } catch (err) {
    if (err instanceof TaskRpcError) throw new ProtocolError(err.code, err.message, err.data);
    throw err;
  }
}
