/** The task-handle table on SQLite (migration 6), on the store's own connection. */
import type Database from 'better-sqlite3';
import { tableGuard } from '../guards.js';
import { TASK_HANDLE_COLUMNS, taskHandleFromRow, taskHandleValues, type TaskHandleTable } from '../task-handles.js';

/** The table over one open connection; `check` throws when the store is closed. */
export function sqliteTaskHandles(db: Database.Database, check: () => void): TaskHandleTable {
  let stmts:
    | { insert: Database.Statement; expire: Database.Statement; get: Database.Statement; del: Database.Statement; final: Database.Statement }
    | undefined;
  // Prepared on first use: a store that never sees a task pays nothing at open.
  const prepared = () =>
    (stmts ??= {
      insert: db.prepare(`INSERT INTO task_handles (${TASK_HANDLE_COLUMNS.join(', ')}) VALUES (${TASK_HANDLE_COLUMNS.map(() => '?').join(', ')})`),
      expire: db.prepare('DELETE FROM task_handles WHERE expires_at IS NOT NULL AND expires_at <= ?'),
      get: db.prepare('SELECT * FROM task_handles WHERE handle_hash = ? AND owner = ? AND (expires_at IS NULL OR expires_at > ?)'),
      del: db.prepare('DELETE FROM task_handles WHERE handle_hash = ? AND owner = ?'),
      final: db.prepare('UPDATE task_handles SET final_at = ? WHERE handle_hash = ? AND owner = ? AND final_at IS NULL'),
    });
  const guard = tableGuard(check, 'sqlite task handle');
  return {
    async put(record) {
      const values = taskHandleValues(record);
      guard('put', () => {
        const s = prepared();
        db.transaction(() => {
          s.expire.run(record.createdAt);
          s.insert.run(...values);
        }).immediate();
      });
    },
    async get(handleHash, owner, now) {
      const row = guard('get', () => prepared().get.get(handleHash, owner, now) as Record<string, unknown> | undefined);
      return row ? taskHandleFromRow(row) : undefined;
    },
    async delete(handleHash, owner) {
      return guard('delete', () => prepared().del.run(handleHash, owner).changes > 0);
    },
    async markFinal(handleHash, owner, at) {
      return guard('markFinal', () => prepared().final.run(at, handleHash, owner).changes > 0);
    },
  };
}
