/**
 * Logic shared by the store drivers: filter → SQL, row ↔ record mapping, cursors, stats.
 */
import { randomFillSync } from 'node:crypto';
import { ToolEnvelopeError } from '../core/index.js';
import { OUTCOME_STATUSES, encodeContextosResult, toolError, type ErrorCategory, type JsonObject, type ToolOutcome } from '../core/index.js';
import { isPlainJsonContainer } from '../core/json.js';
import type {
  ApprovalRequest,
  AuditStatus,
  AuditFilter,
  AuditListResult,
  AuditPage,
  AuditRecord,
  IdempotencyRecord,
  RetentionOptions,
  ToolAuditStats,
} from './types.js';

/**
 * Page size of a listing when none is given.
 *
 * @example
 * ```ts
 * pageLimit(undefined) === DEFAULT_PAGE; // true
 * ```
 */
export const DEFAULT_PAGE = 100;

/**
 * The largest page a listing returns.
 *
 * @example
 * ```ts
 * pageLimit(1e9) === MAX_PAGE; // true
 * ```
 */
export const MAX_PAGE = 10_000;

/**
 * Clamps a page size to `1..MAX_PAGE`.
 *
 * @example
 * ```ts
 * pageLimit(undefined); // 100
 * ```
 */
export function pageLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE;
  if (!Number.isInteger(limit) || limit < 1) throw new ToolEnvelopeError('invalid-option', `limit must be a positive integer, got ${String(limit)}`);
  return Math.min(limit, MAX_PAGE);
}

/**
 * Encodes a position (sequence number) as an opaque cursor.
 *
 * @example
 * ```ts
 * decodeCursor(encodeCursor(42)); // 42
 * ```
 */
export function encodeCursor(seq: number): string {
  return `s${seq.toString(36)}`;
}

/**
 * Decodes a cursor made by {@link encodeCursor}; throws `invalid-option` for anything else.
 *
 * @example
 * ```ts
 * decodeCursor('s16'); // 42
 * ```
 */
export function decodeCursor(cursor: string | null | undefined): number | undefined {
  if (cursor === undefined || cursor === null || cursor === '') return undefined;
  if (!/^s[0-9a-z]{1,12}$/.test(cursor)) throw new ToolEnvelopeError('invalid-option', `invalid cursor: ${JSON.stringify(cursor).slice(0, 80)}`);
  return parseInt(cursor.slice(1), 36);
}

/**
 * The statuses a read audit record can have: the outcome statuses and `interrupted` (a started
 * record that no outcome completed).
 *
 * @example
 * ```ts
 * AUDIT_STATUSES.includes('interrupted'); // true
 * ```
 */
export const AUDIT_STATUSES: readonly AuditStatus[] = [...OUTCOME_STATUSES, 'interrupted'];

/**
 * SQL true for a `started` row that a record of the same id completed (the outer table is `audit`).
 * Uses the partial unique index on the ids of completed records.
 */
const COMPLETED = "EXISTS (SELECT 1 FROM audit c WHERE c.id = audit.id AND c.status <> 'started')";

/**
 * SQL of a lookup by audit id (placeholder `ph`): the record that completed a started one when
 * there is one, else the started record. Each branch goes through one partial unique index.
 *
 * @example
 * ```ts
 * db.prepare(auditByIdSql('?')).get(id, id);
 * ```
 */
export function auditByIdSql(ph1: string, ph2: string): string {
  return `SELECT * FROM (SELECT * FROM audit WHERE id = ${ph1} AND status <> 'started' UNION ALL SELECT * FROM audit WHERE id = ${ph2} AND status = 'started') u ORDER BY (status = 'started') LIMIT 1`;
}

function asList<T>(v: T | T[] | undefined): T[] | undefined {
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v : [v];
}

