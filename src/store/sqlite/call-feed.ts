/**
 * The call feed on SQLite: one keyset read of the audit table by `seq` (its rowid) per call.
 * SQLite commits one writer at a time, so rows become visible in `seq` order and a reader never
 * misses a row below its position. There is no cross-process signal: readers poll.
 */
import type Database from 'better-sqlite3';
import { type CallFeedTable, FEED_COLUMNS, feedCallFromValues } from '../call-feed.js';
import { tableGuard } from '../guards.js';

/**
 * The feed over one open connection; `check` throws when the store is closed.
 *
 * @example
 * ```ts
 * const callFeed = sqliteCallFeed(db, () => assertOpen(closed, 'sqlite store'));
 * ```
 */
export function sqliteCallFeed(db: Database.Database, check: () => void): CallFeedTable {
  let stmts: { after: Database.Statement; head: Database.Statement } | undefined;
  // Prepared on first use: a store nobody watches pays nothing at open.
  const prepared = () =>
    (stmts ??= {
      // The chain where audit-body.ts puts it: body[3], or the call envelope's when stored once.
      after: db
        .prepare(
          `SELECT ${FEED_COLUMNS}, CASE json_type(body, '$[3]') WHEN 'array' THEN json_extract(body, '$[3]') ELSE json_extract(body, '$[0].principal_chain') END AS chain
         FROM audit WHERE seq > ? ORDER BY seq LIMIT ?`,
        )
        .raw(true),
      head: db.prepare('SELECT COALESCE(MAX(seq), 0) AS n FROM audit'),
    });
  const guard = tableGuard(check, 'sqlite');
  return {
    settleMs: 0,
    async after(afterSeq, limit) {
      return guard('call feed read', () => (prepared().after.all(afterSeq, limit) as unknown[][]).map(feedCallFromValues));
    },
    async head() {
      return guard('call feed head', () => Number((prepared().head.get() as { n: number }).n));
    },
  };
}
