/**
 * Reading the audit log: page sizes and cursors, the statuses a read record can have, the SQL of
 * a filter (SQLite and PostgreSQL) and its in-memory equivalent, and paging through everything.
 */
import { OUTCOME_STATUSES, ToolEnvelopeError } from 'tool-envelope/core';
import { tenantOfChain, tenantSql } from './tenant.js';
import type { AuditFilter, AuditListResult, AuditPage, AuditRecord, AuditStatus } from './types.js';

/** Page size of a listing when none is given. */
export const DEFAULT_PAGE = 100;

/** The largest page a listing returns. */
export const MAX_PAGE = 10_000;

/** Clamps a page size to `1..MAX_PAGE`. */
export function pageLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE;
  if (!Number.isInteger(limit) || limit < 1) throw new ToolEnvelopeError('invalid-option', `limit must be a positive integer, got ${String(limit)}`);
  return Math.min(limit, MAX_PAGE);
}

/** Encodes a position (sequence number) as an opaque cursor. */
export function encodeCursor(seq: number): string {
  return `s${seq.toString(36)}`;
}

/** Decodes a cursor made by {@link encodeCursor}; throws `invalid-option` for anything else. */
export function decodeCursor(cursor: string | null | undefined): number | undefined {
  if (cursor === undefined || cursor === null || cursor === '') return undefined;
  if (!/^s[0-9a-z]{1,12}$/.test(cursor)) throw new ToolEnvelopeError('invalid-option', `invalid cursor: ${JSON.stringify(cursor).slice(0, 80)}`);
  return parseInt(cursor.slice(1), 36);
}

/**
 * The statuses a read audit record can have: the outcome statuses and `interrupted` (a started
 * record that no outcome completed).
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
 * `ph(n)` renders the n-th placeholder (`?` for SQLite, `$n` for PostgreSQL). With `callKeys`, a
 * `toolCallId` filter also matches the indexed `call_key` column (see {@link toolCallKeys}).
 */
export function auditWhere(
  filter: AuditFilter,
  ph: (n: number) => string,
  startIndex = 1,
  callKeys?: (toolCallId: string) => readonly number[],
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
  if (filter.toolCallId !== undefined && callKeys) inList('call_key', callKeys(filter.toolCallId));
  if (filter.toolCallId !== undefined) parts.push(`tool_call_id = ${add(filter.toolCallId)}`);
  // A literal, not a parameter: SQLite stores 0/1 and cannot bind a boolean, PostgreSQL a BOOLEAN; `IS TRUE` reads both.
  if (filter.replay !== undefined) parts.push(filter.replay ? 'replay IS TRUE' : 'replay IS NOT TRUE');
  if (filter.since !== undefined) parts.push(`started_at >= ${add(filter.since)}`);
  if (filter.until !== undefined) parts.push(`started_at < ${add(filter.until)}`);
  // Last, so the cheaper conditions above rule a row out before its chain is parsed. SQLite's placeholders are all '?'.
  if (filter.tenant !== undefined) {
    const tenant = tenantSql(ph(1) === '?' ? 'sqlite' : 'postgres');
    parts.push(filter.tenant === null ? `${tenant} IS NULL` : `${tenant} = ${add(filter.tenant)}`);
  }
  return { sql: parts.length ? parts.join(' AND ') : '1=1', params };
}

/** UUIDv7 (RFC 9562): 48 bits of Unix milliseconds first, then version 7, then the variant. */
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
/** Where ordered keys start: above every 32-bit hash, and ordered keys stay below 2^53. */
const ORDERED_KEYS = 2 ** 32;

/** FNV-1a over UTF-16 code units, as a signed 32-bit integer. */
function fnv1a(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}

/**
 * The indexed integer key of a tool call id. SQLite indexes this rather than the id itself, and
 * lookups compare the id too, so keys that collide only cost a row read. A time-ordered id (a
 * UUIDv7, as the gateway makes) gets a key in the order of its time: 2^32 + its 48 milliseconds
 * bits times 16 + one random digit. Its row then joins the index at its end, where the commit
 * before it wrote, instead of dirtying one more 16 KiB page of a random place in the index per
 * row (about half of what each small commit wrote to the WAL). Other ids get a 32-bit hash
 * (FNV-1a), which is also what every id got before ordered keys (see {@link toolCallKeys}).
 * Pays for `gateway (audit commit)`; the hash alone is the reference (`useReferenceCallKeys`).
 */
export function toolCallKey(toolCallId: unknown): number {
  if (typeof toolCallId !== 'string') return 0;
  return (orderedKeys ? orderedKey(toolCallId) : undefined) ?? fnv1a(toolCallId);
}

/** The time-ordered key of a UUIDv7; undefined for any other id. */
function orderedKey(id: string): number | undefined {
  if (id.length !== 36 || !UUID_V7.test(id)) return undefined;
  const ms = Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
  return ORDERED_KEYS + ms * 16 + Number.parseInt(id.charAt(15), 16);
}

/**
 * The keys under which a tool call id's rows may be indexed: for a time-ordered id its ordered
 * key and its hash, the key of rows stored before ordered keys or under the reference (the key is
 * part of what the audit chain signs, so rows keep theirs); for any other id its hash.
 */
export function toolCallKeys(toolCallId: string): number[] {
  const hash = fnv1a(toolCallId);
  const ordered = orderedKey(toolCallId);
  return ordered === undefined ? [hash] : [ordered, hash];
}

let orderedKeys = true;

/**
 * Makes {@link toolCallKey} hash every id (the plain reference of ordered keys), or back; for
 * tests and benchmarks. Lookups find rows stored either way.
 */
export function useReferenceCallKeys(on: boolean): void {
  orderedKeys = !on;
}

/** True when a record matches a filter (the memory store's version of {@link auditWhere}). */
export function matchesAudit(r: AuditRecord, f: AuditFilter): boolean {
  const inList = <T>(v: T, list: T[] | undefined): boolean => list === undefined || list.includes(v);
  return (
    inList(r.tool, asList(f.tool)) &&
    inList(r.status, asList(f.status)) &&
    (asList(f.category) === undefined || (r.category !== null && inList(r.category, asList(f.category)))) &&
    (f.sessionId === undefined || r.sessionId === f.sessionId) &&
    (f.runId === undefined || r.runId === f.runId) &&
    (f.toolCallId === undefined || r.toolCallId === f.toolCallId) &&
    (f.replay === undefined || (r.replay === true) === f.replay) &&
    (f.since === undefined || r.startedAt >= f.since) &&
    (f.until === undefined || r.startedAt < f.until) &&
    (f.tenant === undefined || tenantOfChain(r.principalChain) === f.tenant)
  );
}

/** Iterates every matching audit record, oldest first, through `listAudit` pages. */
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
