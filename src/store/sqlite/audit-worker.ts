/**
 * Audit appends on a worker thread: the worker owns its own connection to the database file and
 * commits each batch there, so SQLite's insert work never runs on the thread that serves calls.
 * A batch is acknowledged only after the worker's COMMIT returned.
 *
 * WAL checkpoints run on a second thread, the checkpointer, with a connection of its own: a
 * checkpoint waits for fsync (of the WAL, then of the database file), and on the writer that
 * wait stalled every batch behind it (about 15% of the audit rate on a real disk, measured).
 * The writer counts the bytes it commits in shared memory; the checkpointer sleeps on that
 * counter and runs a PASSIVE checkpoint (one that never blocks writers) each time enough has
 * been written. The writer's own automatic checkpoint stays on at a larger size, as a bound on
 * the WAL should the checkpointer ever fall behind or fail.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { ToolEnvelopeError } from '../../core/index.js';
import type { KeyObject } from 'node:crypto';
import { chainLink, chainSign } from '../chain.js';
import { CHAIN_SQL, commitChained } from './chain-commit.js';
import { batchMessage, decodeRow, insertPackedRows, type PackedRow } from './packed-rows.js';

// Plain CommonJS so it runs the same from the TypeScript sources (tests) and from dist; the
// batch itself is inserted by insertPackedRows and decodeRow, the functions the calling thread uses too.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { timeout: workerData.busyTimeoutMs });
db.pragma('journal_mode = WAL');
db.pragma('synchronous = ' + workerData.synchronous);
db.pragma('wal_autocheckpoint = ' + workerData.walAutocheckpoint);
const one = db.prepare(workerData.insertSql);
const many = db.prepare(workerData.insertManySql);
${decodeRow.toString()}
${insertPackedRows.toString()}
${chainLink.toString()}
${chainSign.toString()}
${commitChained.toString()}
// This thread is the writer of one chain: its state advances only once a batch committed.
const chain = workerData.chain ? { key: workerData.chain.key, keyId: workerData.chain.keyId, writer: 0, n: 1, prev: '' } : null;
const chainStmts = chain && {
  one, many,
  addWriter: db.prepare(workerData.chainSql.addWriter),
  signWriter: db.prepare(workerData.chainSql.signWriter),
  addLink: db.prepare(workerData.chainSql.addLink),
  setHead: db.prepare(workerData.chainSql.setHead),
};
const deps = { hmac: require('node:crypto').createHmac, crc: require('node:zlib').crc32, chainLink, chainSign, insertPackedRows };
const tx = db.transaction((bytes, meta) =>
  chain ? commitChained(chainStmts, chain, workerData.rowsPerStatement, bytes, meta, deps) : insertPackedRows(one, many, workerData.rowsPerStatement, bytes, meta, workerData.chainColumn ? null : undefined));
const written = workerData.written;
parentPort.on('message', (m) => {
  if (m.close) { db.close(); parentPort.postMessage({ closed: true }); return; }
  try {
    const next = tx.immediate(Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength), m.meta);
    if (chain) Object.assign(chain, next);
    if (written) {
      Atomics.add(written, 0, (m.bytes.byteLength + 1023) >> 10);
      Atomics.notify(written, 0);
    }
    parentPort.postMessage({ id: m.id, ok: true });
    // Starting the WAL over (state[2]): 1 = the checkpointer copied all but the last batches of
    // a WAL grown past its size, so the rest is copied here, after the acknowledgement (SQLite
    // starts the WAL over only for a writer that begins with every frame copied); 2 = done, and
    // this batch's transaction started the WAL over, so the checkpointer may go on.
    const restart = written ? Atomics.load(written, 2) : 0;
    if (restart === 2) Atomics.store(written, 2, 0);
    else if (restart === 1) {
      const r = db.pragma('wal_checkpoint(PASSIVE)')[0];
      // Asked again after the next batch until a checkpoint copied everything.
      if (r.busy === 0 && r.checkpointed === r.log) Atomics.store(written, 2, 2);
    }
  } catch (e) {
    parentPort.postMessage({ id: m.id, ok: false, message: String((e && e.message) || e), code: e && e.code });
  }
});
`;

// Shared state with the checkpointer: [KiB committed by the writer (wraps), stop flag, restart request].
const CHECKPOINTER_SOURCE = `
const { workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { timeout: workerData.busyTimeoutMs });
db.pragma('synchronous = ' + workerData.synchronous);
const state = workerData.state;
let last = Atomics.load(state, 0);
for (;;) {
  if (Atomics.load(state, 1) !== 0) break;
  const now = Atomics.load(state, 0);
  // Until the writer has started the WAL over, a checkpoint here could keep it from doing so
  // (a reader beginning while a checkpoint copies cannot start the WAL over).
  if (Atomics.load(state, 2) === 0 && ((now - last) | 0) >= workerData.everyKiB) {
    last = now;
    // PASSIVE: copies what it can without waiting for (or blocking) the writer. Past
    // restartFrames it asks the writer to copy the few frames committed since and so restart the WAL.
    const r = db.pragma('wal_checkpoint(PASSIVE)')[0];
    if (r.busy === 0 && r.log >= workerData.restartFrames) Atomics.store(state, 2, 1);
    continue;
  }
  Atomics.wait(state, 0, now);
}
db.close();
`;

/**
 * What the audit worker needs: the database, its settings, and the two insert statements of
 * {@link insertPackedRows}.
 *
 * @example
 * ```ts
 * const o: SqliteAuditWorkerOptions = { path: 'a.db', synchronous: 'NORMAL', busyTimeoutMs: 10_000, walAutocheckpoint: 4000, insertSql, insertManySql, rowsPerStatement: 32 };
 * ```
 */
