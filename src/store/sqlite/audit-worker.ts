/**
 * Audit appends on a worker thread: the worker owns its own connection to the database file and
 * commits each batch there, so SQLite's insert work never runs on the thread that serves calls.
 * A batch is acknowledged only after the worker's COMMIT returned.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { ToolEnvelopeError } from '../../core/index.js';
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
const tx = db.transaction((bytes, meta) => insertPackedRows(one, many, workerData.rowsPerStatement, bytes, meta));
parentPort.on('message', (m) => {
  if (m.close) { db.close(); parentPort.postMessage({ closed: true }); return; }
  try {
    tx.immediate(Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength), m.meta);
    parentPort.postMessage({ id: m.id, ok: true });
  } catch (e) {
    parentPort.postMessage({ id: m.id, ok: false, message: String((e && e.message) || e), code: e && e.code });
  }
});
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
  private readonly pending = new Map<number, { resolve: () => void; reject: (e: unknown) => void }>();
  private nextId = 1;
  private dead: Error | undefined;
  private closing: Promise<void> | undefined;
  private idle: (() => void)[] = [];

  constructor(options: SqliteAuditWorkerOptions) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { ...options, driver } });
    this.worker.unref();
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
  }

  /** True while the worker can take batches. */
  get alive(): boolean {
    return this.dead === undefined && this.closing === undefined;
  }

  /** Commits packed rows in one transaction on the worker; resolves once committed. */
  append(rows: readonly PackedRow[]): Promise<void> {
    if (!this.alive) return Promise.reject(new ToolEnvelopeError('store-failure', `sqlite audit worker is unavailable${this.dead ? `: ${this.dead.message}` : ''}`));
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Keep the process alive while a batch is in flight: an acknowledged record must be committed.
      this.worker.ref();
      const { bytes, meta } = batchMessage(rows);
      this.worker.postMessage({ id, bytes, meta }, [bytes.buffer as ArrayBuffer, meta.buffer as ArrayBuffer]);
    });
  }

  /** Waits for in-flight batches, closes the worker's connection and stops it. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.pending.size > 0) await new Promise<void>((r) => this.idle.push(r));
      if (this.dead) return;
      await new Promise<void>((resolve) => {
        this.worker.ref();
        this.worker.once('message', () => resolve());
        this.worker.once('exit', () => resolve());
        this.worker.postMessage({ close: true });
      });
      this.dead = new Error('closed');
      await this.worker.terminate();
    })();
    return this.closing;
  }
}
