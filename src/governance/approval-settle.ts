/**
 * Settling a pending approval request as rejected or expired from outside the process that owns the
 * tool (the CLI, the console): the store's conditional transition with the `rejected` outcome, then
 * its audit record. Nothing runs, so no executor is needed.
 */
import { decodeContextosCall, encodeContextosResult, type JsonObject, toolError, type ToolOutcome } from 'tool-envelope/core';
import { newAuditId } from '../store/ids.js';
import type { ApprovalRequest, AuditRecord, Store } from '../store/types.js';

/**
 * Settles a pending request as `rejected` (by an approver, with a reason) or `expired`, and appends
 * its `rejected` record to the audit log. False when someone else decided first.
 */
export async function settleRejected(
  store: Store,
  a: ApprovalRequest,
  state: 'rejected' | 'expired',
  by: string | null,
  reason: string | null,
  now: number,
): Promise<boolean> {
  const call = decodeContextosCall(a.callEnvelope);
  const detail =
    state === 'expired'
      ? `The approval request ${a.id} expired before anyone approved it.`
      : `Rejected by ${by ?? 'an approver'}${reason ? `: ${reason}` : '.'}`;
  const outcome: ToolOutcome = {
    status: 'rejected',
    error: toolError('elevation', state === 'expired' ? 'approval-expired' : 'approval-rejected', detail, { details: { approvalId: a.id } }),
    toolCallId: call.toolCallId,
    runId: call.runId,
    traceId: call.traceId,
    capabilityId: a.tool,
    policyDecisionId: call.policyDecisionId ?? null,
    latencyMs: 0,
    metadata: { approvalId: a.id, ...(by !== null && { decidedBy: by }) },
  };
  if (call.sessionId !== undefined) outcome.sessionId = call.sessionId;
  const json = JSON.parse(JSON.stringify(outcome)) as JsonObject;
  const done = await store.transitionApproval(a.id, 'pending', state, { at: now, by, reason, outcome: json });
  if (!done) return false;
  const record: AuditRecord = {
    id: newAuditId(),
    tool: a.tool,
    status: 'rejected',
    category: 'elevation',
    errorCode: outcome.error!.code ?? null,
    toolCallId: call.toolCallId,
    runId: call.runId,
    traceId: call.traceId,
    sessionId: a.sessionId,
    startedAt: now,
    endedAt: now,
    latencyMs: 0,
    callEnvelope: a.callEnvelope,
    resultEnvelope: encodeContextosResult(outcome) as unknown as JsonObject,
    outcome: json,
    principalChain: a.principalChain,
    policyDecision: a.policyDecision,
    idempotencyKey: call.idempotencyKey ?? null,
    replay: false,
    approvalId: a.id,
  };
  await store.appendAudit([record]);
  return true;
}
