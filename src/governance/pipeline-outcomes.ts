/**
 * Outcomes the governance pipeline makes or adjusts: synthetic outcomes (blocked, paused, refused),
 * an executed outcome stamped with the call's ids, a replay under the new call's ids.
 */
import { type JsonObject, type ToolCall, type ToolError, type ToolOutcome, toolError } from 'tool-envelope/core';
import type { SyntheticInit } from './pipeline-types.js';

/**
 * An `elevation` error (blocked or paused by governance).
 *
 * @example
 * ```ts
 * elevation('policy-denied', 'Blocked by policy: no.', { policyDecisionId: 'pd_1' });
 * ```
 */
export function elevation(code: string, detail: string, details?: JsonObject): ToolError {
  return toolError('elevation', code, detail, details ? { details } : undefined);
}

/**
 * A synthetic outcome from the call's ids, capability and risk tags.
 *
 * @example
 * ```ts
 * const o = syntheticOutcome(call, { status: 'blocked', error }, ['pii']);
 * ```
 */
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
 * An executed outcome carries the call's ids and decision (an executor need not set them).
 *
 * @example
 * ```ts
 * const o = stamped(await execute(call), call);
 * ```
 */
export function stamped(outcome: ToolOutcome, call: ToolCall): ToolOutcome {
  if (outcome.toolCallId === call.toolCallId && outcome.policyDecisionId === call.policyDecisionId) return outcome;
  const o: ToolOutcome = {
    ...outcome,
    toolCallId: outcome.toolCallId ?? call.toolCallId,
    runId: outcome.runId ?? call.runId,
    traceId: outcome.traceId ?? call.traceId,
    capabilityId: outcome.capabilityId ?? call.capabilityId,
    policyDecisionId: call.policyDecisionId ?? null,
  };
  if (call.sessionId !== undefined && outcome.sessionId === undefined) o.sessionId = call.sessionId;
  return o;
}

/**
 * The outcome a replay gives to *this* call: the stored result under the new call's ids.
 *
 * @example
 * ```ts
 * const o = asThisCall(stored, call, 3);
 * ```
 */
export function asThisCall(stored: ToolOutcome, call: ToolCall, latencyMs: number): ToolOutcome {
  const o: ToolOutcome = {
    ...stored,
    toolCallId: call.toolCallId,
    runId: call.runId,
    traceId: call.traceId,
    policyDecisionId: call.policyDecisionId ?? null,
    latencyMs,
  };
  if (call.sessionId !== undefined) o.sessionId = call.sessionId;
  return o;
}
