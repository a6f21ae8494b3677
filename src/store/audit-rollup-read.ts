/**
 * A histogram read from the audit rollup (audit-rollup.ts), exact and current: one statement (one
 * snapshot) that adds together the rollup's cells of the window's whole minutes (the records up to
 * its mark), the records above the mark in those minutes counted from the table (taking back the
 * started records up to the mark that one of them completes), and the window's partial minutes at
 * either end counted from the table. The part above the mark is what the catch-up has not folded
 * yet: small while it keeps up, and never wrong when it does not.
 */
import { latencyBinSql } from './audit-histogram.js';
import { type Dialect, ROLLUP_MS } from './audit-rollup.js';
import { auditWhere } from './query.js';
import { tenantSql } from './tenant.js';
import type { AuditFilter, AuditStatus } from './types.js';

const MARK = '(SELECT rolled_up_to FROM audit_rollup_state)';

/**
 * Above this many sequence numbers past the mark (a rollup the catch-up has not caught up with: a
 * store that has just had it added, or no console reading it), a histogram is read by the plain
 * scan: adding up the part above the mark costs about what the scan does, and the scan's plan is
 * the better one for a large part.
 */
export const TAIL_READ_MAX = 200_000;

/** The sequence numbers past the rollup's mark (an upper bound of the records there). */
export const TAIL_SQL = 'SELECT (SELECT COALESCE(MAX(seq), 0) FROM audit) - rolled_up_to AS tail FROM audit_rollup_state';

const asList = <T>(v: T | T[] | undefined): T[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);

/**
 * The SQL and parameters (placeholders `ph(n)`) of a histogram read through the rollup, or
 * undefined when the rollup cannot answer it exactly: a filter on anything but the window, tenant,
 * tool, status and category, buckets that are not whole minutes, a window without a start or of
 * under a whole minute. Rows are {@link cellFromRow}'s.
 */
export function rollupReadSql(
  dialect: Dialect,
  filter: AuditFilter,
  bucketMs: number,
  ph: (n: number) => string,
): { sql: string; params: unknown[] } | undefined {
  const { since, until } = filter;
  if (filter.sessionId !== undefined || filter.runId !== undefined || filter.toolCallId !== undefined || filter.replay !== undefined) return undefined;
  if (!Number.isInteger(bucketMs) || bucketMs <= 0 || bucketMs % ROLLUP_MS !== 0 || since === undefined || since < 0) return undefined;
  const first = Math.ceil(since / ROLLUP_MS);
  const end = until === undefined ? undefined : Math.floor(until / ROLLUP_MS);
  if (end !== undefined && end <= first) return undefined;
  const params: unknown[] = [];
  const add = (v: unknown): string => {
    params.push(v);
    return ph(params.length);
  };
  const per = bucketMs / ROLLUP_MS;
  const sqlite = dialect === 'sqlite';
  const rowBucket = sqlite ? `started_at / ${bucketMs}` : `FLOOR(started_at::float8 / ${bucketMs})::bigint`;
  const rowCell = (n: number): string =>
    `SELECT ${rowBucket} AS bucket, tool, status, COALESCE(category, '') AS category, ${latencyBinSql(dialect, 'latency_ms')} AS bin, ${n} AS n FROM audit`;
  const middle: AuditFilter = { ...filter, since: first * ROLLUP_MS, ...(end !== undefined && { until: end * ROLLUP_MS }) };
  // auditWhere numbers its placeholders from where the statement has got to.
  const scanWhere = (f: AuditFilter): string => {
    const w = auditWhere(f, ph, params.length + 1);
    params.push(...w.params);
    return w.sql;
  };
  const statuses = asList<AuditStatus>(filter.status);
  const parts: string[] = [];

  // The rollup: a started record no outcome completed is stored as `started`, as the table has it.
  const kept: string[] = [`minute >= ${add(first)}`];
  if (end !== undefined) kept.push(`minute < ${add(end)}`);
  const inList = (into: string[], column: string, values: readonly unknown[] | undefined): void => {
    if (values !== undefined) into.push(values.length === 0 ? '1=0' : `${column} IN (${values.map(add).join(', ')})`);
  };
  if (filter.tenant !== undefined) kept.push(`tenant = ${add(filter.tenant ?? '')}`);
  inList(kept, 'tool', asList(filter.tool));
  inList(
    kept,
    'status',
    statuses?.filter((s) => s !== 'started').map((s) => (s === 'interrupted' ? 'started' : s)),
  );
  inList(kept, 'category', asList(filter.category));
  const minuteBucket = sqlite ? `minute / ${per}` : `FLOOR(minute::float8 / ${per})::bigint`;
  parts.push(`SELECT ${minuteBucket} AS bucket, tool, status, category, bin, n FROM audit_rollup WHERE ${kept.join(' AND ')}`);

  // The records above the mark in the whole minutes.
  parts.push(`${rowCell(1)} WHERE seq > ${MARK} AND ${scanWhere(middle)}`);

  // The started records up to the mark (counted there as interrupted) that an outcome above it completes.
  if (statuses === undefined || statuses.includes('interrupted')) {
    const taken: string[] = [`status = 'started'`, `seq <= ${MARK}`, `started_at >= ${add(middle.since)}`];
    if (middle.until !== undefined) taken.push(`started_at < ${add(middle.until)}`);
    inList(taken, 'tool', asList(filter.tool));
    inList(taken, 'category', asList(filter.category));
    if (filter.tenant !== undefined) taken.push(filter.tenant === null ? `${tenantSql(dialect)} IS NULL` : `${tenantSql(dialect)} = ${add(filter.tenant)}`);
    taken.push(`id IN (SELECT o.id FROM audit o WHERE o.seq > ${MARK} AND o.status <> 'started')`);
    parts.push(`${rowCell(-1)} WHERE ${taken.join(' AND ')}`);
  }

  // The partial minutes at the window's edges, from the table.
  if (since < first * ROLLUP_MS) parts.push(`${rowCell(1)} WHERE ${scanWhere({ ...filter, until: first * ROLLUP_MS })}`);
  if (end !== undefined && until! > end * ROLLUP_MS) parts.push(`${rowCell(1)} WHERE ${scanWhere({ ...filter, since: end * ROLLUP_MS })}`);

  const sql = `SELECT bucket, tool, status, NULLIF(category, '') AS category, bin, SUM(n) AS n FROM (${parts.join('\nUNION ALL ')}) u
 GROUP BY 1, 2, 3, 4, 5 HAVING SUM(n) <> 0`;
  return { sql, params };
}
