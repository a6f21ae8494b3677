/**
 * The SQLite audit writer thread (started by audit-worker.ts with this file as its entry): owns a
 * connection of its own and commits the batches it is sent in IMMEDIATE transactions, then
 * acknowledges them. With a chain key, this thread is the writer of one chain (a link per batch),
 * whose position advances only once a transaction committed. Messages and shared state:
 * audit-protocol.ts.
 *
 * Group commit at this end too: batches that arrived while the previous transaction ran are taken
 * off the port at once (`receiveMessageOnPort`) and committed in one transaction, one link each.
 * A commit rewrites every page it touched (the row's and each index's) in the WAL. Pays for
 * `Store: audit log and idempotency`, `SQLite: durable audit throughput` (100 000 records: 50
 * batches in 30-32 transactions; this thread 17.5-19.0 µs CPU per record against 19.4-19.6 for
 * one transaction per batch, A/B interleaved, load ~20). In the gateway's commit-before-answer
 * pattern the audit writer rarely has two batches at the thread (A/B: as many transactions as
 * batches), so it neither pays nor costs there. The reference, one transaction per batch, is
 * `mergeQueued: false` (`useReferenceAuditCommits`).
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { CHECKPOINT, RESTART, type AuditThreadData, type FromAuditThread, type ToAuditThread } from './audit-protocol.js';
import { commitChained, prepareChainSql, type ChainPosition } from './chain-commit.js';
import { insertPackedRows } from './packed-format.js';

const data = workerData as AuditThreadData;
const port = parentPort as NonNullable<typeof parentPort>;
const db = new Database(data.path, { timeout: data.busyTimeoutMs });
db.pragma('journal_mode = WAL');
db.pragma(`synchronous = ${data.synchronous}`);
db.pragma(`wal_autocheckpoint = ${data.walAutocheckpoint}`);
const one = db.prepare(data.insertSql);
const many = db.prepare(data.insertManySql);
const chain = data.chain ? { key: data.chain.key, keyId: data.chain.keyId, writer: 0, n: 1, prev: '' } : undefined;
const chainStmts = chain && { one, many, ...prepareChainSql(db) };
const noChainPos = data.chainColumn ? null : undefined;
type Batch = Extract<ToAuditThread, { type: 'batch' }>;
/** Most batches one transaction takes (each is at most the audit writer's `maxBatch` rows). */
const MAX_MERGED = 16;
const commit = db.transaction((batches: readonly Batch[]): ChainPosition | undefined => {
  let pos: ChainPosition | undefined = chain && { writer: chain.writer, n: chain.n, prev: chain.prev };
  for (const m of batches) {
    const bytes = Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength);
    if (chain && chainStmts && pos) pos = commitChained(chainStmts, { ...pos, key: chain.key, keyId: chain.keyId }, data.rowsPerStatement, bytes, m.meta);
    else insertPackedRows(one, many, data.rowsPerStatement, bytes, m.meta, noChainPos);
  }
  return pos;
});
const shared = data.checkpoint;

const send = (m: FromAuditThread): void => port.postMessage(m);

/**
 * Starting the WAL over: the checkpointer asked (ASKED) once it had copied all but the last
 * batches of a WAL grown past its size, so the rest is copied here, after the acknowledgement
 * (SQLite starts the WAL over only for a writer that begins with every frame copied); DONE: this
 * batch's transaction started the WAL over, so the checkpointer may go on.
 */
function restartWal(state: Int32Array): void {
  const restart = Atomics.load(state, CHECKPOINT.RESTART);
  if (restart === RESTART.DONE) Atomics.store(state, CHECKPOINT.RESTART, RESTART.NONE);
  else if (restart === RESTART.ASKED) {
    const r = (db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[])[0];
    // Asked again after the next batch until a checkpoint copied everything.
    if (r && r.busy === 0 && r.checkpointed === r.log) Atomics.store(state, CHECKPOINT.RESTART, RESTART.DONE);
  }
}

/** Commits batches in one transaction and acknowledges them; false when it failed (nothing acknowledged). */
function commitAndAck(batches: readonly Batch[], failAlone: boolean): boolean {
  try {
    const next = commit.immediate(batches);
    if (chain && next) Object.assign(chain, next);
    if (shared) {
      let kib = 0;
      for (const m of batches) kib += (m.bytes.byteLength + 1023) >> 10;
      Atomics.add(shared, CHECKPOINT.KIB, kib);
      Atomics.notify(shared, CHECKPOINT.KIB);
    }
    send({ type: 'committed', ids: batches.map((m) => m.id) });
    if (shared) restartWal(shared);
    return true;
  } catch (e) {
    if (!failAlone) return false;
    const err = e as { message?: unknown; code?: unknown };
    send({
      type: 'failed',
      id: (batches[0] as Batch).id,
      message: String(err?.message ?? e),
      ...(typeof err?.code === 'string' && { code: err.code }),
    });
    return false;
  }
}

port.on('message', (first: ToAuditThread) => {
  const batches: Batch[] = [];
  let close = false;
  for (let m: ToAuditThread | undefined = first; m !== undefined; ) {
    if (m.type === 'close') {
      close = true;
      break;
    }
    batches.push(m);
    if (!data.mergeQueued || batches.length >= MAX_MERGED) break;
    m = (receiveMessageOnPort(port) as { message: ToAuditThread } | undefined)?.message;
  }
  // A failed transaction of several batches is tried again batch by batch: one bad batch must not fail the others.
  if (batches.length > 0 && !commitAndAck(batches, batches.length === 1) && batches.length > 1) {
    for (const m of batches) commitAndAck([m], true);
  }
  if (close) {
    db.close();
    send({ type: 'closed' });
  }
});
