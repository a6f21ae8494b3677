/** The task-handle table on PostgreSQL (migration 6). */
import type pg from 'pg';
import { TASK_HANDLE_COLUMNS, taskHandleFromRow, taskHandleValues, type TaskHandleTable } from '../task-handles.js';

/** Runs one statement with the store's checks and typed failures (the store's `q`). */
type Query = (what: string, text: string, values?: unknown[]) => Promise<pg.QueryResult>;

const INSERT_SQL = `WITH expired AS (DELETE FROM task_handles WHERE expires_at IS NOT NULL AND expires_at <= $7)
INSERT INTO task_handles (${TASK_HANDLE_COLUMNS.join(', ')}) VALUES (${TASK_HANDLE_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`;

/** The table over the store's pool. */
export function postgresTaskHandles(q: Query): TaskHandleTable {
  return {
    async put(record) {
      await q('task handle put', INSERT_SQL, taskHandleValues(record));
    },
    async get(handleHash, owner, now) {
      const r = await q('task handle get', 'SELECT * FROM task_handles WHERE handle_hash = $1 AND owner = $2 AND (expires_at IS NULL OR expires_at > $3)', [
        handleHash,
        owner,
        now,
      ]);
      return r.rows[0] ? taskHandleFromRow(r.rows[0] as Record<string, unknown>) : undefined;
    },
    async delete(handleHash, owner) {
      const r = await q('task handle delete', 'DELETE FROM task_handles WHERE handle_hash = $1 AND owner = $2', [handleHash, owner]);
      return (r.rowCount ?? 0) > 0;
    },
    async markFinal(handleHash, owner, at) {
      const r = await q('task handle markFinal', 'UPDATE task_handles SET final_at = $1 WHERE handle_hash = $2 AND owner = $3 AND final_at IS NULL', [
        at,
        handleHash,
        owner,
      ]);
      return (r.rowCount ?? 0) > 0;
    },
  };
}
