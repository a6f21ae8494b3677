/**
 * The messages and shared state between the SQLite audit worker's client (audit-worker.ts, on the
 * calling thread) and its two threads: the writer (audit-thread.ts) and the checkpointer
 * (checkpoint-thread.ts). Types and constants only, imported by all three.
 */
import type { KeyObject } from 'node:crypto';

/**
 * The writer thread's `workerData`: its database, settings, and the SQL of the one-row and
 * `rowsPerStatement`-row inserts that `insertPackedRows` runs (see `RowInserts`).
 */
export interface AuditThreadData {
  path: string;
  synchronous: string;
  busyTimeoutMs: number;
  walAutocheckpoint: number;
  insertSql: string;
  insertManySql: string;
  rowsPerStatement: number;
  /** The chain key and the operator key's id: each batch is then committed as a link of the thread's own chain. */
  chain?: { key: KeyObject; keyId: string };
  /** The insert statements bind a `chain_pos` value after each row's (null without `chain`). */
  chainColumn?: boolean;
  /** Bind string values as UTF-8 bytes (`textAsBytes` of `insertPackedRows`: the insert statements CAST them to TEXT). */
  textAsBytes?: boolean;
  /** Commit small batches queued at the port together (see audit-thread.ts); false: one transaction per batch (the reference). */
  mergeQueued?: boolean;
  /**
   * With a checkpointer: the pages every commit writes to the WAL besides its rows' own (the
   * table's last page, one per index, the chain's), counted with the rows' KiB toward the
   * checkpointer's `everyKiB` (default 0).
   */
  commitPages?: number;
  /** With a checkpointer: the state shared with it (see {@link CHECKPOINT}). */
  checkpoint?: Int32Array;
  /** With a checkpointer: its `everyKiB`, so that this thread wakes it only when it has a checkpoint to run. */
  checkpointEveryKiB?: number;
}

/** The checkpointer thread's `workerData`. */
export interface CheckpointThreadData {
  path: string;
  synchronous: string;
  busyTimeoutMs: number;
  /** A PASSIVE checkpoint each time the writer committed this many KiB more. */
  everyKiB: number;
  /** The WAL size (frames) past which the writer is asked to start the WAL over. */
  restartFrames: number;
  state: Int32Array;
}

/**
 * A message to the writer thread: commit a batch (as made by `batchMessage`, both arrays
 * transferred), or close its connection.
 */
export type ToAuditThread = { type: 'batch'; id: number; bytes: Uint8Array; meta: Uint32Array } | { type: 'close' };

/**
 * A message from the writer thread: batches committed (by the ids they were sent with, in one
 * transaction) or one failed, or the connection closed.
 */
export type FromAuditThread =
  | { type: 'committed'; ids: readonly number[] }
  | { type: 'failed'; id: number; message: string; code?: string }
  | { type: 'closed' };

/** The slots of the `Int32Array` the writer and the checkpointer share (see audit-worker.ts). */
export const CHECKPOINT = {
  /** KiB of WAL the writer wrote so far, estimated: its rows and each commit's other pages (wraps); the checkpointer sleeps on it. */
  KIB: 0,
  /** Non-zero: the checkpointer stops. */
  STOP: 1,
  /** Starting the WAL over: one of {@link RESTART}. */
  RESTART: 2,
  /** The `KIB` value the checkpointer last went to sleep on: it has done all it will for what was committed up to there. */
  SEEN: 3,
  /** The `KIB` value of the checkpointer's last checkpoint (published before it runs): the writer wakes it only `everyKiB` past it. */
  LAST: 4,
  /** Slots in all. */
  LENGTH: 5,
} as const;

/** The values of the `CHECKPOINT.RESTART` slot. */
export const RESTART = {
  /** Nothing to do. */
  NONE: 0,
  /** The checkpointer copied all but the last batches of a WAL grown past its size: the writer copies the rest. */
  ASKED: 1,
  /** The writer copied everything; its next transaction starts the WAL over. */
  DONE: 2,
} as const;
