/**
 * Invoking a tool: every call, whatever happens inside the handler, resolves
 * to a canonical {@link ToolOutcome}. The returned promise rejects only for
 * misuse of the library itself (e.g. a closed session, a bad option), never
 * because the tool failed.
 *
 * Cost model: one object per call (the call state, which is also the
 * handler's context and the deadline-list node), no timer per call (see
 * deadline.ts), no AbortController until the handler reads `ctx.signal`, no
 * event payload unless someone listens.
 */
import { type ToolFailureInit, ToolFailure, classifyThrown, sanitizeMessage } from '../core/classify.js';
import { ToolEnvelopeError } from '../core/errors.js';
import { type JsonObject, type JsonValue, isJsonObject } from '../core/json.js';
import { type JsonReplacement, toJsonSafe } from '../core/json-safe.js';
import type { ContentBlock, ToolCall, ToolError, ToolOutcome, ToolWarning } from '../core/model.js';
import { type OutcomeStatus, defaultRetryable } from '../core/taxonomy.js';
import { type ProgressReport, type ToolContext, ToolBinary } from './context.js';
import { type DeadlineEntry, type DeadlineList, armDeadline, disarmDeadline } from './deadline.js';
import type { ToolDefinition } from './define.js';
import { type EventHub, type Invocation, emit, makeInvocation } from './events.js';
import { type CallIds, type CallIdsInit, PROCESS_RUN_ID, newToolCallId, newTraceId, resolveCallIds } from './ids.js';
import type { CheckResult, Violation } from './schema.js';
import { isSmallPlainJson } from './json-fast.js';
import type { Session } from './session.js';

/**
 * Options of one invocation.
 *
 * @example
 * ```ts
 * const ac = new AbortController();
 * await runtime.invoke('crawl', { url }, { signal: ac.signal, timeoutMs: 10_000, session });
 * ```
 */
export interface InvokeOptions {
  /** Cancels the call: the outcome is a `timeout`/`cancelled` failure and the handler's signal is aborted. */
  signal?: AbortSignal;
  /** Deadline for this call in ms (`0` or `Infinity`: none); overrides the tool's and the runtime's default. */
  timeoutMs?: number;
  /** The MCEC session: sets `sessionId`, records good observations, adds `lastObservation` to failures. */
  session?: Session;
  /** The ContextOS call envelope this call answers: its ids are echoed; its `args` are used when `args` is undefined. */
  call?: ToolCall;
  /** Pre-resolved ids (win over `call`'s); missing ones are generated. */
  ids?: CallIdsInit;
  /** Receives the handler's progress reports. */
  onProgress?: (report: ProgressReport) => void;
  /** Put the stack of unexpected errors into `error.details.stack` (default: the runtime's setting, off). */
  includeStack?: boolean;
}

/**
 * What a runtime lends to each invocation.
 *
 * @example
 * ```ts
 * const env: InvokeEnv = { defaultTimeoutMs: 30_000, runId: 'run-1', events: undefined, includeStack: false, maxWarnings: 50 };
 * ```
 */
export interface InvokeEnv {
  defaultTimeoutMs: number;
  runId: string;
  events: EventHub | undefined;
  includeStack: boolean;
  /** Most warnings kept per outcome; the rest are counted in one last warning. */
  maxWarnings: number;
}

/**
 * The defaults of a bare {@link invokeTool}: 30 s deadline, the process run id, no events.
 *
 * @example
 * ```ts
 * DEFAULT_INVOKE_ENV.defaultTimeoutMs; // 30000
 * ```
 */
export const DEFAULT_INVOKE_ENV: InvokeEnv = Object.freeze({
  defaultTimeoutMs: 30_000,
  runId: PROCESS_RUN_ID,
  events: undefined,
  includeStack: false,
  maxWarnings: 50,
});

const NO_DEADLINE = Number.POSITIVE_INFINITY;

/** Bound once: reading the `performance` global and its method on every call costs measurably on the hot path. */
const now: () => number = performance.now.bind(performance);

