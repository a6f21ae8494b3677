/**
 * The audit records of the governance pipeline: a call's `started` record (before it executes) and
 * its outcome's record, and the audit writer's options with the policy's redaction pointers.
 */
import { encodeContextosCall, encodeContextosResult, ToolEnvelopeError, type JsonObject, type ToolCall, type ToolOutcome } from 'tool-envelope/core';
import type { AuditWriterOptions } from '../store/audit-writer.js';
import { newAuditId } from '../store/ids.js';
import { startedAuditRecord } from '../store/started-record.js';
import type { AuditRecord } from '../store/types.js';
import type { PolicyDecision } from './policy-types.js';
import { isCompiledPolicy } from './policy-resolve.js';
import type { Policy } from './policy-types.js';
import { canonicalJson } from './idempotency.js';

/**
 * The call a record is of: the call, its decision and when it started. The pipeline's run of a call
 * carries these three (pipeline.ts `Run`), so its steps hand that one object over as it is.
 */
export interface AuditedCall {
  readonly call: ToolCall;
  readonly decision: PolicyDecision | JsonObject | null;
  readonly startedAt: number;
}

/** What an outcome's record says beside the call and the outcome. */
export interface AuditExtra {
  replay?: boolean;
  approvalId?: string | null;
  /** The id of the call's `started` record, which this one completes. */
  auditId?: string | undefined;
}

/** The record of a call's outcome. With `keepContent: false` the outcome's MCP `content` blocks stay out. */
export function outcomeRecord(of: AuditedCall, outcome: ToolOutcome, extra: AuditExtra, keepContent: boolean): AuditRecord {
  const { call, startedAt } = of;
  const endedAt = Date.now();
  if (!keepContent && outcome.content !== undefined) {
    const { content: _c, ...rest } = outcome;
    outcome = rest;
  }
  return {
    id: extra.auditId ?? newAuditId(),
    tool: call.capabilityId,
    status: outcome.status,
    category: outcome.error ? outcome.error.category : null,
    errorCode: outcome.error?.code ?? null,
    toolCallId: call.toolCallId,
    runId: call.runId,
    traceId: call.traceId,
    sessionId: typeof outcome.sessionId === 'string' ? outcome.sessionId : (call.sessionId ?? null),
    startedAt,
    endedAt,
    latencyMs: outcome.latencyMs ?? endedAt - startedAt,
    callEnvelope: encodeContextosCall(call) as unknown as JsonObject,
    resultEnvelope: encodeContextosResult(outcome) as unknown as JsonObject,
    outcome: outcome as unknown as JsonObject,
    principalChain: call.principalChain,
    policyDecision: of.decision as AuditRecord['policyDecision'],
    idempotencyKey: call.idempotencyKey ?? null,
    replay: extra.replay === true,
    approvalId: extra.approvalId ?? null,
  };
}

/** The `started` record of a call about to execute (an `interrupted` one if the process dies mid-call). */
export function startedRecord(id: string, of: AuditedCall, approvalId: string | null): AuditRecord {
  const { call } = of;
  return startedAuditRecord({
    id,
    tool: call.capabilityId,
    toolCallId: call.toolCallId,
    runId: call.runId,
    traceId: call.traceId,
    sessionId: call.sessionId ?? null,
    startedAt: of.startedAt,
    callEnvelope: encodeContextosCall(call) as unknown as JsonObject,
    principalChain: call.principalChain,
    policyDecision: of.decision as AuditRecord['policyDecision'],
    idempotencyKey: call.idempotencyKey ?? null,
    approvalId,
  });
}

/**
 * The audit writer's options with the policy document's `redact` pointers added to the writer's own
 * (per tool, both kept). A policy that redacts cannot be combined with redaction turned off
 * (`redact: false`): that throws `invalid-option` rather than store what the policy says never to.
 */
export function auditOptionsFor(audit: AuditWriterOptions | undefined, policy: Policy): AuditWriterOptions | undefined {
  const fromPolicy = isCompiledPolicy(policy) ? policy.document.redact : undefined;
  if (fromPolicy === undefined || Object.keys(fromPolicy).length === 0) return audit;
  if (audit?.redact === false) {
    throw new ToolEnvelopeError(
      'invalid-option',
      'the policy redacts values from the audit log (redact), but the audit log stores records verbatim (redact: false)',
    );
  }
  const pointers: Record<string, string[]> = {};
  const add = (from: Readonly<Record<string, readonly string[]>> | undefined): void => {
    for (const [tool, list] of Object.entries(from ?? {})) {
      const have = Object.hasOwn(pointers, tool) ? (pointers[tool] as string[]) : [];
      // defineProperty: a tool named __proto__ is a tool like any other.
      Object.defineProperty(pointers, tool, { value: [...new Set([...have, ...list])], enumerable: true, writable: true, configurable: true });
    }
  };
  add(audit?.redact ? audit.redact.pointers : undefined);
  add(fromPolicy);
  return { ...audit, redact: { ...(audit?.redact || {}), pointers } };
}

/**
 * Refuses a policy swap that changes what the audit log redacts: the writer's redaction is fixed
 * when the pipeline is made, so such a change needs a restart rather than a silent half-application.
 */
export function checkSameRedaction(current: Policy, next: Policy): void {
  const redactOf = (p: Policy): string => canonicalJson((isCompiledPolicy(p) ? (p.document.redact ?? {}) : {}) as JsonObject);
  if (redactOf(current) !== redactOf(next)) {
    throw new ToolEnvelopeError('invalid-option', 'the new policy redacts other values than the one in force (redact): that change needs a restart');
  }
}
