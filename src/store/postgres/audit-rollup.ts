/**
 * The audit rollup's catch-up and retention on PostgreSQL (audit-rollup.ts). The catch-up runs in
 * its own transaction under `pg_try_advisory_xact_lock`: of replicas stepping at once one folds,
 * the others leave it (their readers add what is above the mark themselves); audit commits take no
 * lock of it. A retention prune waits for that lock, so a chunk is never counted from rows a prune
 * is deleting.
 *
 * Rows of concurrent transactions become visible out of `seq` order (a transaction takes its
 * numbers at insert and may commit after one that took higher ones), so the catch-up folds only up
 * to a safe mark: while every `seq` above the mark is there, or else up to the frontier, the
 * newest `seq` seen a settling time ago, below which a number still missing is taken for one that
 * will never come (a rolled-back insert, a sequence's numbers lost in a crash, a pruned row), as
 * the call feed does (call-feed-reader.ts).
 */
import type pg from 'pg';
import { applyDeltaSql, type AuditRollupStep, DROP_EMPTY_SQL, foldDeltaSql, pruneDeltaSql, ROLLUP_CHUNK, ROLLUP_MS, sqlNumber } from '../audit-rollup.js';

/** How long a missing `seq` below the frontier is waited for, by default. */
export const ROLLUP_SETTLE_MS = 30_000;

/** The transaction lock of a schema's rollup (two keys: the schema's and the rollup's). */
const LOCK_KEYS = "hashtext($1), hashtext('audit_rollup')";

interface Frontier {
  seq: number;
  at: number;
}

/** The highest `seq` of `seqs` (ascending, all above `mark`) that can be folded: no number below it may still come. */
export function safeEnd(mark: number, seqs: readonly number[], settled: Frontier | undefined): number {
  let to = mark;
  for (const s of seqs) {
    const base = settled ? Math.max(to, settled.seq) : to;
    if (s === base + 1 || (settled !== undefined && s <= settled.seq)) to = s;
    else break;
  }
  return to;
}

/**
 * One catch-up step in the transaction `c`: folds up to `chunk` records above the mark.
 */
export async function foldPostgresRollup(c: pg.PoolClient, schema: string, chunk = ROLLUP_CHUNK, settleMs = ROLLUP_SETTLE_MS): Promise<AuditRollupStep> {
  const limit = Math.max(1, Math.trunc(chunk));
  const got = (await c.query(`SELECT pg_try_advisory_xact_lock(${LOCK_KEYS}) AS got`, [schema])).rows[0].got === true;
  const st = (
    await c.query(
      `SELECT rolled_up_to, frontier_seq, frontier_at, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint AS now FROM audit_rollup_state WHERE id = 1`,
    )
  ).rows[0];
  const mark = Number(st.rolled_up_to);
  if (!got) return { folded: 0, rolledUpTo: mark, more: false };
  const now = Number(st.now);
  const frontier: Frontier = { seq: Number(st.frontier_seq), at: Number(st.frontier_at) };
  const settled = now - frontier.at >= settleMs ? frontier : undefined;
  const seqs = (await c.query('SELECT seq FROM audit WHERE seq > $1 ORDER BY seq LIMIT $2', [mark, limit])).rows.map((r) => Number(r.seq));
  const to = safeEnd(mark, seqs, settled);
  if (to > mark) await c.query(applyDeltaSql('postgres', foldDeltaSql('postgres', '$1', '$2')), [mark, to]);
  // A frontier folded past (or the first one) is renewed: the newest seq now, to settle from now.
  const next = settled && to >= settled.seq ? { seq: Number((await c.query('SELECT COALESCE(MAX(seq), 0) AS m FROM audit')).rows[0].m), at: now } : frontier;
  await c.query('UPDATE audit_rollup_state SET rolled_up_to = $1, frontier_seq = $2, frontier_at = $3 WHERE id = 1', [to, next.seq, next.at]);
  const folded = seqs.filter((s) => s <= to).length;
  return { folded, rolledUpTo: to, more: folded === limit };
}

/**
 * Takes the records matching `gone` (a condition on an audit row) out of the rollup, in the
 * prune's transaction `c` before it deletes them; waits for a catch-up under way.
 */
export async function unrollPostgres(c: pg.PoolClient, schema: string, gone: string): Promise<void> {
  await c.query(`SELECT pg_advisory_xact_lock(${LOCK_KEYS})`, [schema]);
  const last = (await c.query(`SELECT MAX(started_at) AS m FROM audit WHERE ${gone}`)).rows[0].m;
  if (last === null || last === undefined) return;
  await c.query(applyDeltaSql('postgres', pruneDeltaSql('postgres', gone)));
  await c.query(DROP_EMPTY_SQL(sqlNumber(Math.floor(Number(last) / ROLLUP_MS))));
}
