/**
 * The tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28) through the gateway. The
 * gateway calls {@link TaskRouter.callTool} for a `tools/call` routed to an upstream that
 * advertises the extension, and {@link TaskRouter.request} for `tasks/get`, `tasks/update` and
 * `tasks/cancel`. Upstream task ids never reach a caller: each task gets a handle bound to the
 * caller, stored durably; the final tool result is enveloped; a caller that did not declare the
 * extension gets the final result, the gateway polling for it within the call's deadline.
 */
import { ProtocolErrorCode } from '@modelcontextprotocol/client';
import { hasTaskClientCapabilityV2, isCreateTaskResultV2, isDetailedTaskV2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import type { JsonObject } from 'tool-envelope/core';
import type { TaskHandleRecord, TaskHandleTable } from '../../store/index.js';
import type { TaskDispatch, TaskRpcAnswer } from './dispatch.js';
import { APPROVAL_TASK_UPSTREAM, type ApprovalTasks, approvalTaskView } from './approval-tasks.js';
import { type TaskCaller, isTaskHandleShape, mintTaskHandle, taskHandleHash, taskOwnerKey } from './handles.js';
import { type TaskEnd, endOfTask, watchTask } from './watch.js';

/**
 * Between an isolated upstream's name and its instance key in the name the router knows an
 * instance by (`jobs#tenant:acme`): a task on an instance that is gone is an unknown task.
 */
export const TASK_INSTANCE_SEPARATOR = '#';
/** The extension's identifier. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** JSON-RPC code of a missing required client capability (the SDK's, as in src/mcp/wire/rpc-errors.ts). */
export const MISSING_CLIENT_CAPABILITY: number = ProtocolErrorCode.MissingRequiredClientCapability;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
// Every unknown, expired or foreign handle gets exactly this answer.
const unknownTask = () => new TaskRpcError(INVALID_PARAMS, 'Failed to retrieve task: Task not found');

/** A JSON-RPC error for the gateway to send as it is (code, message, data). */
export class TaskRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'TaskRpcError';
  }
}

/** One upstream as the router sees it. */
export interface TaskUpstream {
  name: string;
  /** Whether its `server/discover` (or initialize) capabilities carry the extension. */
  tasks: boolean;
  dispatch: TaskDispatch;
}

/** What the router knows of the call it serves. */
export interface TaskCallContext {
  caller: TaskCaller;
  /** Whether this request's per-request client capabilities carry the extension. */
  declaresTasks: boolean;
  /** The call's deadline from now, in ms (polling for a non-declaring caller stops there). */
  deadlineMs: number;
  signal?: AbortSignal;
  /**
   * HTTP headers of the `tools/call` that creates the task (a URL upstream's `Mcp-Param-*`, derived
   * from the forwarded arguments); the task's own requests (`tasks/*`) carry none: the spec derives
   * only their `Mcp-Name` (the task id), which the transport sets.
   */
  headers?: Record<string, string>;
  /** What the task's handle keeps of the call that creates it (its audit record's id, ...), for {@link TaskFinal.context}. */
  context?: JsonObject;
}

/**
 * What a tool call through the router came to: the upstream's final tool result (for the
 * gateway to envelope, as any other), a JSON-RPC error of the upstream's, the deadline, or a
 * task handle for a caller that declared the extension, with `end()` to watch it to its end (the
 * first call starts the watch; undefined when the gateway closes first or too many are watched).
 */
export type TaskCallAnswer =
  | { kind: 'final'; result: JsonObject }
  | { kind: 'rpc-error'; error: { code: number; message: string; data?: unknown } }
  | { kind: 'timeout'; upstreamTaskId: string }
  | { kind: 'task'; task: JsonObject; handleHash: string; end: () => Promise<TaskEnd | undefined> };

/**
 * A task's end, reported once ({@link TaskRouterOptions.onFinal}), by the process that won the
 * store's claim on it ({@link TaskHandleTable.markFinal}) when no watch of its own takes it.
 */
export interface TaskFinal {
  tool: string;
  /** What the call that created the task stored with its handle (its audit record's id, ...). */
  context: JsonObject;
  status: TaskEnd['status'];
  /** The enveloped tool result (completed). */
  result?: JsonObject;
  /** The upstream's JSON-RPC error (failed). */
  error?: { code: number; message: string };
  /** The end as the upstream gave it (a completed task's raw tool result). */
  end: TaskEnd;
  /** The upstream (or instance) name the handle's row names. */
  upstream: string;
  handleHash: string;
  /** The digest of the caller the handle is bound to. */
  owner: string;
}

