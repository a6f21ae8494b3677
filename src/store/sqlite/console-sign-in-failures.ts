/** The console's failed sign-ins on SQLite (migration 13), on the store's own connection. */
import type Database from 'better-sqlite3';
import { checkSignInFailure, type ConsoleSignInFailureTable, MAX_SIGN_IN_ADDRESSES } from '../console-sign-in-failures.js';
import { tableGuard } from '../guards.js';

// Within the running window one more; past its end a new window (SET reads the row as it was).
const FAIL_SQL = `INSERT INTO console_sign_in_failures (address, window_end, failures) VALUES (@address, @windowEnd, 1)
ON CONFLICT (address) DO UPDATE SET
  failures = CASE WHEN window_end <= @now THEN 1 ELSE failures + 1 END,
  window_end = CASE WHEN window_end <= @now THEN excluded.window_end ELSE window_end END
RETURNING failures`;

// Room for a new address: the rows past the `keep` whose windows end last go.
const TRIM_SQL = `DELETE FROM console_sign_in_failures WHERE address IN (
  SELECT address FROM console_sign_in_failures ORDER BY window_end DESC LIMIT -1 OFFSET ?
)`;

/**
 * The table over one open connection; `check` throws when the store is closed; at most `max` rows
 * (exact across connections: a failure's statements run in one immediate transaction, one writer at a time).
 */
export function sqliteConsoleSignInFailures(db: Database.Database, check: () => void, max = MAX_SIGN_IN_ADDRESSES): ConsoleSignInFailureTable {
  let stmts:
    | {
        count: Database.Statement;
        purge: Database.Statement;
        has: Database.Statement;
        trim: Database.Statement;
        fail: Database.Statement;
        forgive: Database.Statement;
      }
    | undefined;
  // Prepared on first use: a store without a console pays nothing at open.
  const prepared = () =>
    (stmts ??= {
      count: db.prepare('SELECT failures FROM console_sign_in_failures WHERE address = ? AND window_end > ?').pluck(),
      purge: db.prepare('DELETE FROM console_sign_in_failures WHERE window_end <= ? AND address <> ?'),
      has: db.prepare('SELECT 1 FROM console_sign_in_failures WHERE address = ?').pluck(),
      trim: db.prepare(TRIM_SQL),
      fail: db.prepare(FAIL_SQL).pluck(),
      forgive: db
        .prepare('UPDATE console_sign_in_failures SET failures = MAX(failures - 1, 0) WHERE address = ? AND window_end > ? RETURNING failures')
        .pluck(),
    });
  const guard = tableGuard(check, 'sqlite console sign-in failure');
  return {
    async count(address, now) {
      checkSignInFailure(address, now);
      return guard('count', () => Number(prepared().count.get(address, now) ?? 0));
    },
    async fail(address, now, windowEnd) {
      checkSignInFailure(address, now, windowEnd);
      return guard('fail', () => {
        const s = prepared();
        return db
          .transaction(() => {
            s.purge.run(now, address);
            if (s.has.get(address) === undefined) s.trim.run(max - 1);
            return Number(s.fail.get({ address, now, windowEnd }));
          })
          .immediate();
      });
    },
    async forgive(address, now) {
      checkSignInFailure(address, now);
      return guard('forgive', () => Number(prepared().forgive.get(address, now) ?? 0));
    },
  };
}
