/**
 * The SQLite audit writer thread (started by audit-worker.ts with this file as its entry): owns a
 * connection of its own and commits each batch it is sent in one IMMEDIATE transaction, then
 * acknowledges it. With a chain key, this thread is the writer of one chain, whose position
 * advances only once a batch committed. Messages and shared state: audit-protocol.ts.
 *
 * @example
 * ```ts
 * new Worker(new URL('./audit-thread.js', import.meta.url), { workerData: data satisfies AuditThreadData });
 * ```
 */
import { parentPort, workerData } from 'node:worker_threads';
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
const commit = db.transaction((bytes: Buffer, meta: Uint32Array): ChainPosition | undefined => {
  if (chain && chainStmts) return commitChained(chainStmts, chain, data.rowsPerStatement, bytes, meta);
  insertPackedRows(one, many, data.rowsPerStatement, bytes, meta, noChainPos);
  return undefined;
});
const shared = data.checkpoint;
/**
 * What a commit adds to the WAL besides its rows: every page it touched is written whole (about
 * ten 16 KiB pages for the audit table, its indexes and the chain), so a small batch writes many
 * times its rows' bytes. Counting rows alone, the gateway's small commits grew the WAL to the
 * connections' own checkpoint bound (128 MiB) before the checkpointer ever ran, and this thread
 * then ran the checkpoint itself, fsyncs included, with calls waiting on its commits.
 */
const commitKiB = ((data.commitPages ?? 0) * (db.pragma('page_size', { simple: true }) as number)) >> 10;

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

port.on('message', (m: ToAuditThread) => {
  if (m.type === 'close') {
    db.close();
    send({ type: 'closed' });
    return;
  }
  try {
    const next = commit.immediate(Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength), m.meta);
    if (chain && next) Object.assign(chain, next);
    if (shared) {
      Atomics.add(shared, CHECKPOINT.KIB, ((m.bytes.byteLength + 1023) >> 10) + commitKiB);
      Atomics.notify(shared, CHECKPOINT.KIB);
    }
    send({ type: 'committed', id: m.id });
    if (shared) restartWal(shared);
  } catch (e) {
    const err = e as { message?: unknown; code?: unknown };
    send({
      type: 'failed',
      id: m.id,
      message: String(err?.message ?? e),
      ...(typeof err?.code === 'string' && { code: err.code }),
    });
  }
});
