/**
 * The call feed: the audit log read forward from a position, every row as it was written (a call's
 * `started` row and the row that ended it), for a live view of calls across every process writing
 * the store. The store is the source, not one process's memory: a console on replica B sees the
 * calls replica A made.
 */
import type { ErrorCategory, OutcomeStatus, Principal } from 'tool-envelope/core';
import { AUDIT_COLUMNS } from './audit-columns.js';

/**
 * One row of the feed: a call starting (`status: 'started'`) or ending (its outcome's status).
 *
 * @example
 * ```ts
 * const c: FeedCall = { seq: 7, id: 'aud_1', tool: 'fs.read', status: 'ok', category: null, errorCode: null, latencyMs: 3,
 *   toolCallId: 'c1', runId: 'r1', traceId: 't1', sessionId: null, approvalId: null, startedAt: 0, endedAt: 3, principalChain: [] };
 * ```
 */
export interface FeedCall {
  /** The row's place in the log (its `seq`); the feed's position. */
  seq: number;
  id: string;
  tool: string;
  /** `started` for a call starting, else its outcome's status (`interrupted`: an ending no one wrote). */
  status: OutcomeStatus | 'started' | 'interrupted';
  category: ErrorCategory | null;
  errorCode: string | null;
  latencyMs: number;
  toolCallId: string;
  runId: string;
  traceId: string;
  sessionId: string | null;
  approvalId: string | null;
  startedAt: number;
  endedAt: number;
  principalChain: Principal[];
}

/**
 * The feed's operations, on every store (`store.callFeed`).
 *
 * @example
 * ```ts
 * const rows = await store.callFeed.after(0, 500);
 * const stop = store.callFeed.watch?.(() => wake());
 * ```
 */
export interface CallFeedTable {
  /**
   * How long a row may still appear below rows already read (ms): 0 where commits become visible in
   * `seq` order (SQLite); on PostgreSQL a transaction that took its `seq` first may commit last.
   */
  readonly settleMs: number;
  /** Rows with `seq > afterSeq`, oldest first, at most `limit`. */
  after(afterSeq: number, limit: number): Promise<FeedCall[]>;
  /** The newest row's `seq` (0 for an empty log): where a feed that wants only new calls starts. */
  head(): Promise<number>;
  /**
   * Calls `onWrite` soon after another process (or this one) commits audit rows; absent when the
   * store has no such signal (readers poll). Returns a function that stops watching.
   */
  watch?(onWrite: () => void): () => void;
}

// The audit table's columns (rows.ts) from its id to the latency, then the approval and the principal
// chain; feedCallFromValues reads them by place, in this order.
const FEED_KEYS: readonly string[] = ['seq', ...AUDIT_COLUMNS.slice(0, AUDIT_COLUMNS.indexOf('latency_ms') + 1), 'approval_id', 'chain'];

/**
 * The columns a feed read selects before `chain` (the principal chain, taken out of `body` by the
 * SQL): the rest of the body, the envelopes, is never read or parsed for the feed.
 *
 * @example
 * ```ts
 * `SELECT ${FEED_COLUMNS}, ... AS chain FROM audit`;
 * ```
 */
export const FEED_COLUMNS = FEED_KEYS.slice(0, -1).join(', ');

function principalsOf(chain: unknown): Principal[] {
  let list = chain;
  try {
    if (typeof chain === 'string') list = JSON.parse(chain) as unknown;
  } catch {
    // Not JSON: a row without a chain rather than a feed stuck on one row.
    return [];
  }
  if (!Array.isArray(list)) return [];
  return list.filter((p): p is Principal => typeof p === 'object' && p !== null && typeof p.kind === 'string' && typeof p.id === 'string');
}

const str = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

/**
 * The feed row of the values of {@link FEED_COLUMNS} and `chain` (JSON text, or parsed), in that
 * order (a raw row: no object per row).
 *
 * @example
 * ```ts
 * statement.raw().all(after, limit).map(feedCallFromValues);
 * ```
 */
export function feedCallFromValues(v: readonly unknown[]): FeedCall {
  return {
    seq: Number(v[0]),
    id: String(v[1]),
    tool: String(v[2]),
    status: v[3] as FeedCall['status'],
    category: str(v[4]) as ErrorCategory | null,
    errorCode: str(v[5]),
    toolCallId: String(v[6]),
    runId: String(v[7]),
    traceId: String(v[8]),
    sessionId: str(v[9]),
    approvalId: str(v[13]),
    startedAt: Number(v[10]),
    endedAt: Number(v[11]),
    latencyMs: Number(v[12]),
    principalChain: principalsOf(v[14]),
  };
}

/**
 * The feed row of a database row (an object) of {@link FEED_COLUMNS} and `chain`.
 *
 * @example
 * ```ts
 * result.rows.map(feedCallFromRow);
 * ```
 */
export function feedCallFromRow(row: Record<string, unknown>): FeedCall {
  return feedCallFromValues(FEED_KEYS.map((k) => row[k]));
}