/**
 * Builds a SQL `WHERE` clause (without the keyword; `'1=1'` when empty) for an audit filter.
 * `ph(n)` renders the n-th placeholder (`?` for SQLite, `$n` for PostgreSQL). With `callKey`, a
 * `toolCallId` filter also matches the indexed `call_key` column (see {@link toolCallKey}).
 *
 * @example
 * ```ts
 * auditWhere({ tool: 'a' }, () => '?'); // { sql: 'tool IN (?)', params: ['a'] }
 * ```
 */
export function auditWhere(
  filter: AuditFilter,
  ph: (n: number) => string,
  startIndex = 1,
  callKey?: (toolCallId: string) => number,
): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  const add = (v: unknown): string => {
    params.push(v);
    return ph(startIndex + params.length - 1);
  };
  const inList = (column: string, values: readonly unknown[] | undefined): void => {
    if (values === undefined) return;
    if (values.length === 0) parts.push('1=0');
    else parts.push(`${column} IN (${values.map(add).join(', ')})`);
  };
  inList('tool', asList(filter.tool));
  // A started row stands for its call only until an outcome completes it (then it is hidden),
  // and reads as `interrupted`.
  const statuses = asList(filter.status);
  if (statuses === undefined) parts.push(`(status <> 'started' OR NOT ${COMPLETED})`);
  else {
    const ended = statuses.filter((s) => s !== 'interrupted' && s !== 'started');
    const alternatives: string[] = [];
    if (ended.length > 0) alternatives.push(`status IN (${ended.map(add).join(', ')})`);
    if (statuses.includes('interrupted')) alternatives.push(`(status = 'started' AND NOT ${COMPLETED})`);
    parts.push(alternatives.length === 0 ? '1=0' : alternatives.length === 1 ? (alternatives[0] as string) : `(${alternatives.join(' OR ')})`);
  }
  inList('category', asList(filter.category));
  if (filter.sessionId !== undefined) parts.push(`session_id = ${add(filter.sessionId)}`);
  if (filter.runId !== undefined) parts.push(`run_id = ${add(filter.runId)}`);
  if (filter.toolCallId !== undefined && callKey) parts.push(`call_key = ${add(callKey(filter.toolCallId))}`);
  if (filter.toolCallId !== undefined) parts.push(`tool_call_id = ${add(filter.toolCallId)}`);
  if (filter.since !== undefined) parts.push(`started_at >= ${add(filter.since)}`);
  if (filter.until !== undefined) parts.push(`started_at < ${add(filter.until)}`);
  return { sql: parts.length ? parts.join(' AND ') : '1=1', params };
}

/**
 * A 32-bit hash (FNV-1a over UTF-16 code units) of a tool call id. SQLite indexes this rather
 * than the id itself: tool call ids are random (UUIDs), so every insert lands at a random place
 * in the index, and a small integer key dirties several times fewer pages per commit than a
 * 36-character string. Lookups compare the id too, so collisions only cost a row read.
 *
 * @example
 * ```ts
 * toolCallKey('c1') === toolCallKey('c1'); // true, a signed 32-bit integer
 * ```
 */
export function toolCallKey(toolCallId: unknown): number {
  if (typeof toolCallId !== 'string') return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < toolCallId.length; i++) {
    h ^= toolCallId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}

/**
 * True when a record matches a filter (the memory store's version of {@link auditWhere}).
 *
 * @example
 * ```ts
 * matchesAudit(record, { status: 'ok' });
 * ```
 */
export function matchesAudit(r: AuditRecord, f: AuditFilter): boolean {
  const inList = <T>(v: T, list: T[] | undefined): boolean => list === undefined || list.includes(v);
  return (
    inList(r.tool, asList(f.tool)) &&
    inList(r.status, asList(f.status)) &&
    (asList(f.category) === undefined || (r.category !== null && inList(r.category, asList(f.category)))) &&
    (f.sessionId === undefined || r.sessionId === f.sessionId) &&
    (f.runId === undefined || r.runId === f.runId) &&
    (f.toolCallId === undefined || r.toolCallId === f.toolCallId) &&
    (f.since === undefined || r.startedAt >= f.since) &&
    (f.until === undefined || r.startedAt < f.until)
  );
}

