/**
 * The call feed: the audit log read forward from a position, every row as it was written (a call's
 * `started` row and the row that ended it), for a live view of calls across every process writing
 * the store. The store is the source, not one process's memory: a console on replica B sees the
 * calls replica A made.
 */
import type { ErrorCategory, Principal } from 'tool-envelope/core';
import type { AuditRecord } from './types.js';

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
  status: AuditRecord['status'];
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

/**
 * The feed row of a record read from the store (`status` as written: `started` stays `started`).
 *
 * @example
 * ```ts
 * feedCallOf(auditFromRow(row), row.status as string);
 * ```
 */
export function feedCallOf(r: AuditRecord, writtenStatus: string): FeedCall {
  return {
    seq: r.seq ?? 0,
    id: r.id,
    tool: r.tool,
    status: writtenStatus === 'started' ? 'started' : r.status,
    category: r.category,
    errorCode: r.errorCode,
    latencyMs: r.latencyMs,
    toolCallId: r.toolCallId,
    runId: r.runId,
    traceId: r.traceId,
    sessionId: r.sessionId,
    approvalId: r.approvalId ?? null,
    startedAt: r.startedAt,
    endedAt: r.endedAt,
    principalChain: r.principalChain,
  };
}