export interface TaskRouterOptions {
  taskHandles: TaskHandleTable;
  /** The upstream of a stored handle, by name. */
  upstream: (name: string) => TaskUpstream | undefined;
  /**
   * Wraps a task's final tool result in the gateway's contract (as any tool result). Called on
   * every `tasks/get` of a completed task; `first` is true the one time the end is first seen
   * (by any replica sharing the store).
   */
  envelope: (result: JsonObject, task: { tool: string; context: JsonObject; first: boolean }) => Promise<JsonObject> | JsonObject;
  /**
   * Called once per task, across every process sharing the store, when a caller's request sees its
   * end (completed, failed, cancelled, or the upstream no longer knows it) and wins the store's claim
   * on it, unless this process's own watch of the task (see {@link TaskCallAnswer}) takes the end:
   * where the gateway records it.
   */
  onFinal?: (final: TaskFinal) => void;
  /** How long a handle lives at most, in ms (default one day; shorter when the upstream's ttlMs is). */
  handleTtlMs?: number;
  /** Bounds on the polling interval for non-declaring callers (default 25..2000 ms; the upstream's pollIntervalMs in between). */
  pollMinMs?: number;
  pollMaxMs?: number;
  /** Timeout of one request to the upstream, in ms (default 10 000). */
  requestTimeoutMs?: number;
  /** Tasks watched to their end at once, at most (default 10 000); beyond, `end()` gives undefined. */
  maxWatched?: number;
  now?: () => number;
  /** Paused calls as tasks (approval-tasks.ts): without it, an approval's handle is an unknown task. */
  approvals?: ApprovalTasks;
}

export interface TaskRouter {
  callTool(upstream: TaskUpstream, tool: string, params: JsonObject, ctx: TaskCallContext): Promise<TaskCallAnswer>;
  request(method: string, params: JsonObject, ctx: Omit<TaskCallContext, 'deadlineMs'>): Promise<JsonObject>;
  /** Stops every watch (the gateway closes): their `end()` gives undefined. */
  close(): void;
}

/**
 * Whether the gateway can route the extension: it advertises `{ [TASKS_EXTENSION]: {} }` under
 * `capabilities.extensions` only when some upstream does.
 */
export function tasksExtensionFor(upstreams: readonly Pick<TaskUpstream, 'tasks'>[]): Record<string, JsonObject> | undefined {
  return upstreams.some((u) => u.tasks) ? { [TASKS_EXTENSION]: {} } : undefined;
}

/**
 * Whether a request's params declare the extension in their per-request client capabilities
 * (the 2026-07-28 `_meta` envelope; ext-tasks' own check).
 */
export function declaresTasks(params: unknown): boolean {
  return hasTaskClientCapabilityV2(params);
}

/** Whether an upstream's server capabilities carry the extension. */
export function upstreamHasTasks(capabilities: unknown): boolean {
  const ext = (capabilities as { extensions?: Record<string, unknown> } | undefined)?.extensions;
  return ext !== null && typeof ext === 'object' && Object.hasOwn(ext, TASKS_EXTENSION);
}

const withTasksDeclared = (params: JsonObject): JsonObject => {
  const meta = isObject(params._meta) ? params._meta : {};
  const caps = isObject(meta['io.modelcontextprotocol/clientCapabilities']) ? meta['io.modelcontextprotocol/clientCapabilities'] : {};
  const extensions = isObject(caps.extensions) ? caps.extensions : {};
  return { ...params, _meta: { ...meta, 'io.modelcontextprotocol/clientCapabilities': { ...caps, extensions: { ...extensions, [TASKS_EXTENSION]: {} } } } };
};

export function createTaskRouter(options: TaskRouterOptions): TaskRouter {
  return new Router(options);
}

/** A handle's row as a caller's request resolved it: the record, its upstream, and the keys it is stored under. */
interface Owned<Up extends TaskUpstream | undefined = TaskUpstream> {
  record: TaskHandleRecord;
  up: Up;
  owner: string;
  hash: string;
  handle: string;
}

/** A task the upstream created for a declaring caller, to hand out as a bound handle. */
interface Created {
  up: TaskUpstream;
  tool: string;
  task: JsonObject;
  ctx: TaskCallContext;
  started: number;
}

/** What polling a task for a caller without the extension needs. */
interface Poll {
  up: TaskUpstream;
  taskId: string;
  ctx: TaskCallContext;
  /** The call's deadline (ms since the epoch). */
  end: number;
}

/** One task this process watches to its end. */
interface Watched {
  upstream: string;
  taskId: string;
  hash: string;
  owner: string;
  /** When its handle expires (ms since the epoch). */
  until: number;
}