/**
 * The audit table's columns, in insert order (the order of {@link auditRowValues}). The query
 * columns are separate; the five JSON documents of a record (call envelope, result envelope,
 * outcome, principal chain, policy decision) are one JSON array in `body` (schema version 2):
 * one serialisation, one value to bind and copy instead of five.
 *
 * @example
 * ```ts
 * `INSERT INTO audit (${AUDIT_COLUMNS.join(', ')}) VALUES (...)`;
 * ```
 */
export const AUDIT_COLUMNS = [
  'id',
  'tool',
  'status',
  'category',
  'error_code',
  'tool_call_id',
  'run_id',
  'trace_id',
  'session_id',
  'started_at',
  'ended_at',
  'latency_ms',
  'idempotency_key',
  'replay',
  'approval_id',
  'body',
] as const;

function json(value: unknown, what: string): string {
  try {
    const text = JSON.stringify(value);
    if (typeof text !== 'string') throw new Error('not JSON');
    return text;
  } catch (e) {
    throw new ToolEnvelopeError('not-json-safe', `audit ${what} is not JSON-serialisable: ${(e as Error).message}`, { cause: e });
  }
}

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
 *
 * @example
 * ```ts
 * const values = auditRowValues(record, (b) => (b ? 1 : 0));
 * ```
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

const frozenBodies = new WeakMap<AuditRecord, string>();

/**
 * The `body` text of a record: the one it was frozen with, else serialised now (and kept).
 *
 * @example
 * ```ts
 * auditBodyText(record).includes('"password"');
 * ```
 */
export function auditBodyText(r: AuditRecord): string {
  let body = frozenBodies.get(r);
  if (body === undefined) {
    body = auditBody(r);
    frozenBodies.set(r, body);
  }
  return body;
}

const isDocument = (v: unknown): boolean => typeof v === 'object' && v !== null;

/** Body flags (its sixth element): the principal chain is the call envelope's `principal_chain`. */
const SAME_CHAIN = 1;
/** Body flags: the outcome's `result` is the result envelope's `output`. */
const SAME_RESULT = 2;

// Shared only when JSON.stringify writes the object as it is (the one plain-JSON check, core/json.ts).
const plainForJson = (v: unknown): v is Record<string, unknown> => isPlainJsonContainer(v);

/**
 * The `body` text of a record: `[callEnvelope, resultEnvelope, outcome, principalChain, policyDecision]`
 * as one JSON array, made by one `JSON.stringify` (a flat string, nothing to concatenate).
 *
 * A document the record holds twice is written once: the governed runtime's call envelope carries
 * the principal chain itself, and its result envelope's `output` is the outcome's `result`. When
 * they are the same objects, the chain is written as `0` and the outcome's `result` as `0` (keeping
 * its place among the outcome's keys), and a sixth element says so ({@link documentsOf} puts them
 * back). Bodies of five elements (as written before) read as they always did.
 */
