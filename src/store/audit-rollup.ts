/**
 * The audit rollup: the histogram's counts kept per minute, tenant, tool, status, category and
 * latency bin by the database itself as rows are inserted and deleted (triggers, so the audit
 * writer thread, the store's own commits, retention and any other writer keep it alike), so that
 * the console's stats over a window read a few thousand rows instead of every record in it.
 * Exact: a `started` row counts (as `interrupted`) only while no outcome of its id exists, as the
 * filter of query.ts says; inserting the outcome takes it back out, deleting the outcome puts it
 * back. The tenant is the one of tenant.ts, computed once per row on write ('' for none); a
 * category of '' is none. Replays count like other records, as the row scan counts them.
 */
import { type HistogramCell, latencyBinSql } from './audit-histogram.js';
import { tenantSql } from './tenant.js';
import type { AuditFilter, AuditStatus } from './types.js';

/** The rollup's bucket: a histogram whose buckets and window edges are whole minutes reads it. */
export const ROLLUP_MS = 60_000;

type Dialect = 'sqlite' | 'postgres';
const KEY = 'minute, tenant, tool, status, category, bin';

/** The rollup key's values of the audit row named `t`, in {@link KEY}'s order. */
function cellOf(dialect: Dialect, t: string): string {
  const minute = dialect === 'sqlite' ? `${t}.started_at / ${ROLLUP_MS}` : `FLOOR(${t}.started_at::float8 / ${ROLLUP_MS})::bigint`;
  return `${minute}, COALESCE(${tenantSql(dialect, `${t}.body`)}, ''), ${t}.tool, ${t}.status, COALESCE(${t}.category, ''), ${latencyBinSql(dialect, `${t}.latency_ms`)}`;
}

/** True for a row `t` that a record of its id completes (a completed id is unique: index audit_id). */
const completed = (t: string): string => `EXISTS (SELECT 1 FROM audit c WHERE c.id = ${t}.id AND c.status <> 'started')`;

const upsert = (dialect: Dialect, select: string): string =>
  `INSERT INTO audit_rollup AS r (${KEY}, n) ${select} ON CONFLICT (${KEY}) DO UPDATE SET n = r.n + ${dialect === 'sqlite' ? 'excluded' : 'EXCLUDED'}.n;`;

const TABLE = (dialect: Dialect): string => `CREATE TABLE audit_rollup (
  minute ${dialect === 'sqlite' ? 'INTEGER' : 'BIGINT'} NOT NULL,
  tenant TEXT NOT NULL,
  tool TEXT NOT NULL,
  status TEXT NOT NULL,
  category TEXT NOT NULL,
  bin INTEGER NOT NULL,
  n ${dialect === 'sqlite' ? 'INTEGER' : 'BIGINT'} NOT NULL,
  PRIMARY KEY (${KEY})
)${dialect === 'sqlite' ? ' WITHOUT ROWID' : ''};`;

/**
 * The SQLite migration: the table, its backfill and the row triggers. Each inserted or deleted row
 * is one upsert (two when an outcome meets its started row), in the writer's own transaction.
 */
export function sqliteRollupMigration(): string {
  const cell = (t: string): string => cellOf('sqlite', t);
  return `${TABLE('sqlite')}
${backfill('sqlite')}
CREATE TRIGGER audit_rollup_started AFTER INSERT ON audit WHEN NEW.status = 'started' BEGIN
  ${upsert('sqlite', `SELECT ${cell('NEW')}, 1 WHERE NOT ${completed('NEW')}`)}
END;
CREATE TRIGGER audit_rollup_outcome AFTER INSERT ON audit WHEN NEW.status <> 'started' BEGIN
  ${upsert('sqlite', `SELECT ${cell('NEW')}, 1 WHERE true`)}
  ${upsert('sqlite', `SELECT ${cell('s')}, -1 FROM audit s WHERE s.id = NEW.id AND s.status = 'started'`)}
END;
CREATE TRIGGER audit_rollup_started_gone AFTER DELETE ON audit WHEN OLD.status = 'started' BEGIN
  ${upsert('sqlite', `SELECT ${cell('OLD')}, -1 WHERE NOT ${completed('OLD')}`)}
END;
CREATE TRIGGER audit_rollup_outcome_gone AFTER DELETE ON audit WHEN OLD.status <> 'started' BEGIN
  ${upsert('sqlite', `SELECT ${cell('OLD')}, -1 WHERE true`)}
  ${upsert('sqlite', `SELECT ${cell('s')}, 1 FROM audit s WHERE s.id = OLD.id AND s.status = 'started'`)}
END;
`;
}

/** The rollup of the records already there (the migration's backfill). */
function backfill(dialect: Dialect): string {
  return `INSERT INTO audit_rollup (${KEY}, n) SELECT ${KEY}, COUNT(*) FROM (SELECT ${cellColumns(dialect, 'audit')} FROM audit WHERE audit.status <> 'started' OR NOT ${completed('audit')}) d GROUP BY ${KEY};`;
}

/** {@link cellOf} with each value named as its rollup column. */
function cellColumns(dialect: Dialect, t: string): string {
  const names = KEY.split(', ');
  return splitTop(cellOf(dialect, t))
    .map((e, i) => `${e} AS ${names[i]}`)
    .join(', ');
}

