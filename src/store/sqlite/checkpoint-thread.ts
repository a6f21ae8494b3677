/**
 * The SQLite checkpointer thread (started by audit-worker.ts with this file as its entry): with a
 * connection of its own, it sleeps on the KiB counter the writer thread advances and runs a
 * PASSIVE checkpoint (one that never blocks writers) each time enough has been committed, so
 * that the fsyncs of a checkpoint never stall the writer. Shared state: audit-protocol.ts.
 *
 * @example
 * ```ts
 * new Worker(new URL('./checkpoint-thread.js', import.meta.url), { workerData: data satisfies CheckpointThreadData });
 * ```
 */
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { CHECKPOINT, RESTART, type CheckpointThreadData } from './audit-protocol.js';

const data = workerData as CheckpointThreadData;
const db = new Database(data.path, { timeout: data.busyTimeoutMs });
db.pragma(`synchronous = ${data.synchronous}`);
const state = data.state;
let last = Atomics.load(state, CHECKPOINT.KIB);
Atomics.store(state, CHECKPOINT.LAST, last);
for (;;) {
  if (Atomics.load(state, CHECKPOINT.STOP) !== 0) break;
  const now = Atomics.load(state, CHECKPOINT.KIB);
  // Until the writer has started the WAL over, a checkpoint here could keep it from doing so
  // (a reader beginning while a checkpoint copies cannot start the WAL over).
  if (Atomics.load(state, CHECKPOINT.RESTART) === RESTART.NONE && ((now - last) | 0) >= data.everyKiB) {
    last = now;
    Atomics.store(state, CHECKPOINT.LAST, now);
    // PASSIVE: copies what it can without waiting for (or blocking) the writer. Past
    // restartFrames it asks the writer to copy the few frames committed since and so restart the WAL.
    const r = (db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number }[])[0];
    if (r && r.busy === 0 && r.log >= data.restartFrames) Atomics.store(state, CHECKPOINT.RESTART, RESTART.ASKED);
    continue;
  }
  Atomics.store(state, CHECKPOINT.SEEN, now);
  Atomics.notify(state, CHECKPOINT.SEEN);
  Atomics.wait(state, CHECKPOINT.KIB, now);
}
db.close();