function auditBody(r: AuditRecord): string {
  const frozen = frozenBodies.get(r);
  if (frozen !== undefined) return frozen;
  const decision = r.policyDecision ?? null;
  const call = r.callEnvelope;
  const res = r.resultEnvelope;
  let chain: unknown = r.principalChain;
  let outcome: unknown = r.outcome;
  if (isDocument(call) && isDocument(res) && isDocument(outcome) && isDocument(chain)) {
    let flags = 0;
    // Same objects serialise to the same text (no toJSON, which would be told which key it is under).
    if (plainForJson(call) && call.principal_chain === chain && Array.isArray(chain) && plainForJson(chain)) {
      chain = 0;
      flags |= SAME_CHAIN;
    }
    const result = (outcome as { result?: unknown }).result;
    if (plainForJson(res) && plainForJson(outcome) && plainForJson(result) && res.output === result) {
      outcome = { ...outcome, result: 0 };
      flags |= SAME_RESULT;
    }
    try {
      const redaction = r.redaction ?? null;
      if (redaction !== null) return JSON.stringify([call, res, outcome, chain, decision, flags, redaction]);
      return JSON.stringify(flags === 0 ? [call, res, outcome, chain, decision] : [call, res, outcome, chain, decision, flags]);
    } catch {
      // Fall through: serialise field by field to say which one is at fault.
    }
  }
  return `[${json(r.callEnvelope, 'callEnvelope')},${json(r.resultEnvelope, 'resultEnvelope')},${json(r.outcome, 'outcome')},${json(
    r.principalChain,
    'principalChain',
  )},${decision === null ? 'null' : json(decision, 'policyDecision')}${r.redaction ? `,0,${json(r.redaction, 'redaction')}` : ''}]`;
}

/**
 * Serialises a record's JSON fields now and keeps the text with it, so that what gets stored
 * is the record as it is at this moment (later changes to the objects it references are not
 * recorded) and nothing is serialised twice. Throws `not-json-safe` for a value JSON cannot hold.
 *
 * @example
 * ```ts
 * freezeAuditRecord(record); // then the caller may keep mutating `record.outcome` safely
 * ```
 */
export function freezeAuditRecord(r: AuditRecord): AuditRecord {
  frozenBodies.set(r, auditBody(r));
  return r;
}

/**
 * A deep copy of a record through its JSON text (the form a database would give back).
 *
 * @example
 * ```ts
 * const copy = copyAuditRecord(record);
 * ```
 */
export function copyAuditRecord(r: AuditRecord): AuditRecord {
  const body = auditBody(r);
  const { seq: _seq, ...plain } = r;
  return {
    ...(JSON.parse(
      JSON.stringify({ ...plain, callEnvelope: null, resultEnvelope: null, outcome: null, principalChain: null, policyDecision: null }),
    ) as AuditRecord),
    ...documentsOf(body),
  };
}

/**
 * The five documents of a record (and its redaction note) from its `body` text.
 *
 * @example
 * ```ts
 * const { callEnvelope } = documentsOf(row.body);
 * ```
 */
export function documentsOf(
  body: unknown,
): Pick<AuditRecord, 'callEnvelope' | 'resultEnvelope' | 'outcome' | 'principalChain' | 'policyDecision'> & { redaction?: AuditRecord['redaction'] } {
  const [callEnvelope, resultEnvelope, outcome, chain, policyDecision, flags, redaction] = parsed<unknown[]>(body) as [
    JsonObject,
    JsonObject,
    JsonObject,
    AuditRecord['principalChain'] | 0,
    AuditRecord['policyDecision'],
    number | undefined,
    AuditRecord['redaction'] | undefined,
  ];
  // Documents written once (see auditBody) are shared again, as they were when recorded.
  const principalChain =
    flags !== undefined && flags & SAME_CHAIN
      ? (callEnvelope.principal_chain as unknown as AuditRecord['principalChain'])
      : (chain as AuditRecord['principalChain']);
  if (flags !== undefined && flags & SAME_RESULT) outcome.result = resultEnvelope.output as JsonObject;
  const docs = { callEnvelope, resultEnvelope, outcome, principalChain, policyDecision: policyDecision ?? null };
  return redaction ? { ...docs, redaction } : docs;
}

function parsed<T>(v: unknown): T {
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}

/**
 * Turns a database row (column names as in {@link AUDIT_COLUMNS} plus `seq`) into a record.
 *
 * @example
 * ```ts
 * const record = auditFromRow(row);
 * ```
 */