function timeoutOf(option: number | undefined, tool: number | undefined, fallback: number): number {
  const ms = option ?? tool ?? fallback;
  if (typeof ms !== 'number' || Number.isNaN(ms) || ms < 0) {
    throw new ToolEnvelopeError('invalid-option', `timeoutMs must be a non-negative number, got ${String(ms)}`);
  }
  return ms === 0 ? NO_DEADLINE : ms;
}

function violationsError(category: 'invalid-argument' | 'internal', code: string, what: string, violations: Violation[]): ToolError {
  const shown = violations.slice(0, 5).map((v) => `${v.path || '(root)'} ${v.message}`);
  const more = violations.length > 5 ? `; and ${violations.length - 5} more` : '';
  const details: JsonObject = { violations: violations.map((v) => ({ ...v })) as unknown as JsonValue[] };
  return {
    category,
    code,
    detail: `${what}: ${shown.join('; ')}${more}`,
    retryable: defaultRetryable(category),
    details,
  };
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function base64(data: Uint8Array): string {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
}

/**
 * Callers often share one AbortSignal across many concurrent calls (cancel the
 * whole batch). One listener per signal, fanning out to the calls in flight,
 * keeps add/remove O(1) and never trips Node's MaxListeners warning.
 */
const watchers = new WeakMap<AbortSignal, Set<CallState>>();

function onCallerAbort(event: Event): void {
  const signal = event.target as AbortSignal;
  const calls = watchers.get(signal);
  watchers.delete(signal);
  signal.removeEventListener('abort', onCallerAbort);
  if (calls !== undefined) for (const call of calls) call.handleEvent();
}

function watchSignal(signal: AbortSignal, call: CallState): void {
  let calls = watchers.get(signal);
  if (calls === undefined) {
    calls = new Set();
    watchers.set(signal, calls);
    signal.addEventListener('abort', onCallerAbort);
  }
  calls.add(call);
}

function unwatchSignal(signal: AbortSignal, call: CallState): void {
  const calls = watchers.get(signal);
  if (calls === undefined || !calls.delete(call) || calls.size !== 0) return;
  watchers.delete(signal);
  signal.removeEventListener('abort', onCallerAbort);
}

/** What a handler contributes besides its result; allocated on first use, so plain calls never pay for it. */
interface Extras {
  warnings: ToolWarning[] | undefined;
  artifacts: string[] | undefined;
  citations: JsonObject[] | undefined;
  mutations: string[] | undefined;
  hasPartial: boolean;
  partial: unknown;
  hasObservation: boolean;
  observation: unknown;
}

const NOT_ABORTED = Symbol('not-aborted');

/** The per-call state: the handler's context and the deadline-list node at once. */
class CallState implements ToolContext, DeadlineEntry {
  // DeadlineEntry
  deadline = 0;
  prevEntry: DeadlineEntry | undefined = undefined;
  nextEntry: DeadlineEntry | undefined = undefined;
  deadlineList: DeadlineList | undefined = undefined;

  readonly toolCallId: string;
  readonly runId: string;
  readonly traceId: string;
  readonly sessionId: string | undefined;
  readonly policyDecisionId: string | null | undefined;
  readonly def: ToolDefinition;
  readonly env: InvokeEnv;
  readonly opts: InvokeOptions | undefined;
  readonly timeoutMs: number;
  readonly start: number;
  done = false;
  resolve: ((o: ToolOutcome) => void) | undefined = undefined;
  controller: AbortController | undefined = undefined;
  abortReason: unknown = NOT_ABORTED;
  binaries = 0;
  invocation: Invocation | undefined = undefined;
  extra: Extras | undefined = undefined;

  /** Resolves the ids in place (see `resolveCallIds`; the same rules, without the intermediate objects). */
  constructor(def: ToolDefinition, opts: InvokeOptions | undefined, env: InvokeEnv, timeoutMs: number) {
    this.def = def;
    this.env = env;
    this.opts = opts;
    const ids = opts?.ids;
    const call = opts?.call;
    this.toolCallId = ids?.toolCallId ?? call?.toolCallId ?? newToolCallId();
    this.runId = ids?.runId ?? call?.runId ?? env.runId;
    this.traceId = ids?.traceId ?? call?.traceId ?? newTraceId();
    this.sessionId = ids?.sessionId ?? call?.sessionId ?? opts?.session?.id;
    this.policyDecisionId = ids?.policyDecisionId !== undefined ? ids.policyDecisionId : call?.policyDecisionId;
    this.timeoutMs = timeoutMs;
    this.start = now();
  }

  // ---- ToolContext -------------------------------------------------------

  get toolName(): string {
    return this.def.name;
  }
  get call(): ToolCall | undefined {
    return this.opts?.call;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.abortReason !== NOT_ABORTED) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  remainingMs(): number {
    if (this.timeoutMs === NO_DEADLINE) return NO_DEADLINE;
    return Math.max(0, this.start + this.timeoutMs - now());
  }

  get x(): Extras {
    return (this.extra ??= {
      warnings: undefined,
      artifacts: undefined,
      citations: undefined,
      mutations: undefined,
      hasPartial: false,
      partial: undefined,
      hasObservation: false,
      observation: undefined,
    });
  }

  warn(code: string, detail: string): void {
    if (!this.done) this.pushWarning(String(code), String(detail));
  }

  /** Adds a warning of the runtime's own, also while the outcome is being built. */
  pushWarning(code: string, detail: string): void {
    (this.x.warnings ??= []).push({ code, detail });
  }

  artifact(ref: string): void {
    if (!this.done) (this.x.artifacts ??= []).push(String(ref));
  }

  cite(citation: JsonObject): void {
    if (this.done) return;
    const safe = this.jsonOrWarn(citation, 'citation');
    if (safe !== undefined) (this.x.citations ??= []).push(isJsonObject(safe) ? safe : { value: safe });
  }

  mutation(ref: string): void {
    if (!this.done) (this.x.mutations ??= []).push(String(ref));
  }

  progress(progress: number, total?: number, message?: string): void {
    if (this.done) return;
    const onProgress = this.opts?.onProgress;
    const listeners = this.env.events?.progress;
    if (onProgress === undefined && (listeners === undefined || listeners.length === 0)) return;
    const report: ProgressReport = { toolName: this.def.name, toolCallId: this.toolCallId, progress };
    if (total !== undefined) report.total = total;
    if (message !== undefined) report.message = message;
    if (onProgress !== undefined) {
      try {
        onProgress(report);
      } catch (e) {
        process.emitWarning(`an onProgress callback threw: ${e instanceof Error ? e.message : String(e)}`, 'ToolEnvelopeWarning');
      }
    }
    if (listeners !== undefined && listeners.length !== 0) emit(listeners, 'invoke:progress', { ...report, invocation: this.invocation });
  }

  keepPartial(value: unknown): void {
    if (this.done) return;
    this.x.hasPartial = true;
    this.x.partial = value;
  }

  observe(value: unknown): void {
    if (this.done) return;
    this.x.hasObservation = true;
    this.x.observation = value;
  }

  binary(data: Uint8Array | ArrayBuffer, mimeType: string, options?: { name?: string; uri?: string }): ToolBinary {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : data;
    if (!(bytes instanceof Uint8Array)) throw new ToolEnvelopeError('invalid-option', 'ctx.binary() takes a Uint8Array, Buffer or ArrayBuffer');
    if (typeof mimeType !== 'string' || !/^[\w.+-]+\/[\w.+-]+/.test(mimeType)) {
      throw new ToolEnvelopeError('invalid-option', `ctx.binary(): ${JSON.stringify(mimeType)} is not a MIME type`);
    }
    this.binaries++;
    return new ToolBinary(bytes, mimeType, options?.name, options?.uri);
  }

  fail(init: ToolFailureInit): never {
    throw new ToolFailure(init);
  }

  // ---- lifecycle ---------------------------------------------------------

  /** Runs inside the outcome promise's executor. */
  begin(args: unknown, resolve: (o: ToolOutcome) => void): void {
    this.resolve = resolve;
    const signal = this.opts?.signal;
    if (this.env.events !== undefined && this.env.events.observed) this.announce(args, true);
    if (signal !== undefined) {
      if (signal.aborted) {
        this.handleEvent();
        return;
      }
      watchSignal(signal, this);
    }
    if (this.timeoutMs !== NO_DEADLINE) armDeadline(this, this.timeoutMs, this.start);
    if (args === undefined) args = {};
    else if (!isPlainObject(args)) {
      this.settleError(violationsError('invalid-argument', 'invalid-arguments', 'Invalid arguments', [{ path: '', message: 'must be an object' }]));
      return;
    }
    const check = this.def.checkInput;
    if (check === undefined) {
      this.runHandler(args);
      return;
    }
    let checked: CheckResult | Promise<CheckResult>;
    try {
      checked = check(args);
    } catch (e) {
      this.onError(e);
      return;
    }
    if (checked instanceof Promise) checked.then((r) => this.afterInputCheck(r), (e: unknown) => this.onError(e));
    else this.afterInputCheck(checked);
  }

  afterInputCheck(r: CheckResult): void {
    if (this.done) return;
    if (r.violations !== undefined) this.settleError(violationsError('invalid-argument', 'invalid-arguments', 'Invalid arguments', r.violations));
    else this.runHandler(r.value);
  }

  runHandler(args: unknown): void {
    let ret: unknown;
    try {
      ret = this.def.handler(args, this);
    } catch (e) {
      this.onError(e);
      return;
    }
    try {
      if (isThenable(ret)) {
        ret.then((v) => this.onValue(v), (e: unknown) => this.onError(e));
        return;
      }
    } catch (e) {
      // A hostile thenable: its `then` getter or method threw.
      this.onError(e);
      return;
    }
    this.onValue(ret);
  }

  onValue(v: unknown): void {
    if (this.done) return;
    try {
      let value = v;
      let content: ContentBlock[] | undefined;
      let firstBinary: ToolBinary | undefined;
      if (this.binaries !== 0 || value instanceof Uint8Array || value instanceof ArrayBuffer) {
        ({ value, content, firstBinary } = this.extractBinary(value));
      }
      const check = this.def.checkOutput;
      if (check === undefined) {
        this.settleOk(this.jsonResult(value), content, firstBinary);
        return;
      }
      // A Standard Schema checks the value the handler returned; a JSON Schema checks its JSON form.
      const json = this.def.checkOutputOnJson;
      const subject = json ? this.jsonResult(value) : value;
      const checked = check(subject);
      const after = (r: CheckResult): void => {
        if (this.done) return;
        try {
          if (r.violations !== undefined) {
            this.settleError(violationsError('internal', 'output-schema-violation', 'The result does not match the output schema', r.violations));
          } else this.settleOk(json ? (subject as JsonValue) : this.jsonResult(r.value), content, firstBinary);
        } catch (e) {
          this.settleError(this.resultError(e));
        }
      };
      if (checked instanceof Promise) checked.then(after, (e: unknown) => this.onError(e));
      else after(checked);
    } catch (e) {
      this.settleError(this.resultError(e));
    }
  }

  onError(e: unknown): void {
    if (this.done) return;
    let error: ToolError;
    try {
      error = classifyThrown(e, { includeStack: this.opts?.includeStack ?? this.env.includeStack });
    } catch {
      error = { category: 'internal', code: 'unclassifiable-throw', detail: 'The tool threw a value that could not be inspected.', retryable: false };
    }
    this.settleError(error);
  }

  /** Deadline passed (called by the deadline list). */
  onDeadline(): void {
    if (this.done) return;
    const detail = `Tool ${JSON.stringify(this.def.name)} did not finish within ${this.timeoutMs} ms.`;
    this.abort(new DOMException(detail, 'TimeoutError'));
    this.settleError({ category: 'timeout', code: 'deadline-exceeded', detail, retryable: true, details: { timeoutMs: this.timeoutMs } });
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    if (this.done) return;
    const reason: unknown = this.opts?.signal?.reason;
    this.abort(reason);
    const isTimeout = typeof reason === 'object' && reason !== null && (reason as { name?: unknown }).name === 'TimeoutError';
    this.settleError({
      category: 'timeout',
      code: isTimeout ? 'caller-deadline-exceeded' : 'cancelled',
      detail: isTimeout ? 'The caller’s deadline passed before the tool finished.' : 'The caller cancelled the call.',
      retryable: true,
    });
  }

  abort(reason: unknown): void {
    this.abortReason = reason;
    this.controller?.abort(reason);
  }

  // ---- building the outcome ----------------------------------------------

  jsonOrWarn(value: unknown, what: string): JsonValue | undefined {
    try {
      const { value: safe, replaced } = toJsonSafe(value);
      if (replaced.length !== 0) this.coerced(replaced, what);
      return safe;
    } catch (e) {
      this.pushWarning(`${what}-dropped`, `The ${what} was dropped: ${e instanceof Error ? e.message : String(e)}`);
      return undefined;
    }
  }

  jsonResult(value: unknown): JsonValue {
    if (value === undefined) return null;
    if (isSmallPlainJson(value)) return value as JsonValue;
    const { value: safe, replaced } = toJsonSafe(value);
    if (replaced.length !== 0) this.coerced(replaced, 'result');
    return safe;
  }

  coerced(replaced: JsonReplacement[], what: string): void {
    // `from` can quote an exception message (a throwing getter or toJSON): sanitise it like any thrown message.
    for (const r of replaced) this.pushWarning('value-coerced', `${what}${r.path === '' ? '' : ' ' + r.path}: ${sanitizeMessage(r.from, 200)} became ${r.to}`);
  }

  resultError(e: unknown): ToolError {
    if (e instanceof ToolEnvelopeError && (e.code === 'not-json-safe' || e.code === 'too-deep' || e.code === 'too-large')) {
      return {
        category: 'internal',
        code: e.code === 'not-json-safe' ? 'result-not-json-safe' : e.code === 'too-deep' ? 'result-too-deep' : 'result-too-large',
        detail: `The tool returned a value that cannot be sent as JSON: ${e.message}`,
        retryable: false,
      };
    }
    return classifyThrown(e, { includeStack: this.opts?.includeStack ?? this.env.includeStack });
  }

  extractBinary(value: unknown): { value: unknown; content: ContentBlock[] | undefined; firstBinary: ToolBinary | undefined } {
    const content: ContentBlock[] = [];
    let first: ToolBinary | undefined;
    const take = (b: ToolBinary): JsonObject => {
      first ??= b;
      const index = content.length;
      const mime = b.mimeType;
      const data = base64(b.data);
      if (mime.startsWith('image/')) content.push({ type: 'image', data, mimeType: mime });
      else if (mime.startsWith('audio/')) content.push({ type: 'audio', data, mimeType: mime });
      else {
        const uri = b.uri ?? `tool-envelope://calls/${encodeURIComponent(this.toolCallId)}/content/${index}`;
        content.push({ type: 'resource', resource: { uri, mimeType: mime, blob: data } });
      }
      const descriptor: JsonObject = { contentIndex: index, mimeType: mime, sizeBytes: b.data.byteLength };
      if (b.name !== undefined) descriptor.name = b.name;
      return descriptor;
    };
    let out: unknown = value;
    if (value instanceof ToolBinary) out = take(value);
    else if (value instanceof Uint8Array || value instanceof ArrayBuffer) {
      out = take(new ToolBinary(value instanceof ArrayBuffer ? new Uint8Array(value) : value, 'application/octet-stream'));
    } else if (Array.isArray(value)) out = value.map((item) => (item instanceof ToolBinary ? take(item) : item));
    else if (isPlainObject(value)) {
      // Only the top level is searched: a binary deeper down becomes { $binary } JSON through toJsonSafe.
      out = Object.fromEntries(Object.entries(value).map(([k, item]) => [k, item instanceof ToolBinary ? take(item) : item]));
    }
    return { value: out, content: content.length === 0 ? undefined : content, firstBinary: first };
  }

  outcome(status: OutcomeStatus, result: JsonValue | undefined, error: ToolError | undefined): ToolOutcome {
    const ids: CallIds = this;
    const o: ToolOutcome = {
      status,
      toolCallId: ids.toolCallId,
      runId: ids.runId,
      traceId: ids.traceId,
      capabilityId: this.opts?.call?.capabilityId ?? this.def.name,
      latencyMs: Math.round(now() - this.start),
    };
    if (result !== undefined) o.result = result;
    if (error !== undefined) o.error = error;
    if (ids.sessionId !== undefined) o.sessionId = ids.sessionId;
    if (ids.policyDecisionId !== undefined) o.policyDecisionId = ids.policyDecisionId;
    if (this.def.riskTags.length !== 0) o.riskTags = this.def.riskTags.slice();
    const x = this.extra;
    if (x !== undefined) {
      if (x.artifacts !== undefined) o.artifacts = x.artifacts;
      if (x.citations !== undefined) o.citations = x.citations;
      if (x.mutations !== undefined) o.mutations = x.mutations;
    }
    return o;
  }

  settleOk(result: JsonValue, content: ContentBlock[] | undefined, binary: ToolBinary | undefined): void {
    const session = this.opts?.session;
    if (session !== undefined) {
      const x = this.extra;
      const explicit = x !== undefined && x.hasObservation;
      const observed = explicit ? this.jsonOrWarn(x.observation, 'observation') : result;
      if (observed !== undefined) session.recordSuccess(this.def.name, this.toolCallId, observed, explicit ? undefined : binary);
    }
    this.done = true;
    this.release();
    const o = this.outcome('ok', result, undefined);
    if (content !== undefined) o.content = content;
    this.finish(o);
  }

  settleError(error: ToolError): void {
    const typed: ToolError = { ...error };
    if (typed.details !== undefined && typed.details !== null) {
      const d = this.jsonOrWarn(typed.details, 'error-details');
      if (d === undefined || !isJsonObject(d)) delete typed.details;
      else typed.details = d;
    }
    const x = this.extra;
    if (typed.partialResult === undefined && x !== undefined && x.hasPartial) typed.partialResult = x.partial as JsonObject;
    if (typed.partialResult !== undefined && typed.partialResult !== null) {
      const p = this.jsonOrWarn(typed.partialResult, 'partial-result');
      if (p === undefined) delete typed.partialResult;
      else typed.partialResult = isJsonObject(p) ? p : { value: p };
    }
    const session = this.opts?.session;
    if (typed.lastObservation === undefined && session !== undefined) {
      try {
        const last = session.lastObservation;
        if (last !== undefined) typed.lastObservation = last;
      } catch (e) {
        this.pushWarning('observation-unavailable', `The last observation could not be summarised: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    this.done = true;
    this.release();
    this.finish(this.outcome('error', undefined, typed));
  }

  release(): void {
    if (this.deadlineList !== undefined) disarmDeadline(this);
    const signal = this.opts?.signal;
    if (signal !== undefined) unwatchSignal(signal, this);
  }

  finish(o: ToolOutcome): void {
    const w = this.extra?.warnings;
    if (w !== undefined) {
      const max = this.env.maxWarnings;
      if (w.length > max) {
        const extra = w.length - max + 1;
        w.length = max - 1;
        w.push({ code: 'warnings-truncated', detail: `${extra} more warnings were left out.` });
      }
      o.warnings = w;
    }
    const events = this.env.events;
    if (events !== undefined && events.end.length !== 0) {
      const inv = this.invocation ?? this.announce(undefined, false);
      inv.outcome = o;
      emit(events.end, 'invoke:end', inv);
    }
    this.resolve!(o);
  }

  announce(args: unknown, ran: boolean): Invocation {
    const inv = makeInvocation(this.def, args, this, this.opts?.call, this.opts?.session, Date.now() - (now() - this.start), ran);
    this.invocation = inv;
    if (this.env.events!.start.length !== 0) emit(this.env.events!.start, 'invoke:start', inv);
    return inv;
  }
}

/**
 * Invokes a tool definition directly (no registry). Resolves to the outcome;
 * rejects only for library misuse (`closed` session, bad `timeoutMs`).
 *
 * @example
 * ```ts
 * const outcome = await invokeTool(echo, { text: 'hi' }, { timeoutMs: 1000 });
 * outcome.status; // 'ok'
 * ```
 */
export function invokeTool(def: ToolDefinition, args: unknown, options?: InvokeOptions, env: InvokeEnv = DEFAULT_INVOKE_ENV): Promise<ToolOutcome> {
  let state: CallState;
  try {
    const session = options?.session;
    if (session !== undefined && session.closed) throw new ToolEnvelopeError('closed', `session ${JSON.stringify(session.id)} is closed`);
    state = new CallState(def, options, env, timeoutOf(options?.timeoutMs, def.timeoutMs, env.defaultTimeoutMs));
  } catch (e) {
    return Promise.reject(e);
  }
  const input = args === undefined && options?.call !== undefined ? options.call.args : args;
  return new Promise((resolve) => {
    try {
      state.begin(input, resolve);
    } catch (e) {
      // Only a fault of the runtime itself lands here; it still becomes an outcome, never a rejection.
      state.resolve = resolve;
      state.onError(e);
    }
  });
}

/**
 * What {@link synthesizeOutcome} needs: a status, and an error for the failure statuses.
 *
 * @example
 * ```ts
 * const init: SynthesizeInit = { status: 'blocked', error: toolError('elevation', 'policy-denied', 'Denied by policy p-7.') };
 * ```
 */
export interface SynthesizeInit {
  status: OutcomeStatus;
  result?: JsonValue;
  error?: ToolError | null;
  warnings?: ToolWarning[];
  call?: ToolCall;
  ids?: CallIdsInit;
  session?: Session;
  latencyMs?: number;
  metadata?: JsonObject;
}

/**
 * Builds the outcome of a call that did not run the handler (blocked by
 * policy, paused at an approval gate, rejected, a replayed idempotent result,
 * ...), with the same ids, capability and risk tags a real run would carry.
 * A failure status without an error gets none added; pass one.
 *
 * @example
 * ```ts
 * const o = synthesizeOutcome(deleteRepo, {
 *   status: 'paused', call, error: toolError('elevation', 'approval-required', 'Waiting for an approver.'),
 * });
 * o.toolCallId === call.toolCallId; // true
 * ```
 */
export function synthesizeOutcome(def: ToolDefinition, init: SynthesizeInit, env: InvokeEnv = DEFAULT_INVOKE_ENV): ToolOutcome {
  const ids = resolveCallIds({ ids: init.ids, call: init.call, sessionId: init.session?.id }, env.runId);
  const o: ToolOutcome = {
    status: init.status,
    toolCallId: ids.toolCallId,
    runId: ids.runId,
    traceId: ids.traceId,
    capabilityId: init.call?.capabilityId ?? def.name,
    latencyMs: Math.max(0, Math.round(init.latencyMs ?? 0)),
  };
  if (ids.sessionId !== undefined) o.sessionId = ids.sessionId;
  if (ids.policyDecisionId !== undefined) o.policyDecisionId = ids.policyDecisionId;
  if (init.result !== undefined) o.result = init.result;
  if (init.error !== undefined) {
    const last = init.error !== null && init.error.lastObservation === undefined ? init.session?.lastObservation : undefined;
    o.error = last === undefined || init.error === null ? init.error : { ...init.error, lastObservation: last };
  }
  if (init.warnings !== undefined && init.warnings.length !== 0) o.warnings = init.warnings;
  if (def.riskTags.length !== 0) o.riskTags = def.riskTags.slice();
  if (init.metadata !== undefined) o.metadata = init.metadata;
  return o;
}
