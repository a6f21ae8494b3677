/** The console's OpenID Connect flows on SQLite (migration 12), on the store's own connection. */
import type Database from 'better-sqlite3';
import { CONSOLE_OIDC_FLOW_COLUMNS, type ConsoleOidcFlowTable, sqlOidcFlows } from '../console-oidc-flows.js';
import { tableGuard } from '../guards.js';

/** The table over one open connection; `check` throws when the store is closed; at most `max` rows. */
export function sqliteConsoleOidcFlows(db: Database.Database, check: () => void, max?: number): ConsoleOidcFlowTable {
  let stmts: { insert: Database.Statement; purge: Database.Statement; trim: Database.Statement; take: Database.Statement } | undefined;
  // Prepared on first use: a store whose console has no OpenID Connect pays nothing at open.
  const prepared = () =>
    (stmts ??= {
      insert: db.prepare(`INSERT INTO console_oidc_flows (${CONSOLE_OIDC_FLOW_COLUMNS.join(', ')}) VALUES (?, ?, ?, ?)`),
      purge: db.prepare('DELETE FROM console_oidc_flows WHERE expires_at <= ?'),
      trim: db.prepare(
        'DELETE FROM console_oidc_flows WHERE key_hash IN (SELECT key_hash FROM console_oidc_flows ORDER BY expires_at DESC, key_hash LIMIT -1 OFFSET ?)',
      ),
      // One statement: of two connections taking the same row, one gets it.
      take: db.prepare('DELETE FROM console_oidc_flows WHERE key_hash = ? RETURNING *'),
    });
  const guard = tableGuard(check, 'sqlite console OIDC flow');
  return sqlOidcFlows(
    {
      put: (values, keep) =>
        guard('put', () => {
          const s = prepared();
          db.transaction(() => {
            s.purge.run(values[2]);
            s.trim.run(keep);
            s.insert.run(...values);
          }).immediate();
        }),
      take: (keyHash) => guard('take', () => prepared().take.get(keyHash) as Record<string, unknown> | undefined),
    },
    max,
  );
}