export function auditFromRow(row: Record<string, unknown>): AuditRecord {
  return {
    id: row.id as string,
    seq: Number(row.seq),
    tool: row.tool as string,
    // Queries return a started row only while nothing completed it.
    status: row.status === 'started' ? 'interrupted' : (row.status as AuditStatus),
    category: (row.category ?? null) as ErrorCategory | null,
    errorCode: (row.error_code ?? null) as string | null,
    toolCallId: row.tool_call_id as string,
    runId: row.run_id as string,
    traceId: row.trace_id as string,
    sessionId: (row.session_id ?? null) as string | null,
    startedAt: Number(row.started_at),
    endedAt: Number(row.ended_at),
    latencyMs: Number(row.latency_ms),
    idempotencyKey: (row.idempotency_key ?? null) as string | null,
    replay: row.replay === true || row.replay === 1,
    approvalId: (row.approval_id ?? null) as string | null,
    ...documentsOf(row.body),
  };
}

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

/**
 * Turns column values in {@link AUDIT_COLUMNS} order (as made by {@link auditRowValues}) back into a record.
 *
 * @example
 * ```ts
 * auditFromValues(auditRowValues(record, (b) => b)); // equal to record
 * ```
 */
export function auditFromValues(values: readonly unknown[]): AuditRecord {
  const row = Object.fromEntries(AUDIT_COLUMNS.map((c, i) => [c, values[i]]));
  const { seq: _seq, ...record } = auditFromRow(row);
  return record;
}

/**
 * Turns an idempotency row into a record.
 *
 * @example
 * ```ts
 * const rec = idempotencyFromRow(row);
 * ```
 */
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

/**
 * The approvals table's columns, in insert order (the order of {@link approvalRowValues}).
 *
 * @example
 * ```ts
 * `INSERT INTO approvals (${APPROVAL_COLUMNS.join(', ')}) VALUES (...)`;
 * ```
 */
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

/**
 * Validates an approval request and turns it into column values in {@link APPROVAL_COLUMNS} order.
 *
 * @example
 * ```ts
 * const values = approvalRowValues(request);
 * ```
 */
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

/**
 * Turns an approvals row into a request.
 *
 * @example
 * ```ts
 * const req = approvalFromRow(row);
 * ```
 */
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

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] as number;
}

/**
 * Computes per-tool stats from `(tool, status, category, replay, latencyMs)` tuples.
 *
 * @example
 * ```ts
 * computeStats([{ tool: 'a', status: 'ok', category: null, replay: false, latencyMs: 3 }]);
 * ```
 */
export function computeStats(
  rows: Iterable<{ tool: string; status: AuditStatus; category: ErrorCategory | null; replay: boolean; latencyMs: number }>,
): ToolAuditStats[] {
  const byTool = new Map<string, { stats: ToolAuditStats; latencies: number[] }>();
  for (const r of rows) {
    let entry = byTool.get(r.tool);
    if (!entry) {
      entry = {
        stats: { tool: r.tool, count: 0, byStatus: {}, byCategory: {}, replays: 0, latencyMs: { min: 0, max: 0, mean: 0, p50: 0, p95: 0, p99: 0 } },
        latencies: [],
      };
      byTool.set(r.tool, entry);
    }
    const s = entry.stats;
    s.count++;
    const status: AuditStatus = r.status === 'started' ? 'interrupted' : r.status;
    s.byStatus[status] = (s.byStatus[status] ?? 0) + 1;
    if (r.category !== null) s.byCategory[r.category] = (s.byCategory[r.category] ?? 0) + 1;
    if (r.replay) s.replays++;
    entry.latencies.push(r.latencyMs);
  }
  const out: ToolAuditStats[] = [];
  for (const { stats, latencies } of byTool.values()) {
    latencies.sort((a, b) => a - b);
    const sum = latencies.reduce((a, b) => a + b, 0);
    stats.latencyMs = {
      min: latencies[0] ?? 0,
      max: latencies[latencies.length - 1] ?? 0,
      mean: latencies.length ? sum / latencies.length : 0,
      p50: percentile(latencies, 50),
      p95: percentile(latencies, 95),
      p99: percentile(latencies, 99),
    };
    out.push(stats);
  }
  return out.sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
}

