/**
 * The audit rollup: the histogram's counts per minute, tenant, tool, status, category and latency
 * bin of every record up to a sequence number, its high-water mark `rolled_up_to`. Nothing on the
 * write path keeps it: a catch-up folds the records above the mark into it in bounded chunks,
 * later and elsewhere (the console's stats), and readers add the records above the mark from the
 * table itself (audit-rollup-read.ts), so what they get is exact whatever the mark.
 *
 * What the rollup counts of the records up to mark M is what a scan of those records alone would
 * count: every outcome, and every `started` record that no outcome up to M completes (as
 * `interrupted`). Folding (M, M'] therefore adds the records in it (a started one only when no
 * outcome up to M' completes it) and takes back the started records up to M whose outcome is in
 * it. The tenant is tenant.ts's, computed once when a record is folded ('' for none); a category
 * of '' is none.
 */
import { latencyBinSql } from './audit-histogram.js';
import { tenantSql } from './tenant.js';

/** The rollup's bucket: a histogram whose buckets and window edges are whole minutes reads it. */
export const ROLLUP_MS = 60_000;

export type Dialect = 'sqlite' | 'postgres';

/** The rollup's key columns. */
export const ROLLUP_KEY = 'minute, tenant, tool, status, category, bin';

/**
 * The audit rows a fold or prune reads. On PostgreSQL each with its body parsed once (`j.b`): the
 * tenant's rule reads the stored `json` text four times or more otherwise, most of a fold's time.
 * `OFFSET 0` keeps the parse a per-row subquery instead of an expression repeated where it is used.
 */
const ROWS = (dialect: Dialect): string => (dialect === 'sqlite' ? 'audit' : 'audit CROSS JOIN LATERAL (SELECT audit.body::jsonb AS b OFFSET 0) j');

/** The key values of the `audit` row in scope (of {@link ROWS}), named as the rollup's columns. */
export function rollupCell(dialect: Dialect): string {
  const minute = dialect === 'sqlite' ? `CAST(started_at / ${ROLLUP_MS} AS INTEGER)` : `FLOOR(started_at::float8 / ${ROLLUP_MS})::bigint`;
  const tenant = dialect === 'sqlite' ? tenantSql(dialect) : tenantSql(dialect, 'j.b', 'jsonb');
  return `${minute} AS minute, COALESCE(${tenant}, '') AS tenant, tool, status, COALESCE(category, '') AS category, ${latencyBinSql(dialect, 'latency_ms')} AS bin`;
}

/** The rollup's tables (a migration; the catch-up fills them, from seq 0). */
export function rollupMigration(dialect: Dialect): string {
  const int = dialect === 'sqlite' ? 'INTEGER' : 'BIGINT';
  return `CREATE TABLE audit_rollup (
  minute ${int} NOT NULL,
  tenant TEXT NOT NULL,
  tool TEXT NOT NULL,
  status TEXT NOT NULL,
  category TEXT NOT NULL,
  bin INTEGER NOT NULL,
  n ${int} NOT NULL,
  PRIMARY KEY (${ROLLUP_KEY})
)${dialect === 'sqlite' ? ' WITHOUT ROWID' : ''};
CREATE TABLE audit_rollup_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  rolled_up_to ${int} NOT NULL,
  epoch ${int} NOT NULL,
  frontier_seq ${int} NOT NULL,
  frontier_at ${int} NOT NULL
);
INSERT INTO audit_rollup_state (id, rolled_up_to, epoch, frontier_seq, frontier_at) VALUES (1, 0, 0, 0, 0);
`;
}

/** A started row in scope that an outcome with `seq <= upTo` completes. */
const completedBy = (upTo: string): string => `EXISTS (SELECT 1 FROM audit c WHERE c.id = audit.id AND c.status <> 'started' AND c.seq <= ${upTo})`;

/**
 * The rows of {@link ROWS} matching `where` that the rollup counts of the records up to `upTo`:
 * outcomes, and started records no outcome up to `upTo` completes. PostgreSQL may otherwise answer
 * the completion by hashing every outcome up to `upTo` for each chunk; a lateral lookup with a
 * limit is one probe of the index of outcome ids per started record.
 */
