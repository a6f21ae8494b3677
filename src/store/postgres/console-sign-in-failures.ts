/**
 * The console's failed sign-ins on PostgreSQL (migration 14): one table for every replica's console.
 * The upsert is exact under concurrency: INSERT ... ON CONFLICT DO UPDATE locks the row and
 * evaluates its SET on the latest version.
 */
import type pg from 'pg';
import { checkSignInFailure, type ConsoleSignInFailureTable, MAX_SIGN_IN_ADDRESSES } from '../console-sign-in-failures.js';

/** Runs one statement with the store's checks and typed failures (the store's `q`). */
type Query = (what: string, text: string, values?: unknown[]) => Promise<pg.QueryResult>;

// On the way, rows no other statement holds go (SKIP LOCKED: two replicas purging at once never
// wait on, or deadlock with, each other): a bounded batch of other addresses' ended windows, and,
// for a new address, those past the $4 whose windows end last. Statements running at once each
// see the table as it was when they started, so it may pass the bound by as many rows as there are
// concurrent new addresses; the next new address brings it back.
const FAIL_SQL = `WITH gone AS (
  DELETE FROM console_sign_in_failures WHERE address IN (
    SELECT address FROM console_sign_in_failures WHERE window_end <= $2 AND address <> $1 LIMIT 100 FOR UPDATE SKIP LOCKED
  ) OR address IN (
    SELECT address FROM console_sign_in_failures WHERE NOT EXISTS (SELECT 1 FROM console_sign_in_failures WHERE address = $1)
    ORDER BY window_end DESC OFFSET $4 FOR UPDATE SKIP LOCKED
  )
)
INSERT INTO console_sign_in_failures AS f (address, window_end, failures) VALUES ($1, $3, 1)
ON CONFLICT (address) DO UPDATE SET
  failures = CASE WHEN f.window_end <= $2 THEN 1 ELSE f.failures + 1 END,
  window_end = CASE WHEN f.window_end <= $2 THEN EXCLUDED.window_end ELSE f.window_end END
RETURNING failures`;

const FORGIVE_SQL = `UPDATE console_sign_in_failures SET failures = GREATEST(failures - 1, 0)
WHERE address = $1 AND window_end > $2 RETURNING failures`;

/** The table over the store's pool; at most `max` rows (see FAIL_SQL for concurrent new addresses). */
export function postgresConsoleSignInFailures(q: Query, max = MAX_SIGN_IN_ADDRESSES): ConsoleSignInFailureTable {
  return {
    async count(address, now) {
      checkSignInFailure(address, now);
      const r = await q('console sign-in failure count', 'SELECT failures FROM console_sign_in_failures WHERE address = $1 AND window_end > $2', [
        address,
        now,
      ]);
      return Number(r.rows[0]?.failures ?? 0);
    },
    async fail(address, now, windowEnd) {
      checkSignInFailure(address, now, windowEnd);
      const r = await q('console sign-in failure fail', FAIL_SQL, [address, now, windowEnd, max - 1]);
      return Number(r.rows[0]?.failures);
    },
    async forgive(address, now) {
      checkSignInFailure(address, now);
      const r = await q('console sign-in failure forgive', FORGIVE_SQL, [address, now]);
      return Number(r.rows[0]?.failures ?? 0);
    },
  };
}
