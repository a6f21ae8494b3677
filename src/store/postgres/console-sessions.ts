/** The console-session table on PostgreSQL (migration 12): one table for every replica's console. */
import type pg from 'pg';
import { CONSOLE_SESSION_COLUMNS, consoleSessionFromRow, consoleSessionValues, type ConsoleSessionTable } from '../console-sessions.js';

/** Runs one statement with the store's checks and typed failures (the store's `q`). */
type Query = (what: string, text: string, values?: unknown[]) => Promise<pg.QueryResult>;

const CREATE_SQL = `WITH ended AS (DELETE FROM console_sessions WHERE idle_until <= $3 OR expires_at <= $3)
INSERT INTO console_sessions (${CONSOLE_SESSION_COLUMNS.join(', ')}) VALUES (${CONSOLE_SESSION_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`;

// A live row is read; an ended one is deleted by the same statement (and reads as absent).
const GET_SQL = `WITH ended AS (DELETE FROM console_sessions WHERE id_hash = $1 AND (idle_until <= $2 OR expires_at <= $2))
SELECT * FROM console_sessions WHERE id_hash = $1 AND idle_until > $2 AND expires_at > $2`;

/** The table over the store's pool. */
export function postgresConsoleSessions(q: Query): ConsoleSessionTable {
  return {
    async create(record) {
      await q('console session create', CREATE_SQL, consoleSessionValues(record));
    },
    async get(idHash, now) {
      const r = await q('console session get', GET_SQL, [idHash, now]);
      return r.rows[0] ? consoleSessionFromRow(r.rows[0] as Record<string, unknown>) : undefined;
    },
    async touch(idHash, at, idleUntil) {
      await q('console session touch', 'UPDATE console_sessions SET last_seen_at = $1, idle_until = $2 WHERE id_hash = $3', [at, idleUntil, idHash]);
    },
    async end(idHash) {
      const r = await q('console session end', 'DELETE FROM console_sessions WHERE id_hash = $1', [idHash]);
      return (r.rowCount ?? 0) > 0;
    },
  };
}
