/**
 * ContextOS ToolEnvelope v1, the tool **call** envelope (`contextos.tool_call.v1`, dialect
 * `contextos-call`): one to one with the canonical {@link ToolCall}. The result envelope and the
 * schema's call-or-result union are in `contextos.ts`. Mapping: docs/contracts.md.
 */
import type { Issue } from '../errors.js';
import type { JsonObject } from '../json.js';
import type { Principal, ToolCall } from '../model.js';
import type { ApprovalMode } from '../taxonomy.js';
import { contextosCallFast } from '../generated/core.js';
import { checkWith, invalidEnvelope } from './wire.js';
import type { AjvValidator } from './types.js';

const callFast = contextosCallFast as unknown as AjvValidator;

/** The call envelope marker. */
export const CONTEXTOS_CALL_VERSION = 'contextos.tool_call.v1';

/** A ContextOS principal (`{kind, id, tenant_id?, display?}`, closed). */
export type ContextosPrincipal = Principal;

/** A ContextOS tool call envelope. */
export interface ContextosToolCall {
  envelope_version: typeof CONTEXTOS_CALL_VERSION;
  tool_call_id: string;
  run_id: string;
  trace_id: string;
  session_id?: string;
  capability_id: string;
  args: JsonObject;
  principal_chain: ContextosPrincipal[];
  approval_mode_requested: ApprovalMode;
  approval_mode_effective: ApprovalMode;
  approval_mode_highest: ApprovalMode;
  policy_decision_id?: string | null;
  evidence_refs: string[];
  idempotency_key?: string | null;
  auth_ref?: string | null;
  metadata?: JsonObject;
}

/** Fast check of a call envelope. */
export function validateContextosCall(doc: unknown): doc is ContextosToolCall {
  return callFast(doc);
}

/** Every violation of the call envelope schema. */
export function checkContextosCall(doc: unknown): Issue[] {
  return checkWith('contextosCallFull', doc);
}

/** Call envelope → canonical {@link ToolCall}. Sub-objects are shared, not copied. */
export function decodeContextosCall(doc: unknown): ToolCall {
  if (!validateContextosCall(doc)) invalidEnvelope('ContextOS tool call envelope', checkContextosCall(doc));
  const d = doc as ContextosToolCall;
  const call: ToolCall = {
    toolCallId: d.tool_call_id,
    runId: d.run_id,
    traceId: d.trace_id,
    capabilityId: d.capability_id,
    args: d.args,
    principalChain: d.principal_chain,
    approvalModeRequested: d.approval_mode_requested,
    approvalModeEffective: d.approval_mode_effective,
    approvalModeHighest: d.approval_mode_highest,
    evidenceRefs: d.evidence_refs,
  };
  if (d.session_id !== undefined) call.sessionId = d.session_id;
  if (d.policy_decision_id !== undefined) call.policyDecisionId = d.policy_decision_id;
  if (d.idempotency_key !== undefined) call.idempotencyKey = d.idempotency_key;
  if (d.auth_ref !== undefined) call.authRef = d.auth_ref;
  if (d.metadata !== undefined) call.metadata = d.metadata;
  return call;
}

/** Canonical {@link ToolCall} → call envelope (every field maps one to one; nothing is lost). */
export function encodeContextosCall(call: ToolCall): ContextosToolCall {
  const doc: ContextosToolCall = {
    envelope_version: CONTEXTOS_CALL_VERSION,
    tool_call_id: call.toolCallId,
    run_id: call.runId,
    trace_id: call.traceId,
    capability_id: call.capabilityId,
    args: call.args,
    principal_chain: call.principalChain,
    approval_mode_requested: call.approvalModeRequested,
    approval_mode_effective: call.approvalModeEffective,
    approval_mode_highest: call.approvalModeHighest,
    evidence_refs: call.evidenceRefs,
  };
  if (call.sessionId !== undefined) doc.session_id = call.sessionId;
  if (call.policyDecisionId !== undefined) doc.policy_decision_id = call.policyDecisionId;
  if (call.idempotencyKey !== undefined) doc.idempotency_key = call.idempotencyKey;
  if (call.authRef !== undefined) doc.auth_ref = call.authRef;
  if (call.metadata !== undefined) doc.metadata = call.metadata;
  return doc;
}
