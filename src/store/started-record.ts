/**
 * The `started` audit record: what is written before a call executes, so that a crash leaves
 * it behind, read as `interrupted`.
 *
 * @example
 * ```ts
 * await writer.log(startedAuditRecord({ id: newAuditId(), tool, toolCallId, runId, traceId, sessionId: null, startedAt: Date.now(), callEnvelope, principalChain: [], policyDecision: null }));
 * ```
 */
import { encodeContextosResult, toolError, type JsonObject, type ToolOutcome } from 'tool-envelope/core';
import type { AuditRecord } from './types.js';

/**
 * The record written before a call executes (status `started`): the call envelope, principals and
 * policy decision of the call, no outcome yet. Its outcome is recorded later under the same `id`.
 *
 * @example
 * ```ts
 * const started = startedAuditRecord({ id: newAuditId(), tool: 'fs.write', toolCallId: 'c1', runId: 'r1', traceId: 't1',
 *   sessionId: null, startedAt: Date.now(), callEnvelope, principalChain: [], policyDecision: null });
 * await writer.log(started); // then run the tool, then log the outcome with id started.id
 * ```
 */
export function startedAuditRecord(
  call: Pick<
    AuditRecord,
    'id' | 'tool' | 'toolCallId' | 'runId' | 'traceId' | 'sessionId' | 'startedAt' | 'callEnvelope' | 'principalChain' | 'policyDecision'
  > &
    Partial<Pick<AuditRecord, 'idempotencyKey' | 'approvalId'>>,
): AuditRecord {
  // What the record says should no outcome ever complete it: a valid ContextOS result envelope.
  const outcome: ToolOutcome = {
    status: 'error',
    error: toolError(
      'internal',
      'interrupted',
      'The call started but no outcome was recorded: it was executing, or its process ended before it did. Whether it took effect is unknown.',
    ),
    toolCallId: call.toolCallId,
    runId: call.runId,
    traceId: call.traceId,
    capabilityId: call.tool,
    latencyMs: 0,
    ...(call.sessionId !== null && { sessionId: call.sessionId }),
  };
  return {
    ...call,
    status: 'started',
    category: 'internal',
    errorCode: 'interrupted',
    endedAt: call.startedAt,
    latencyMs: 0,
    resultEnvelope: encodeContextosResult(outcome) as unknown as JsonObject,
    outcome: outcome as unknown as JsonObject,
    idempotencyKey: call.idempotencyKey ?? null,
    replay: false,
    approvalId: call.approvalId ?? null,
  };
}
