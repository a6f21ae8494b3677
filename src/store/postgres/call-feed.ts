/**
 * The call feed on PostgreSQL: a keyset read of the audit table by `seq`, woken by `LISTEN`.
 * Migration 9's statement trigger sends `NOTIFY tool_envelope_audit` (payload: the schema) when
 * an insert into `audit` commits, from any writer; the watcher holds one connection of its own for
 * it and reconnects when that connection is lost (readers poll meanwhile). Rows of concurrent
 * transactions may become visible out of `seq` order: see call-feed-reader.ts.
 */
import type pg from 'pg';
import { type CallFeedTable, FEED_COLUMNS, feedCallFromRow } from '../call-feed.js';

/** Runs one statement with the store's checks and typed failures (the store's `q`). */
type Query = (what: string, text: string, values?: unknown[]) => Promise<pg.QueryResult>;

/** The channel migration 9's trigger notifies. */
export const AUDIT_CHANNEL = 'tool_envelope_audit';
const RECONNECT_MS = 1_000;
// The chain where audit-body.ts puts it: body[3], or the call envelope's when stored once.
const AFTER_SQL = `SELECT ${FEED_COLUMNS}, CASE WHEN json_typeof(body->3) = 'array' THEN body->3 ELSE body->0->'principal_chain' END AS chain
 FROM audit WHERE seq > $1 ORDER BY seq LIMIT $2`;
// An audit transaction commits within milliseconds of its insert; a missing seq still missing
// after this is taken for a rolled-back insert (sequences do not give numbers back).
const SETTLE_MS = 2_000;

/**
 * The feed over the store's pool; `listener` makes the watcher's own connection.
 *
 * @example
 * ```ts
 * const callFeed = postgresCallFeed((what, text, values) => this.q(what, text, values), () => new pg.Client(pool.options), schema);
 * ```
 */
export function postgresCallFeed(q: Query, listener: () => pg.Client, schema: string): CallFeedTable {
  return {
    settleMs: SETTLE_MS,
    async after(afterSeq, limit) {
      const r = await q('call feed read', AFTER_SQL, [afterSeq, limit]);
      return r.rows.map(feedCallFromRow);
    },
    async head() {
      const r = await q('call feed head', 'SELECT COALESCE(MAX(seq), 0) AS n FROM audit');
      return Number(r.rows[0]?.n ?? 0);
    },
    watch(onWrite) {
      let stopped = false;
      let client: pg.Client | undefined;
      let timer: NodeJS.Timeout | undefined;
      const connect = (): void => {
        if (stopped) return;
        const c = listener();
        client = c;
        const retry = (): void => {
          c.removeAllListeners('notification');
          c.end().catch(() => {});
          if (stopped || client !== c) return;
          client = undefined;
          timer = setTimeout(connect, RECONNECT_MS);
          timer.unref();
          // Rows committed while the connection was down are read by the readers' poll.
        };
        c.on('error', retry);
        c.on('notification', (n) => {
          if (n.channel === AUDIT_CHANNEL && n.payload === schema) onWrite();
        });
        c.connect()
          .then(() => c.query(`LISTEN ${AUDIT_CHANNEL}`))
          .then(() => {
            if (stopped) void c.end().catch(() => {});
            // Whatever committed before LISTEN took effect.
            else onWrite();
          })
          .catch(retry);
      };
      connect();
      return () => {
        stopped = true;
        if (timer) clearTimeout(timer);
        const c = client;
        client = undefined;
        c?.end().catch(() => {});
      };
    },
  };
}
