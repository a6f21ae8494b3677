/**
 * Row mapping: audit, idempotency and approval records to column values (validated) and database
 * rows back to records, shared by the SQLite and PostgreSQL stores.
 */
import { ToolEnvelopeError, type ErrorCategory, type JsonObject } from 'tool-envelope/core';
import { AUDIT_COLUMNS } from './audit-columns.js';
import { auditBody, documentsOf } from './audit-body.js';
import { jsonColumn as json, parsedColumn as parsed } from './json-column.js';
import type { ApprovalRequest, AuditRecord, AuditStatus, IdempotencyRecord } from './types.js';

// Imported here from audit-columns.ts; the console's live test still reads it from here.
export { AUDIT_COLUMNS };

function requireString(v: unknown, what: string): string {
  if (typeof v !== 'string' || v === '') throw new ToolEnvelopeError('invalid-option', `${what} must be a non-empty string`);
  return v;
}

function requireTime(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ToolEnvelopeError('invalid-option', `${what} must be a finite number`);
  return v;
}

/**
 * Validates a record and turns it into column values in {@link AUDIT_COLUMNS} order.
 * `replay` is rendered by `bool` (1/0 for SQLite, true/false for PostgreSQL).
 */
export function auditRowValues(r: AuditRecord, bool: (b: boolean) => unknown): unknown[] {
  const body = auditBody(r);
  return [
    requireString(r.id, 'audit id'),
    requireString(r.tool, 'audit tool'),
    requireString(r.status, 'audit status'),
    r.category ?? null,
    r.errorCode ?? null,
    r.toolCallId,
    r.runId,
    r.traceId,
    r.sessionId ?? null,
    requireTime(r.startedAt, 'startedAt'),
    requireTime(r.endedAt, 'endedAt'),
    requireTime(r.latencyMs, 'latencyMs'),
    r.idempotencyKey ?? null,
    bool(r.replay === true),
    r.approvalId ?? null,
    body,
  ];
}

/** Turns a database row (column names as in {@link AUDIT_COLUMNS} plus `seq`) into a record. */
export function auditFromRow(row: Record<string, unknown>): AuditRecord {
  const tool = row.tool as string;
  const toolCallId = row.tool_call_id as string;
  const runId = row.run_id as string;
  const traceId = row.trace_id as string;
  const sessionId = (row.session_id ?? null) as string | null;
  return {
    id: row.id as string,
    seq: Number(row.seq),
    tool,
    // Queries return a started row only while nothing completed it.
    status: row.status === 'started' ? 'interrupted' : (row.status as AuditStatus),
    category: (row.category ?? null) as ErrorCategory | null,
    errorCode: (row.error_code ?? null) as string | null,
    toolCallId,
    runId,
    traceId,
    sessionId,
    startedAt: Number(row.started_at),
    endedAt: Number(row.ended_at),
    latencyMs: Number(row.latency_ms),
    idempotencyKey: (row.idempotency_key ?? null) as string | null,
    replay: row.replay === true || row.replay === 1,
    approvalId: (row.approval_id ?? null) as string | null,
    // A started row's result envelope and outcome follow from these columns (see started-record.ts).
    ...documentsOf(row.body, { tool, toolCallId, runId, traceId, sessionId }),
  };
}

/** Turns column values in {@link AUDIT_COLUMNS} order (as made by {@link auditRowValues}) back into a record. */
export function auditFromValues(values: readonly unknown[]): AuditRecord {
  const row = Object.fromEntries(AUDIT_COLUMNS.map((c, i) => [c, values[i]]));
  const { seq: _seq, ...record } = auditFromRow(row);
  return record;
}

/** Turns an idempotency row into a record. */
export function idempotencyFromRow(row: Record<string, unknown>): IdempotencyRecord {
  return {
    key: row.key as string,
    fingerprint: row.fingerprint as string,
    tool: row.tool as string,
    toolCallId: row.tool_call_id as string,
    state: row.state as IdempotencyRecord['state'],
    claimToken: row.claim_token as string,
    createdAt: Number(row.created_at),
    completedAt: row.completed_at === null || row.completed_at === undefined ? null : Number(row.completed_at),
    outcome: row.outcome === null || row.outcome === undefined ? null : parsed<JsonObject>(row.outcome),
  };
}

/** The approvals table's columns, in insert order (the order of {@link approvalRowValues}). */
export const APPROVAL_COLUMNS = [
  'id',
  'state',
  'tool',
  'tool_call_id',
  'run_id',
  'session_id',
  'call_envelope',
  'principal_chain',
  'policy_decision',
  'reason',
  'created_at',
  'expires_at',
  'decided_at',
  'decided_by',
  'decision_reason',
  'outcome',
  'request_signature',
  'decision_signature',
] as const;

/** Validates an approval request and turns it into column values in {@link APPROVAL_COLUMNS} order. */
export function approvalRowValues(a: ApprovalRequest): unknown[] {
  return [
    requireString(a.id, 'approval id'),
    a.state,
    requireString(a.tool, 'approval tool'),
    a.toolCallId,
    a.runId,
    a.sessionId ?? null,
    json(a.callEnvelope, 'callEnvelope'),
    json(a.principalChain, 'principalChain'),
    a.policyDecision === null ? null : json(a.policyDecision, 'policyDecision'),
    a.reason,
    requireTime(a.createdAt, 'createdAt'),
    a.expiresAt,
    a.decidedAt,
    a.decidedBy,
    a.decisionReason,
    a.outcome === null ? null : json(a.outcome, 'outcome'),
    a.requestSignature ?? null,
    a.decisionSignature ?? null,
  ];
}

/** Turns an approvals row into a request. */
export function approvalFromRow(row: Record<string, unknown>): ApprovalRequest {
  const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return {
    id: row.id as string,
    state: row.state as ApprovalRequest['state'],
    tool: row.tool as string,
    toolCallId: row.tool_call_id as string,
    runId: row.run_id as string,
    sessionId: (row.session_id ?? null) as string | null,
    callEnvelope: parsed(row.call_envelope),
    principalChain: parsed(row.principal_chain),
    policyDecision: row.policy_decision === null || row.policy_decision === undefined ? null : parsed(row.policy_decision),
    reason: row.reason as string,
    createdAt: Number(row.created_at),
    expiresAt: num(row.expires_at),
    decidedAt: num(row.decided_at),
    decidedBy: (row.decided_by ?? null) as string | null,
    decisionReason: (row.decision_reason ?? null) as string | null,
    outcome: row.outcome === null || row.outcome === undefined ? null : parsed<JsonObject>(row.outcome),
    // Absent rather than null when unsigned, as a request created without them reads back.
    ...(typeof row.request_signature === 'string' && { requestSignature: row.request_signature }),
    ...(typeof row.decision_signature === 'string' && { decisionSignature: row.decision_signature }),
  };
}