/** Splits a list of SQL expressions at its top-level commas. */
function splitTop(sql: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < sql.length; i++) {
    const ch = sql[i];
    if (ch === "'") quoted = !quoted;
    else if (quoted) continue;
    else if (ch === '(') depth++;
    else if (ch === ')') depth--;
    else if (ch === ',' && depth === 0) {
      out.push(sql.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(sql.slice(start).trim());
  return out;
}

/**
 * The PostgreSQL migration: the table, its backfill and statement triggers that read the
 * statement's rows (transition tables), so a batch insert is one grouped upsert. A transaction that
 * changes the rollup first takes a lock of the schema's rollup until it ends: a batch is several
 * insert statements, and two batches upserting the same keys in different statement orders would
 * otherwise deadlock (concurrent commits mostly share their keys, the current minute's, so they
 * waited on each other's row locks already).
 */
export function postgresRollupMigration(): string {
  const cell = (t: string): string => cellColumns('postgres', t);
  const apply = (deltas: string): string =>
    `PERFORM pg_advisory_xact_lock(hashtext(TG_TABLE_SCHEMA), hashtext('audit_rollup'));
  ${upsert('postgres', `SELECT ${KEY}, SUM(n) FROM (${deltas}) d GROUP BY ${KEY} ORDER BY ${KEY}`)}`;
  return `${TABLE('postgres')}
${backfill('postgres')}
CREATE FUNCTION audit_rollup_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  ${apply(`SELECT ${cell('a')}, 1 AS n FROM added a WHERE a.status <> 'started' OR NOT ${completed('a')}
    UNION ALL SELECT ${cell('s')}, -1 FROM audit s WHERE s.status = 'started'
      AND s.id IN (SELECT id FROM added WHERE status <> 'started') AND s.seq NOT IN (SELECT seq FROM added)`)}
  RETURN NULL;
END $$;
CREATE TRIGGER audit_rollup_added AFTER INSERT ON audit REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION audit_rollup_added();
CREATE FUNCTION audit_rollup_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  ${apply(`SELECT ${cell('o')}, -1 AS n FROM removed o WHERE o.status <> 'started'
      OR (NOT ${completed('o')} AND NOT EXISTS (SELECT 1 FROM removed c WHERE c.id = o.id AND c.status <> 'started'))
    UNION ALL SELECT ${cell('s')}, 1 FROM audit s WHERE s.status = 'started' AND s.id IN (SELECT id FROM removed WHERE status <> 'started')`)}
  RETURN NULL;
END $$;
CREATE TRIGGER audit_rollup_removed AFTER DELETE ON audit REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION audit_rollup_removed();
`;
}

/** A histogram read from the rollup: its SQL (placeholders `ph(n)`) and the parts of the window left to the row scan. */
export interface RollupPlan {
  sql: string;
  params: unknown[];
  /** The window's partial minutes at either end, to count from the rows. */
  edges: AuditFilter[];
}

/**
 * How the rollup answers a histogram, or undefined when it cannot exactly (a filter on anything
 * but the window, tenant, tool, status and category; buckets not whole minutes; a window under two
 * minutes, which the row scan counts as fast).
 */
export function rollupPlan(dialect: Dialect, filter: AuditFilter, bucketMs: number, ph: (n: number) => string): RollupPlan | undefined {
  const { since, until } = filter;
  if (filter.sessionId !== undefined || filter.runId !== undefined || filter.toolCallId !== undefined || filter.replay !== undefined) return undefined;
  if (bucketMs % ROLLUP_MS !== 0 || bucketMs <= 0 || since === undefined || since < 0) return undefined;
  const first = Math.ceil(since / ROLLUP_MS);
  const end = until === undefined ? undefined : Math.floor(until / ROLLUP_MS);
  if (end !== undefined && end - first < 2) return undefined;
  const params: unknown[] = [];
  const add = (v: unknown): string => {
    params.push(v);
    return ph(params.length);
  };
  const per = bucketMs / ROLLUP_MS;
  const bucket = dialect === 'sqlite' ? `minute / ${per}` : `FLOOR(minute::float8 / ${per})::bigint`;
  const parts = [`minute >= ${add(first)}`];
  if (end !== undefined) parts.push(`minute < ${add(end)}`);
  const inList = (column: string, values: readonly unknown[] | undefined): void => {
    if (values !== undefined) parts.push(values.length === 0 ? '1=0' : `${column} IN (${values.map(add).join(', ')})`);
  };
  const list = <T>(v: T | T[] | undefined): T[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);
  if (filter.tenant !== undefined) parts.push(`tenant = ${add(filter.tenant ?? '')}`);
  inList('tool', list(filter.tool));
  // As query.ts reads a status filter: `interrupted` is a started row (kept only while no outcome completes it), `started` matches nothing.
  const statuses = list<AuditStatus>(filter.status);
  inList(
    'status',
    statuses?.filter((s) => s !== 'started').map((s) => (s === 'interrupted' ? 'started' : s)),
  );
  inList('category', list(filter.category));
  const sql = `SELECT ${bucket} AS bucket, tool, status, NULLIF(category, '') AS category, bin, SUM(n) AS n FROM audit_rollup WHERE ${parts.join(' AND ')} GROUP BY 1, 2, 3, 4, 5 HAVING SUM(n) <> 0`;
  const edges: AuditFilter[] = [];
  if (since < first * ROLLUP_MS) edges.push({ ...filter, until: first * ROLLUP_MS });
  if (end !== undefined && until! > end * ROLLUP_MS) edges.push({ ...filter, since: end * ROLLUP_MS });
  return { sql, params, edges };
}

/** Cells of the same key added together (the rollup's and its edges'). */
export function mergeCells(parts: readonly HistogramCell[][]): HistogramCell[] {
  const cells = new Map<string, HistogramCell>();
  for (const part of parts)
    for (const c of part) {
      const key = `${c.bucket}\u0000${c.tool}\u0000${c.status}\u0000${c.category}\u0000${c.bin}`;
      const had = cells.get(key);
      if (had) had.count += c.count;
      else cells.set(key, { ...c });
    }
  return [...cells.values()];
}
