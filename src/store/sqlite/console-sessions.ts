/** The console-session table on SQLite (migration 11), on the store's own connection. */
import type Database from 'better-sqlite3';
import { CONSOLE_SESSION_COLUMNS, consoleSessionFromRow, consoleSessionValues, type ConsoleSessionTable, sessionEnded } from '../console-sessions.js';
import { tableGuard } from '../guards.js';

/** The table over one open connection; `check` throws when the store is closed. */
export function sqliteConsoleSessions(db: Database.Database, check: () => void): ConsoleSessionTable {
  let stmts: { insert: Database.Statement; purge: Database.Statement; get: Database.Statement; touch: Database.Statement; end: Database.Statement } | undefined;
  // Prepared on first use: a store whose console nobody signs in to pays nothing at open.
  const prepared = () =>
    (stmts ??= {
      insert: db.prepare(`INSERT INTO console_sessions (${CONSOLE_SESSION_COLUMNS.join(', ')}) VALUES (${CONSOLE_SESSION_COLUMNS.map(() => '?').join(', ')})`),
      purge: db.prepare('DELETE FROM console_sessions WHERE idle_until <= ? OR expires_at <= ?'),
      get: db.prepare('SELECT * FROM console_sessions WHERE id_hash = ?'),
      touch: db.prepare('UPDATE console_sessions SET last_seen_at = ?, idle_until = ? WHERE id_hash = ?'),
      end: db.prepare('DELETE FROM console_sessions WHERE id_hash = ?'),
    });
  const guard = tableGuard(check, 'sqlite console session');
  return {
    async create(record) {
      const values = consoleSessionValues(record);
      guard('create', () => {
        const s = prepared();
        db.transaction(() => {
          s.purge.run(record.createdAt, record.createdAt);
          s.insert.run(...values);
        }).immediate();
      });
    },
    async get(idHash, now) {
      const row = guard('get', () => prepared().get.get(idHash) as Record<string, unknown> | undefined);
      if (!row) return undefined;
      const r = consoleSessionFromRow(row);
      if (!sessionEnded(r, now)) return r;
      guard('end', () => prepared().end.run(idHash));
      return undefined;
    },
    async touch(idHash, at, idleUntil) {
      guard('touch', () => prepared().touch.run(at, idleUntil, idHash));
    },
    async end(idHash) {
      return guard('end', () => prepared().end.run(idHash).changes > 0);
    },
  };
}
