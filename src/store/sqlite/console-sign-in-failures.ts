/** The console's failed sign-ins on SQLite (migration 13), on the store's own connection. */
import type Database from 'better-sqlite3';
import { checkSignInFailure, type ConsoleSignInFailureTable } from '../console-sign-in-failures.js';
import { tableGuard } from '../guards.js';

// Within the running window one more; past its end a new window (SET reads the row as it was).
const FAIL_SQL = `INSERT INTO console_sign_in_failures (address, window_end, failures) VALUES (@address, @windowEnd, 1)
ON CONFLICT (address) DO UPDATE SET
  failures = CASE WHEN window_end <= @now THEN 1 ELSE failures + 1 END,
  window_end = CASE WHEN window_end <= @now THEN excluded.window_end ELSE window_end END
RETURNING failures`;

/** The table over one open connection; `check` throws when the store is closed. */
export function sqliteConsoleSignInFailures(db: Database.Database, check: () => void): ConsoleSignInFailureTable {
  let stmts: { count: Database.Statement; purge: Database.Statement; fail: Database.Statement } | undefined;
  // Prepared on first use: a store without a console pays nothing at open.
  const prepared = () =>
    (stmts ??= {
      count: db.prepare('SELECT failures FROM console_sign_in_failures WHERE address = ? AND window_end > ?').pluck(),
      purge: db.prepare('DELETE FROM console_sign_in_failures WHERE window_end <= ? AND address <> ?'),
      fail: db.prepare(FAIL_SQL).pluck(),
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
            return Number(s.fail.get({ address, now, windowEnd }));
          })
          .immediate();
      });
    },
  };
}
