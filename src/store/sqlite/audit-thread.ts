/**
 * The SQLite audit writer thread (entry of audit-worker.ts's worker; messages in audit-protocol.ts):
 * commits batches in IMMEDIATE transactions, then acknowledges them; a chain's position advances only
 * once committed. Small batches queued while a commit ran are merged into one (a commit rewrites about
 * ten pages even for one record); big ones never are. Reference: `useReferenceAuditCommits` (bench/README.md).
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { AuditCommitter } from './audit-commit.js';
import type { AuditThreadData, FromAuditThread, ToAuditThread } from './audit-protocol.js';

const data = workerData as AuditThreadData;
const port = parentPort as NonNullable<typeof parentPort>;
const db = new Database(data.path, { timeout: data.busyTimeoutMs });
db.pragma('journal_mode = WAL');
db.pragma(`synchronous = ${data.synchronous}`);
db.pragma(`wal_autocheckpoint = ${data.walAutocheckpoint}`);
const committer = new AuditCommitter(db, data, data.checkpoint);

const send = (m: FromAuditThread): void => port.postMessage(m);

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
    committer.commit(bytes, meta);
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
  send({ type: 'committed', ids });
  try {
    committer.afterCommit();
  } catch {
    // Committed and acknowledged all the same: the checkpointer asks again, and the connections'
    // own checkpoint bound (walAutocheckpoint) still holds the WAL.
  }
  return true;
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
