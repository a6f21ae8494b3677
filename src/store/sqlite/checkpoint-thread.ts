/**
 * The SQLite checkpointer thread (started by audit-worker.ts with this file as its entry): with a
 * connection of its own, it sleeps on the KiB counter the writer thread advances and runs a
 * PASSIVE checkpoint (one that never blocks writers) each time enough has been committed, so
 * that the fsyncs of a checkpoint never stall the writer. Shared state: audit-protocol.ts.
 */
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { CheckpointThreadData } from './audit-protocol.js';
import { type CheckpointResult, runCheckpoints } from './checkpoint-loop.js';

const data = workerData as CheckpointThreadData;
const db = new Database(data.path, { timeout: data.busyTimeoutMs });
db.pragma(`synchronous = ${data.synchronous}`);
runCheckpoints(data.state, data, () => (db.pragma('wal_checkpoint(PASSIVE)') as CheckpointResult[])[0]);
db.close();