export interface SqliteAuditWorkerOptions {
  path: string;
  synchronous: string;
  busyTimeoutMs: number;
  walAutocheckpoint: number;
  insertSql: string;
  insertManySql: string;
  rowsPerStatement: number;
  /**
   * Run WAL checkpoints on a checkpointer thread each time about this many KiB of rows were
   * committed (the writer then checkpoints by itself only at `walAutocheckpoint`). Omitted:
   * no checkpointer; the writer checkpoints at `walAutocheckpoint`.
   */
  checkpointEveryKiB?: number;
  /** With a checkpointer: the WAL size (pages) past which the WAL is started over (default `walAutocheckpoint`). */
  restartWalAtFrames?: number;
  /** The chain key and the operator key's id: the worker then commits each batch as a link of its own chain. */
  chain?: { key: KeyObject; keyId: string };
  /** The insert statements bind a `chain_pos` value after each row's (null without `chain`). */
  chainColumn?: boolean;
}

/**
 * A client for the audit worker: `append(rows)` resolves once the rows are committed.
 *
 * @example
 * ```ts
 * const w = new SqliteAuditWorker(options); // SqliteAuditWorkerOptions
 * await w.append([packer.pack(values, bodyIndex, body)]);
 * await w.close();
 * ```
 */
export class SqliteAuditWorker {
  private readonly worker: Worker;
  private readonly checkpointer: Worker | undefined;
  private readonly checkpointState: Int32Array | undefined;
  private checkpointerExited: Promise<void> | undefined;
  private readonly pending = new Map<number, { resolve: () => void; reject: (e: unknown) => void }>();
  private nextId = 1;
  private dead: Error | undefined;
  private closing: Promise<void> | undefined;
  private idle: (() => void)[] = [];

  constructor(options: SqliteAuditWorkerOptions) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    let written: Int32Array | undefined;
    if (options.checkpointEveryKiB !== undefined) {
      this.checkpointState = written = new Int32Array(new SharedArrayBuffer(12));
      this.checkpointer = new Worker(CHECKPOINTER_SOURCE, {
        eval: true,
        workerData: {
          driver,
          path: options.path,
          busyTimeoutMs: options.busyTimeoutMs,
          synchronous: options.synchronous,
          everyKiB: options.checkpointEveryKiB,
          restartFrames: options.restartWalAtFrames ?? options.walAutocheckpoint,
          state: written,
        },
      });
      this.checkpointer.unref();
      const cp = this.checkpointer;
      this.checkpointerExited = new Promise<void>((resolve) => cp.once('exit', () => resolve()));
      // Without it the writer still checkpoints at walAutocheckpoint: nothing is lost but speed.
      this.checkpointer.on('error', () => {});
    }
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { ...options, driver, written, chainSql: CHAIN_SQL } });
    this.worker.on('message', (m: { id?: number; ok?: boolean; message?: string; code?: string }) => {
      if (m.id === undefined) return;
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) {
        this.worker.unref();
        for (const w of this.idle.splice(0)) w();
      }
      if (m.ok) p.resolve();
      else p.reject(new ToolEnvelopeError('store-failure', `sqlite appendAudit failed: ${m.message ?? 'unknown error'}${m.code ? ` (${m.code})` : ''}`));
    });
    const fail = (e: unknown): void => {
      this.dead = e instanceof Error ? e : new Error(String(e));
      for (const p of this.pending.values()) p.reject(new ToolEnvelopeError('store-failure', `sqlite audit worker failed: ${this.dead.message}`, { cause: e }));
      this.pending.clear();
      for (const w of this.idle.splice(0)) w();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => {
      if (!this.dead) fail(new Error(`audit worker exited with code ${code}`));
    });
    // After the 'message' listener: adding one refs the worker's port again, and a store that is
    // never closed would then keep the process alive. It is referenced only while a batch is in flight.
    this.worker.unref();
  }

  /** True while the worker can take batches. */
  get alive(): boolean {
    return this.dead === undefined && this.closing === undefined;
  }

  /** Commits packed rows in one transaction on the worker; resolves once committed. */
  append(rows: readonly PackedRow[]): Promise<void> {
    if (!this.alive)
      return Promise.reject(new ToolEnvelopeError('store-failure', `sqlite audit worker is unavailable${this.dead ? `: ${this.dead.message}` : ''}`));
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Keep the process alive while a batch is in flight: an acknowledged record must be committed.
      this.worker.ref();
      const { bytes, meta } = batchMessage(rows);
      this.worker.postMessage({ id, bytes, meta }, [bytes.buffer as ArrayBuffer, meta.buffer as ArrayBuffer]);
    });
  }

  private async stopCheckpointer(): Promise<void> {
    const cp = this.checkpointer;
    const state = this.checkpointState;
    if (!cp || !state) return;
    Atomics.store(state, 1, 1);
    Atomics.notify(state, 0);
    cp.ref();
    await this.checkpointerExited;
  }

  /** Waits for in-flight batches, closes the worker's connection and stops it. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.pending.size > 0) await new Promise<void>((r) => this.idle.push(r));
      if (this.dead) return this.stopCheckpointer();
      await new Promise<void>((resolve) => {
        this.worker.ref();
        this.worker.once('message', () => resolve());
        this.worker.once('exit', () => resolve());
        this.worker.postMessage({ close: true });
      });
      this.dead = new Error('closed');
      await this.worker.terminate();
      await this.stopCheckpointer();
    })();
    return this.closing;
  }
}
