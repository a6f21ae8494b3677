/**
 * The state of one tool call: its handler's context, its deadline-list node and its outcome, in one
 * object (bench/README.md): no timer per call, no AbortController until `ctx.signal` is read.
 */
import {
  type ToolFailureInit,
  ToolFailure,
  classifyThrown,
  sanitizeMessage,
  ToolEnvelopeError,
  type JsonObject,
  type JsonValue,
  isJsonObject,
  isSmallPlainJson,
  type JsonReplacement,
  toJsonSafe,
  type ContentBlock,
  type ToolCall,
  type ToolError,
  type ToolOutcome,
  type ToolWarning,
  type OutcomeStatus,
} from 'tool-envelope/core';
import { type AbortWatcher, unwatchSignal, watchSignal } from './abort-fanout.js';
import { isPlainObject, violationsError } from './call-result.js';
import { type ProgressReport, type ToolContext, ToolBinary } from './context.js';
import { type DeadlineEntry, type DeadlineList, armDeadline, disarmDeadline } from './deadline.js';
import type { ToolDefinition } from './define.js';
import { type EventHub, type Invocation, emit, makeInvocation } from './events.js';
import { type CallIdsInit, assignCallIds } from './ids.js';
import type { Session } from './session.js';

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

/** What a runtime lends to each invocation. */
export interface InvokeEnv {
  defaultTimeoutMs: number;
  runId: string;
  events: EventHub | undefined;
  includeStack: boolean;
  /** Most warnings kept per outcome; the rest are counted in one last warning. */
  maxWarnings: number;
}

/** The deadline of a call that has none. */
export const NO_DEADLINE = Number.POSITIVE_INFINITY;

/** Bound once: reading the `performance` global and its method on every call costs measurably on the hot path. */
const now: () => number = performance.now.bind(performance);

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

/**
 * The per-call state: the handler's context and the deadline-list node at once, and
 * what builds the outcome. The steps of a call (arguments, handler, result) are run by
 * `runCall` (run-call.ts); this class settles the call exactly once, whichever of the
 * handler, the deadline and the caller's signal comes first.
 */
export class CallState implements ToolContext, DeadlineEntry, AbortWatcher {
  // DeadlineEntry
  deadline = 0;
  prevEntry: DeadlineEntry | undefined = undefined;
  nextEntry: DeadlineEntry | undefined = undefined;
  deadlineList: DeadlineList | undefined = undefined;

  // Written once, by assignCallIds in the constructor.
  toolCallId = '';
  runId = '';
  traceId = '';
  sessionId: string | undefined = undefined;
  policyDecisionId: string | null | undefined = undefined;
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

  constructor(def: ToolDefinition, opts: InvokeOptions | undefined, env: InvokeEnv, timeoutMs: number) {
    this.def = def;
    this.env = env;
    this.opts = opts;
    if (opts === undefined) assignCallIds(this, undefined, undefined, undefined, env.runId);
    else assignCallIds(this, opts.ids, opts.call, opts.session?.id, env.runId);
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

  /**
   * Starts the call (`invoke:start`, the caller's signal, the deadline) and checks the
   * arguments' shape. Returns the arguments to run with, or undefined when the call is
   * already settled (an aborted signal, arguments that are not an object).
   */
  admit(args: unknown): Record<string, unknown> | undefined {
    const signal = this.opts?.signal;
    if (this.env.events?.observed) this.announce(args, true);
    if (signal !== undefined) {
      if (signal.aborted) {
        this.handleEvent();
        return undefined;
      }
      watchSignal(signal, this);
    }
    if (this.timeoutMs !== NO_DEADLINE) armDeadline(this, this.timeoutMs, this.start);
    if (args === undefined) return {};
    if (isPlainObject(args)) return args;
    this.settleError(violationsError('invalid-argument', 'invalid-arguments', 'Invalid arguments', [{ path: '', message: 'must be an object' }]));
    return undefined;
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

  outcome(status: OutcomeStatus, result: JsonValue | undefined, error: ToolError | undefined): ToolOutcome {
    const o: ToolOutcome = {
      status,
      toolCallId: this.toolCallId,
      runId: this.runId,
      traceId: this.traceId,
      capabilityId: this.opts?.call?.capabilityId ?? this.def.name,
      latencyMs: Math.round(now() - this.start),
    };
    if (result !== undefined) o.result = result;
    if (error !== undefined) o.error = error;
    if (this.sessionId !== undefined) o.sessionId = this.sessionId;
    if (this.policyDecisionId !== undefined) o.policyDecisionId = this.policyDecisionId;
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
      const explicit = x?.hasObservation === true;
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
