/**
 * Invoking a tool: every call, whatever happens inside the handler, resolves
 * to a canonical {@link ToolOutcome}. The returned promise rejects only for
 * misuse of the library itself (e.g. a closed session, a bad option), never
 * because the tool failed. The call's state is call-state.ts; its steps run in
 * run-call.ts (one async function).
 */
import {
  ToolEnvelopeError,
  type JsonObject,
  type JsonValue,
  type ToolCall,
  type ToolError,
  type ToolOutcome,
  type ToolWarning,
  type OutcomeStatus,
} from 'tool-envelope/core';
import { CallState, type InvokeEnv, type InvokeOptions, NO_DEADLINE } from './call-state.js';
import type { ToolDefinition } from './define.js';
import { type CallIdsInit, PROCESS_RUN_ID, resolveCallIds } from './ids.js';
import { runCall } from './run-call.js';
import type { Session } from './session.js';

export type { InvokeEnv, InvokeOptions } from './call-state.js';

/** The defaults of a bare {@link invokeTool}: 30 s deadline, the process run id, no events. */
export const DEFAULT_INVOKE_ENV: InvokeEnv = Object.freeze({
  defaultTimeoutMs: 30_000,
  runId: PROCESS_RUN_ID,
  events: undefined,
  includeStack: false,
  maxWarnings: 50,
});

function timeoutOf(option: number | undefined, tool: number | undefined, fallback: number): number {
  const ms = option ?? tool ?? fallback;
  if (typeof ms !== 'number' || Number.isNaN(ms) || ms < 0) {
    throw new ToolEnvelopeError('invalid-option', `timeoutMs must be a non-negative number, got ${given(ms)}`);
  }
  return ms === 0 ? NO_DEADLINE : ms;
}

/** A bad option's value for its message: a string quoted (`"100"` is not `100`), a number as is, else its kind. */
function given(value: unknown): string {
  if (typeof value === 'string') return value.length > 40 ? `a string ${JSON.stringify(value.slice(0, 40))}...` : `the string ${JSON.stringify(value)}`;
  if (value === null || typeof value === 'number' || typeof value === 'boolean' || typeof value === 'undefined') return String(value);
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * Checks `signal` and `session` before the call starts: a wrong value would otherwise fail deep in
 * the call (a WeakMap key, a missing method) and come back as the tool's own failure. Duck-typed, so
 * a signal of another realm or a session of another copy of the package still passes.
 */
function checkOptions(options: InvokeOptions): void {
  const signal = options.signal as unknown;
  if (signal !== undefined) {
    const s = signal as Partial<AbortSignal> | null;
    if (
      typeof s !== 'object' ||
      s === null ||
      typeof s.aborted !== 'boolean' ||
      typeof s.addEventListener !== 'function' ||
      typeof s.removeEventListener !== 'function'
    ) {
      throw new ToolEnvelopeError('invalid-option', `signal must be an AbortSignal, got ${given(signal)}`);
    }
  }
  const session = options.session as unknown;
  if (session !== undefined) {
    const s = session as Partial<Session> | null;
    if (typeof s !== 'object' || s === null || typeof s.id !== 'string' || typeof s.recordSuccess !== 'function') {
      throw new ToolEnvelopeError('invalid-option', `session must be a session (createSession()), got ${given(session)}`);
    }
  }
}

/**
 * The outcome promise's resolver, handed over by {@link capture}: a module-level executor
 * allocates no closure per call, and the resolver is taken at once.
 */
let captured: ((o: ToolOutcome) => void) | undefined;

function capture(resolve: (o: ToolOutcome) => void): void {
  captured = resolve;
}

/**
 * Invokes a tool definition directly (no registry). Resolves to the outcome;
 * rejects only for library misuse (`closed` session, a bad `timeoutMs`, `signal` or `session`).
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
    if (options !== undefined && options !== null) checkOptions(options);
    const session = options?.session;
    if (session?.closed) throw new ToolEnvelopeError('closed', `session ${JSON.stringify(session.id)} is closed`);
    state = new CallState(def, options, env, timeoutOf(options?.timeoutMs, def.timeoutMs, env.defaultTimeoutMs));
  } catch (e) {
    return Promise.reject(e);
  }
  const input = args === undefined && options?.call !== undefined ? options.call.args : args;
  // The promise the caller gets: the call's steps, its deadline or the caller's signal settle it, whichever comes first.
  const outcome = new Promise<ToolOutcome>(capture);
  state.resolve = captured;
  captured = undefined;
  runCall(state, input);
  return outcome;
}

/** What {@link synthesizeOutcome} needs: a status, and an error for the failure statuses. */
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