// The router's steps: a tool call (sent, then a final result, a polled end, or a handle), a task
// request (the handle resolved, forwarded, its answer read), and the watches of the ends.
class Router implements TaskRouter {
  private readonly now: () => number;
  private readonly handleTtlMs: number;
  private readonly pollMin: number;
  private readonly pollMax: number;
  private readonly requestTimeoutMs: number;
  private readonly maxWatched: number;
  private readonly closing = new AbortController();
  // The watches of this process, by handle hash. A caller's request that sees the end and wins the
  // store's claim hands it over (true: the watch took it); undefined stops it (the end is another's).
  private readonly watches = new Map<string, (end: TaskEnd | undefined) => boolean>();

  constructor(private readonly options: TaskRouterOptions) {
    this.now = options.now ?? Date.now;
    this.handleTtlMs = options.handleTtlMs ?? 86_400_000;
    this.pollMin = options.pollMinMs ?? 25;
    this.pollMax = options.pollMaxMs ?? 2_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    this.maxWatched = options.maxWatched ?? 10_000;
  }

  async callTool(up: TaskUpstream, tool: string, params: JsonObject, ctx: TaskCallContext): Promise<TaskCallAnswer> {
    const started = this.now();
    const answer: TaskRpcAnswer = await up.dispatch.request('tools/call', withTasksDeclared(params), {
      timeoutMs: Math.max(1, ctx.deadlineMs),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      ...(ctx.headers ? { headers: ctx.headers } : {}),
    });
    if (answer.error) return { kind: 'rpc-error', error: answer.error };
    const result = answer.result;
    if (result.resultType !== 'task') return { kind: 'final', result: stripResultType(result) };
    if (!isCreateTaskResultV2(result))
      return { kind: 'rpc-error', error: { code: INTERNAL_ERROR, message: 'the upstream answered with a task that is not valid' } };
    if (!ctx.declaresTasks) return this.pollToEnd({ up, taskId: String(result.taskId), ctx, end: started + ctx.deadlineMs }, result);
    return this.handOut({ up, tool, task: result, ctx, started });
  }