function counted(dialect: Dialect, where: string, upTo: string, n: number): string {
  const cell = rollupCell(dialect);
  if (dialect === 'sqlite') return `SELECT ${cell}, ${n} AS n FROM ${ROWS(dialect)} WHERE ${where} AND (status <> 'started' OR NOT ${completedBy(upTo)})`;
  return `SELECT ${cell}, ${n} AS n FROM ${ROWS(dialect)} WHERE ${where} AND status <> 'started'
UNION ALL SELECT ${cell}, ${n} AS n FROM ${ROWS(dialect)}
  LEFT JOIN LATERAL (SELECT 1 AS done FROM audit c WHERE c.id = audit.id AND c.status <> 'started' AND c.seq <= ${upTo} LIMIT 1) k ON true
  WHERE ${where} AND status = 'started' AND k.done IS NULL`;
}

/** Groups signed rows `(key..., n)` by key. */
const grouped = (rows: string): string => `SELECT ${ROLLUP_KEY}, SUM(n) AS n FROM (${rows}) d GROUP BY ${ROLLUP_KEY}`;

/**
 * The rollup's change when the records with `from < seq <= to` are folded in (`from`, `to`: SQL
 * placeholders or literals), grouped by key.
 */
export function foldDeltaSql(dialect: Dialect, from: string, to: string): string {
  const cell = rollupCell(dialect);
  return grouped(`${counted(dialect, `seq > ${from} AND seq <= ${to}`, to, 1)}
UNION ALL SELECT ${cell}, -1 AS n FROM ${ROWS(dialect)} WHERE status = 'started' AND seq <= ${from}
  AND id IN (SELECT o.id FROM audit o WHERE o.seq > ${from} AND o.seq <= ${to} AND o.status <> 'started')`);
}

/**
 * The rollup's change when the records matching `gone` (a condition on the row in scope, the
 * retention's) are deleted: those it counts go, and a started record that stays counts again when
 * the outcome completing it goes. Records above the mark are not in it. `gone` names its columns
 * unqualified, so in the subquery they are the outcome's.
 */
export function pruneDeltaSql(dialect: Dialect, gone: string): string {
  const cell = rollupCell(dialect);
  const mark = '(SELECT rolled_up_to FROM audit_rollup_state)';
  return grouped(`${counted(dialect, `(${gone}) AND seq <= ${mark}`, mark, -1)}
UNION ALL SELECT ${cell}, 1 AS n FROM ${ROWS(dialect)} WHERE status = 'started' AND seq <= ${mark} AND NOT (${gone})
  AND id IN (SELECT o.id FROM audit o WHERE (${gone}) AND o.seq <= ${mark} AND o.status <> 'started')`);
}

/** Adds grouped rows of {@link foldDeltaSql} or {@link pruneDeltaSql} to the rollup. */
export function applyDeltaSql(dialect: Dialect, delta: string): string {
  // SQLite reads `ON` after a bare SELECT's FROM as a join's: the WHERE ends the SELECT.
  return `INSERT INTO audit_rollup AS r (${ROLLUP_KEY}, n) SELECT ${ROLLUP_KEY}, n FROM (${delta}) g WHERE true
 ON CONFLICT (${ROLLUP_KEY}) DO UPDATE SET n = r.n + ${dialect === 'sqlite' ? 'excluded' : 'EXCLUDED'}.n`;
}

/** Cells a prune brought to zero, at or before the last minute it touched (`upTo`). */
export const DROP_EMPTY_SQL = (upTo: string): string => `DELETE FROM audit_rollup WHERE minute <= ${upTo} AND n = 0`;

/** A number inlined into SQL (retention's bounds), refused unless finite. */
export function sqlNumber(n: number): string {
  if (!Number.isFinite(n)) throw new RangeError(`not a finite number: ${n}`);
  return String(n);
}

export type { AuditRollupStep } from './types.js';

/** Records per catch-up step (one transaction) when none is given. */
export const ROLLUP_CHUNK = 20_000;