/**
 * Throws `closed` when a store is used after `close()`.
 *
 * @example
 * ```ts
 * assertOpen(this.closed, 'sqlite store');
 * ```
 */
export function assertOpen(closed: boolean, what: string): void {
  if (closed) throw new ToolEnvelopeError('closed', `${what} is closed`);
}

/**
 * Wraps a driver error as `ToolEnvelopeError('store-failure')` (library errors pass through).
 *
 * @example
 * ```ts
 * try { db.exec(sql); } catch (e) { throw storeFailure('migration failed', e); }
 * ```
 */
export function storeFailure(message: string, cause: unknown): ToolEnvelopeError {
  if (cause instanceof ToolEnvelopeError) return cause;
  return new ToolEnvelopeError('store-failure', `${message}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
}

/**
 * Runs `prune` on open and then periodically (unref'd timer) when retention options are given.
 * Returns a function that stops the timer.
 *
 * @example
 * ```ts
 * const stop = startRetention(store, { maxAgeMs: 86_400_000 });
 * ```
 */
export function startRetention(store: { prune(options?: RetentionOptions): Promise<unknown> }, retention: RetentionOptions | undefined): () => void {
  if (!retention || (retention.maxAgeMs === undefined && retention.maxRecords === undefined && retention.idempotencyMaxAgeMs === undefined)) {
    return () => {};
  }
  // A failed background prune must not crash the host; the next round retries.
  const run = (): void => void store.prune(retention).catch(() => {});
  run();
  const timer = setInterval(run, retention.intervalMs ?? 60_000);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Iterates every matching audit record, oldest first, through `listAudit` pages.
 *
 * @example
 * ```ts
 * for await (const r of iterateByPages(store, {}, 500)) console.log(r.id);
 * ```
 */
export async function* iterateByPages(
  store: { listAudit(filter?: AuditFilter, page?: AuditPage): Promise<AuditListResult> },
  filter: AuditFilter,
  batchSize: number,
): AsyncIterable<AuditRecord> {
  let cursor: string | null = null;
  do {
    const page: AuditListResult = await store.listAudit(filter, { limit: batchSize, cursor, order: 'asc' });
    yield* page.records;
    cursor = page.nextCursor;
  } while (cursor);
}

let idCounter = 0;
let idMs = 0;
let idPrefix = '';
// Two hex digits per byte, looked up: several times cheaper than Buffer#toString('hex') and
// number formatting for every id (an id is made for every call recorded).
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
// One crypto call per 1 024 ids instead of one per id.
const RANDOM_POOL = Buffer.allocUnsafe(4096);
let randomPos = RANDOM_POOL.length;

/**
 * A fresh audit record id that sorts by creation time (`aud_` + 12 hex digits of epoch ms +
 * 4 of a per-millisecond counter + 8 random), so that index inserts append instead of
 * landing at random places in the B-tree.
 *
 * @example
 * ```ts
 * newAuditId(); // 'aud_019ad3f1c2a40000a1b2c3d4'
 * ```
 */
export function newAuditId(): string {
  const now = Date.now();
  if (now !== idMs) {
    idMs = now;
    idCounter = 0;
    idPrefix = `aud_${now.toString(16).padStart(12, '0')}`;
  }
  const n = idCounter++ & 0xffff;
  if (randomPos + 4 > RANDOM_POOL.length) {
    randomFillSync(RANDOM_POOL);
    randomPos = 0;
  }
  const r = randomPos;
  randomPos += 4;
  const pool = RANDOM_POOL;
  return `${idPrefix}${HEX[n >> 8]}${HEX[n & 0xff]}${HEX[pool[r]!]}${HEX[pool[r + 1]!]}${HEX[pool[r + 2]!]}${HEX[pool[r + 3]!]}`;
}
