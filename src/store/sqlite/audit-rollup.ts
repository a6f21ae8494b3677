/**
 * The audit rollup's catch-up and retention on SQLite (audit-rollup.ts). SQLite commits one writer
 * at a time, so every record up to the newest visible one is there: the catch-up folds up to it, a
 * chunk at a time. It counts the chunk in a read transaction, which takes no lock, and writes the
 * counts (one row per key, not per record) in a short write transaction that first checks that
 * the mark and the retention's epoch are still those it counted from; the audit writer waits for
 * that write only, never for the counting.
 */
import type Database from 'better-sqlite3';
import {
  applyDeltaSql,
  type AuditRollupStep,
  DROP_EMPTY_SQL,
  foldDeltaSql,
  pruneDeltaSql,
  ROLLUP_CHUNK,
  ROLLUP_KEY,
  ROLLUP_MS,
  sqlNumber,
} from '../audit-rollup.js';

interface State {
  rolled_up_to: number;
  epoch: number;
}

const STATE_SQL = 'SELECT rolled_up_to, epoch FROM audit_rollup_state WHERE id = 1';

/**
 * One catch-up step: folds up to `chunk` records above the mark.
 */
export function foldSqliteRollup(db: Database.Database, chunk = ROLLUP_CHUNK): AuditRollupStep {
  const limit = Math.max(1, Math.trunc(chunk));
  const counted = db.transaction(() => {
    const state = db.prepare(STATE_SQL).get() as State;
    const mark = Number(state.rolled_up_to);
    const seqs = db.prepare('SELECT seq FROM audit WHERE seq > ? ORDER BY seq LIMIT ?').pluck().all(mark, limit) as number[];
    if (seqs.length === 0) return { state, mark, to: mark, folded: 0, cells: [] as unknown[][] };
    const to = seqs[seqs.length - 1]!;
    const cells = db
      .prepare(foldDeltaSql('sqlite', '@from', '@to'))
      .raw(true)
      .all({ from: mark, to }) as unknown[][];
    return { state, mark, to, folded: seqs.length, cells };
  })();
  if (counted.folded === 0) return { folded: 0, rolledUpTo: counted.mark, more: false };
  const upsert = db.prepare(
    `INSERT INTO audit_rollup (${ROLLUP_KEY}, n) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (${ROLLUP_KEY}) DO UPDATE SET n = n + excluded.n`,
  );
  const wrote = db
    .transaction(() => {
      const now = db.prepare(STATE_SQL).get() as State;
      // Another catch-up or a prune came first: what was counted may no longer be the change.
      if (Number(now.rolled_up_to) !== counted.mark || Number(now.epoch) !== Number(counted.state.epoch)) return false;
      for (const cell of counted.cells) upsert.run(...cell);
      db.prepare('UPDATE audit_rollup_state SET rolled_up_to = ? WHERE id = 1').run(counted.to);
      return true;
    })
    .immediate();
  if (!wrote) return { folded: 0, rolledUpTo: Number((db.prepare(STATE_SQL).get() as State).rolled_up_to), more: true };
  return { folded: counted.folded, rolledUpTo: counted.to, more: counted.folded === limit };
}

/**
 * Takes the records matching `gone` (a condition on an audit row) out of the rollup, before the
 * caller deletes them in the same write transaction, and bumps the epoch so a catch-up counted
 * before it does not write.
 */
export function unrollSqlite(db: Database.Database, gone: string): void {
  const last = db.prepare(`SELECT MAX(started_at) AS m FROM audit WHERE ${gone}`).get() as { m: number | null };
  if (last.m === null) return;
  db.prepare(applyDeltaSql('sqlite', pruneDeltaSql('sqlite', gone))).run();
  db.prepare(DROP_EMPTY_SQL(sqlNumber(Math.floor(last.m / ROLLUP_MS)))).run();
  db.prepare('UPDATE audit_rollup_state SET epoch = epoch + 1 WHERE id = 1').run();
}
