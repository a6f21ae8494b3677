/**
 * The SQLite audit writer thread (started by audit-worker.ts with this file as its entry): owns a
 * connection of its own and commits the batches it is sent in IMMEDIATE transactions, then
 * acknowledges them. With a chain key, this thread is the writer of one chain, whose position
 * advances only once a transaction committed. Messages and shared state: audit-protocol.ts.
 *
 * Group commit at this end: small batches that reached the port while the previous transaction
 * ran are taken off it at once (`receiveMessageOnPort`) and committed together, as one batch (one
 * chain link), while the group stays small ({@link MERGE_ROWS}): a commit rewrites every page it
 * touched, about ten 16 KiB pages even for one record, and a gateway's calls send many small
 * batches; big batches are never merged (merging them left the thread idle while the calling
 * thread read the acknowledgements, and cost the durable audit throughput). Pays for
 * `gateway (audit commit)`, `stdio, SQLite: commit before answer, median latency, 32 in flight`
 * (with the audit writer handing such a sink each batch at once, see audit-writer.ts); the
 * reference, one transaction per batch, is `mergeQueued: false` (`useReferenceAuditCommits`).
 *
 * @example
 * ```ts
 * new Worker(new URL('./audit-thread.js', import.meta.url), { workerData: data satisfies AuditThreadData });
 * ```
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
const commit = db.transaction((bytes: Buffer, meta: Uint32Array): ChainPosition | undefined => {
  if (chain && chainStmts) return commitChained(chainStmts, chain, data.rowsPerStatement, bytes, meta, data.textAsBytes);
  insertPackedRows(one, many, data.rowsPerStatement, bytes, meta, noChainPos, data.textAsBytes);
  return undefined;
});
const shared = data.checkpoint;
const everyKiB = data.checkpointEveryKiB ?? 0;
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
  if (restart === RESTART.DONE) {
    Atomics.store(state, CHECKPOINT.RESTART, RESTART.NONE);
    // The checkpointer held its checkpoints while the WAL started over: it may have one due.
    Atomics.notify(state, CHECKPOINT.KIB);
  } else if (restart === RESTART.ASKED) {
    const r = (db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[])[0];
    // Asked again after the next batch until a checkpoint copied everything.
    if (r && r.busy === 0 && r.checkpointed === r.log) Atomics.store(state, CHECKPOINT.RESTART, RESTART.DONE);
  }
}

type Batch = Extract<ToAuditThread, { type: 'batch' }>;

/** Most rows (and bytes) a merged group holds: past it, a batch is committed alone. */
const MERGE_ROWS = 256;
const MERGE_BYTES = 1 << 20;
/** A message taken off the port that did not fit the group before it: handled next. */
let held: ToAuditThread | undefined;

/** The batch and the ones queued behind it that fit one small group. */
function group(first: Batch): Batch[] {
  const out = [first];
  let rows = first.meta.length / 3;
  let bytes = first.bytes.byteLength;
  if (!data.mergeQueued) return out;
  while (rows < MERGE_ROWS) {
    const next = (receiveMessageOnPort(port) as { message: ToAuditThread } | undefined)?.message;
    if (next === undefined) break;
    if (next.type !== 'batch' || rows + next.meta.length / 3 > MERGE_ROWS || bytes + next.bytes.byteLength > MERGE_BYTES) {
      held = next;
      break;
    }
    out.push(next);
    rows += next.meta.length / 3;
    bytes += next.bytes.byteLength;
  }
  return out;
}

/** Batches as one: their rows one after another, so one chain link covers them as `audit verify` reads them back. */
function joined(batches: readonly Batch[]): { bytes: Buffer; meta: Uint32Array } {
  let size = 0;
  let count = 0;
  for (const b of batches) {
    size += b.bytes.byteLength;
    count += b.meta.length;
  }
  const bytes = Buffer.allocUnsafe(size);
  const meta = new Uint32Array(count);
  let at = 0;
  let m = 0;
  for (const b of batches) {
    bytes.set(b.bytes, at);
    for (let i = 0; i < b.meta.length; i++) meta[m++] = (b.meta[i] as number) + at;
    at += b.bytes.byteLength;
  }
  return { bytes, meta };
}

/** Commits rows in one transaction and acknowledges the batches they came in; false when it failed (then acknowledged only when `report`). */
function commitAndAck(bytes: Buffer, meta: Uint32Array, ids: readonly number[], report: boolean): boolean {
  try {
    const next = commit.immediate(bytes, meta);
    if (chain && next) Object.assign(chain, next);
    if (shared) {
      const added = ((bytes.byteLength + 1023) >> 10) + commitKiB;
      const kib = (Atomics.add(shared, CHECKPOINT.KIB, added) + added) | 0;
      // Woken only with a checkpoint to run: a wake-up per commit cost the checkpointer thread about
      // as much CPU as a small commit's own writes, to find nothing to do and sleep again.
      if (((kib - Atomics.load(shared, CHECKPOINT.LAST)) | 0) >= everyKiB) Atomics.notify(shared, CHECKPOINT.KIB);
    }
    send({ type: 'committed', ids });
    if (shared) restartWal(shared);
    return true;
  } catch (e) {
    if (!report) return false;
    const err = e as { message?: unknown; code?: unknown };
    send({
      type: 'failed',
      id: ids[0] as number,
      message: String(err?.message ?? e),
      ...(typeof err?.code === 'string' && { code: err.code }),
    });
    return false;
  }
}

const view = (b: Batch): Buffer => Buffer.from(b.bytes.buffer, b.bytes.byteOffset, b.bytes.byteLength);

function handle(m: ToAuditThread): void {
  if (m.type === 'close') {
    db.close();
    send({ type: 'closed' });
    return;
  }
  const batches = group(m);
  if (batches.length === 1) {
    commitAndAck(view(m), m.meta, [m.id], true);
    return;
  }
  const all = joined(batches);
  const ids = batches.map((b) => b.id);
  if (commitAndAck(all.bytes, all.meta, ids, false)) return;
  // A failed group is tried again batch by batch: one bad batch must not fail the others.
  for (const b of batches) commitAndAck(view(b), b.meta, [b.id], true);
}

port.on('message', (m: ToAuditThread) => {
  handle(m);
  while (held !== undefined) {
    const next = held;
    held = undefined;
    handle(next);
  }
});
