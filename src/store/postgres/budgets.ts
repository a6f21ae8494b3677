/**
 * The budget table on PostgreSQL (migration 7): one upsert per charge, several in one transaction
 * (see ../budgets.ts). The upsert is exact under concurrency from any number of processes:
 * INSERT ... ON CONFLICT DO UPDATE locks the row and evaluates its WHERE on the latest version.
 */
import type pg from 'pg';
import { type BudgetCharge, type BudgetTable, checkCharges, inKeyOrder } from '../budgets.js';
import { storeFailure } from '../guards.js';

/** Runs one statement with the store's checks and typed failures (the store's `q`). */
type Query = (what: string, text: string, values?: unknown[]) => Promise<pg.QueryResult>;

/** As SQLite's (sqlite/budgets.ts): counts unless the current window is full; an ended window starts over. */
const TAKE_SQL = `INSERT INTO budget_counts AS b (key, window_end, count) SELECT $1, $2, 1 FROM relaxed
ON CONFLICT (key) DO UPDATE SET
  count = CASE WHEN b.window_end < EXCLUDED.window_end THEN 1 ELSE b.count + 1 END,
  window_end = GREATEST(b.window_end, EXCLUDED.window_end)
WHERE b.window_end < EXCLUDED.window_end OR b.count < $3
RETURNING count`;

/**
 * The statement's own transaction commits without waiting for its WAL flush (`synchronous_commit`
 * off for this transaction only, set in the statement so it stays one round trip): a wait of the
 * server's fsync per call (3.3 ms on the bench's host) for a count whose loss, should the server
 * itself crash, grants at most the calls of its last few hundred milliseconds again. Visibility and
 * the row lock are unchanged, so the count stays exact under concurrency.
 */
const RELAXED = `WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', true))\n`;
const TAKE_ONE_SQL = RELAXED + TAKE_SQL;
const TAKE_IN_TX_SQL = TAKE_SQL.replace(' FROM relaxed', '');

/**
 * The table over the store's pool: `q` for one statement, `connect` (with the store's open check)
 * for the transaction of several charges.
 */
export function postgresBudgets(q: Query, connect: () => Promise<pg.PoolClient>): BudgetTable {
  return {
    async take(charges) {
      checkCharges(charges);
      if (charges.length === 0) return -1;
      if (charges.length === 1) {
        const c = charges[0] as BudgetCharge;
        const r = await q('budget take', TAKE_ONE_SQL, [c.key, c.windowEnd, c.limit]);
        return r.rowCount === 1 ? -1 : 0;
      }
      const client = await connect();
      try {
        await client.query('BEGIN');
        await client.query('SET LOCAL synchronous_commit TO OFF');
        for (const [i, c] of inKeyOrder(charges)) {
          const r = await client.query(TAKE_IN_TX_SQL, [c.key, c.windowEnd, c.limit]);
          if (r.rowCount !== 1) {
            await client.query('ROLLBACK');
            return i;
          }
        }
        await client.query('COMMIT');
        return -1;
      } catch (e) {
        await client.query('ROLLBACK').catch(() => {});
        throw storeFailure('postgres budget take failed', e);
      } finally {
        client.release();
      }
    },
    async sweep(now) {
      const r = await q('budget sweep', 'DELETE FROM budget_counts WHERE window_end <= $1', [now]);
      return r.rowCount ?? 0;
    },
  };
}