  async request(method: string, params: JsonObject, ctx: Omit<TaskCallContext, 'deadlineMs'>): Promise<JsonObject> {
    if (method !== 'tasks/get' && method !== 'tasks/update' && method !== 'tasks/cancel') throw new TaskRpcError(-32601, 'Method not found');
    if (!ctx.declaresTasks) {
      throw new TaskRpcError(MISSING_CLIENT_CAPABILITY, 'Missing required client capability', {
        requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      });
    }
    const owned = await this.owned(params.taskId, ctx.caller);
    if (owned.up === undefined) return this.approvalRequest(method, owned);
    const upstreamParams: JsonObject = { taskId: owned.record.upstreamTaskId };
    if (method === 'tasks/update') upstreamParams.inputResponses = isObject(params.inputResponses) ? params.inputResponses : {};
    const answer = await owned.up.dispatch.request(method, withTasksDeclared(upstreamParams), {
      timeoutMs: this.requestTimeoutMs,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    if (answer.error) return this.refused(answer.error, owned);
    if (method !== 'tasks/get') return {};
    if (!isDetailedTaskV2(answer.result)) throw new TaskRpcError(INTERNAL_ERROR, 'the upstream answered tasks/get with something that is not a task');
    return this.taskView(answer.result as JsonObject, owned);
  }

  close(): void {
    this.closing.abort();
  }

  /** A declaring caller's task: its handle stored, then handed out with the watch of its end. */
  private async handOut(created: Created): Promise<TaskCallAnswer> {
    const { up, tool, task, ctx, started } = created;
    const upstreamTaskId = String(task.taskId);
    const handle = mintTaskHandle();
    const upstreamTtl = typeof task.ttlMs === 'number' ? task.ttlMs : null;
    const ttl = upstreamTtl === null ? this.handleTtlMs : Math.min(this.handleTtlMs, upstreamTtl);
    const handleHash = taskHandleHash(handle);
    const owner = taskOwnerKey(ctx.caller);
    // Stored before the caller sees the handle: a tasks/get for it must resolve at once (the spec's durable creation).
    await this.options.taskHandles.put({
      handleHash,
      owner,
      upstream: up.name,
      upstreamTaskId,
      tool,
      context: ctx.context ?? {},
      createdAt: started,
      expiresAt: started + ttl,
    });
    return {
      kind: 'task',
      task: { ...taskFields(task), resultType: 'task', taskId: handle },
      handleHash,
      end: this.watchEnd({ upstream: up.name, taskId: upstreamTaskId, hash: handleHash, owner, until: started + ttl }),
    };
  }

  /** For a caller without the extension: the task polled to its end within the call's deadline. */
  private async pollToEnd(poll: Poll, first: JsonObject): Promise<TaskCallAnswer> {
    const { up, taskId, ctx, end } = poll;
    let task = first;
    for (;;) {
      const settled = this.settled(up, taskId, task);
      if (settled) return settled;
      const interval = Math.min(this.pollMax, Math.max(this.pollMin, typeof task.pollIntervalMs === 'number' ? task.pollIntervalMs : this.pollMin));
      if (this.now() + interval >= end || ctx.signal?.aborted) {
        this.cancelUpstream(up, taskId);
        return { kind: 'timeout', upstreamTaskId: taskId };
      }
      await sleep(interval, ctx.signal);
      const answer = await up.dispatch.request('tasks/get', withTasksDeclared({ taskId }), {
        timeoutMs: Math.max(1, Math.min(this.requestTimeoutMs, end - this.now())),
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
      if (answer.error) return { kind: 'rpc-error', error: answer.error };
      if (!isDetailedTaskV2(answer.result))
        return { kind: 'rpc-error', error: { code: INTERNAL_ERROR, message: 'the upstream answered tasks/get with something that is not a task' } };
      task = answer.result as JsonObject;
    }
  }

  /** What a polled task's status gives a caller without the extension; undefined while it runs. */
  private settled(up: TaskUpstream, taskId: string, task: JsonObject): TaskCallAnswer | undefined {
    const status = task.status;
    if (status === 'completed' && isObject(task.result)) return { kind: 'final', result: task.result };
    if (status === 'failed') return { kind: 'rpc-error', error: rpcErrorOf(task.error) };
    if (status === 'cancelled') return { kind: 'rpc-error', error: { code: INTERNAL_ERROR, message: `the upstream cancelled the task${statusText(task)}` } };
    if (status !== 'input_required') return undefined;
    // A caller without the extension cannot be asked: the task cannot finish for it.
    this.cancelUpstream(up, taskId);
    return {
      kind: 'rpc-error',
      error: {
        code: MISSING_CLIENT_CAPABILITY,
        message: 'The task needs input; declare the tasks extension to provide it',
        data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
      },
    };
  }

  private cancelUpstream(up: TaskUpstream, taskId: string): void {
    void up.dispatch.request('tasks/cancel', withTasksDeclared({ taskId }), { timeoutMs: this.requestTimeoutMs });
  }

  /** The row of a caller's handle and its upstream (none for an approval's task); every miss answers as an unknown task. */
  private async owned(handle: unknown, caller: TaskCaller): Promise<Owned | Owned<undefined>> {
    // Shape first: junk never reaches the store, and every miss below answers the same.
    if (!isTaskHandleShape(handle)) throw unknownTask();
    const owner = taskOwnerKey(caller);
    const hash = taskHandleHash(handle);
    const record = await this.options.taskHandles.get(hash, owner, this.now());
    if (!record) throw unknownTask();
    if (record.upstream === APPROVAL_TASK_UPSTREAM) return { record, up: undefined, owner, hash, handle };
    const up = this.options.upstream(record.upstream);
    // An instance ended (its session, the gateway) with its tasks; a shared upstream may only be down for now.
    if (!up && record.upstream.includes(TASK_INSTANCE_SEPARATOR)) throw unknownTask();
    if (!up) throw new TaskRpcError(INTERNAL_ERROR, `the upstream of this task (${record.upstream}) is not attached`);
    return { record, up, owner, hash, handle };
  }

  /**
   * A request on a paused call's task: `tasks/get` reads its approval request; the caller can neither
   * answer nor cancel it (an approver decides, through the CLI or the console).
   */
  private async approvalRequest(method: string, owned: Owned<undefined>): Promise<JsonObject> {
    const { approvals } = this.options;
    if (!approvals) throw unknownTask();
    if (method !== 'tasks/get') throw new TaskRpcError(INVALID_PARAMS, `${method}: this task waits for an approver's decision; only an approver can decide it`);
    const view = await approvalTaskView(approvals, owned.record, owned.handle, this.now());
    if (!view) throw unknownTask();
    return view;
  }

  /** The upstream's error on a task request, as the caller gets it. */
  private async refused(error: { code: number; message: string }, owned: Owned): Promise<never> {
    if (error.code !== INVALID_PARAMS) throw new TaskRpcError(error.code, error.message);
    // The upstream no longer knows the task (expired, purged, restarted): neither do we. Its end
    // is unknown, recorded once (claimed before the row goes).
    const { hash, owner } = owned;
    const first = await this.options.taskHandles.markFinal(hash, owner, this.now());
    await this.options.taskHandles.delete(hash, owner);
    if (first) this.handOver(hash, this.finalOf({ status: 'lost', message: `the upstream no longer knows the task: ${error.message.slice(0, 200)}` }, owned));
    else this.watches.get(hash)?.(undefined);
    throw unknownTask();
  }

  /** A `tasks/get` answer as the caller sees it (its handle, the enveloped result); its end claimed and reported once. */
  private async taskView(task: JsonObject, owned: Owned): Promise<JsonObject> {
    const { record, hash, owner } = owned;
    const out: JsonObject = { ...taskFields(task), taskId: owned.handle };
    const status = task.status;
    const end = endOfTask(task);
    // The one claim on the end, across every replica sharing the store: the loser records nothing.
    const first = end ? await this.options.taskHandles.markFinal(hash, owner, this.now()) : false;
    if (end && !first) this.watches.get(hash)?.(undefined);
    const final: TaskFinal | undefined = end ? this.finalOf(end, owned) : undefined;
    if (status === 'completed' && isObject(task.result)) {
      const enveloped = await this.options.envelope(stripResultType(task.result), { tool: record.tool, context: record.context, first });
      // A 2026-07-28 CallToolResult carries its discriminator, inlined in a task too (ext-tasks checks it).
      out.result = { ...enveloped, resultType: 'complete' };
      if (final) final.result = enveloped;
    }
    if (status === 'failed') {
      const error = rpcErrorOf(task.error);
      out.error = error as unknown as JsonObject;
      if (final) final.error = error;
    }
    if (status === 'input_required' && isObject(task.inputRequests)) out.inputRequests = task.inputRequests;
    if (first && final) this.handOver(hash, final);
    return out;
  }

  private finalOf(end: TaskEnd, owned: Owned): TaskFinal {
    const { record, hash, owner } = owned;
    return { tool: record.tool, context: record.context, status: end.status, end, upstream: record.upstream, handleHash: hash, owner };
  }

  /** The end a caller's request saw, when it won the claim: to this process's watch, else to `onFinal`. */
  private handOver(hash: string, final: TaskFinal): void {
    if (this.watches.get(hash)?.(final.end)) return;
    this.options.onFinal?.(final);
  }

  /** The `end()` of a handed-out task: the first call starts the watch of its end. */
  private watchEnd(watched: Watched): () => Promise<TaskEnd | undefined> {
    let ended: Promise<TaskEnd | undefined> | undefined;
    return () => {
      if (ended) return ended;
      if (this.watches.size >= this.maxWatched || this.closing.signal.aborted) return (ended = Promise.resolve(undefined));
      ended = this.startWatch(watched);
      return ended;
    };
  }

  private startWatch(watched: Watched): Promise<TaskEnd | undefined> {
    const { upstream, taskId, hash, owner, until } = watched;
    const w = watchTask({
      upstream: () => this.options.upstream(upstream),
      taskId,
      until,
      pollMinMs: this.pollMin,
      pollMaxMs: this.pollMax,
      requestTimeoutMs: this.requestTimeoutMs,
      now: this.now,
      signal: this.closing.signal,
    });
    let claimed = false;
    this.watches.set(hash, (end) => {
      const took = w.seen(end);
      if (took && end) claimed = true;
      return took && end !== undefined;
    });
    // An end the watch saw itself is recorded only by whoever wins the store's claim (any replica).
    const claim = (end: TaskEnd | undefined) =>
      !end || claimed
        ? end
        : this.options.taskHandles.markFinal(hash, owner, this.now()).then(
            (first) => (first ? end : undefined),
            () => undefined,
          );
    return w.ended.then(claim).finally(() => this.watches.delete(hash));
  }
}

// The task's own fields only: nothing else of the upstream's answer (its _meta names the upstream).
function taskFields(task: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const key of ['status', 'statusMessage', 'createdAt', 'lastUpdatedAt', 'ttlMs', 'pollIntervalMs'] as const) {
    if (task[key] !== undefined) out[key] = task[key];
  }
  return out;
}

function stripResultType(result: JsonObject): JsonObject {
  const { resultType: _r, ...rest } = result;
  return rest;
}

function rpcErrorOf(error: unknown): { code: number; message: string } {
  const e = isObject(error) ? error : {};
  return { code: typeof e.code === 'number' ? e.code : INTERNAL_ERROR, message: typeof e.message === 'string' ? e.message : 'the task failed' };
}

function statusText(task: JsonObject): string {
  return typeof task.statusMessage === 'string' ? `: ${task.statusMessage.slice(0, 200)}` : '';
}

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
