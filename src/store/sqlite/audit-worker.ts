/**
 * Audit appends on a worker thread, so SQLite's insert work never runs on the thread serving calls; a
 * batch is acknowledged once its COMMIT returned. WAL checkpoints run on a second thread (a checkpoint
 * waits for fsync, which stalled every batch on the writer), woken by the WAL bytes the writer counts in
 * shared memory; the writer's own automatic checkpoint stays on, larger, as a bound.
 */
import { Worker } from 'node:worker_threads';
import { ToolEnvelopeError } from 'tool-envelope/core';
import { CHECKPOINT, type AuditThreadData, type CheckpointThreadData, type FromAuditThread, type ToAuditThread } from './audit-protocol.js';
import { batchMessage, type PackedRow } from './packed-rows.js';
import { stopCheckpoints } from './checkpoint-loop.js';

/**
 * Starts a thread of this folder. The built package starts the compiled entry file; run from the
 * TypeScript sources (tests, tsx), the `.ts` entry is loaded through tsx (a dev dependency) by a
 * small bootstrap in test-support.
 */
function startThread(entry: URL, workerData: AuditThreadData | CheckpointThreadData): Worker {
  // None of the host's Node options: they are about its own entry (`--input-type`, `-e`) and
  // preloads (`--import tsx`, instrumentation), which would break or slow down a thread that runs
  // only this folder's code (V8 options are per process anyway).
  const execArgv: string[] = [];
  if (!import.meta.url.endsWith('.ts')) return new Worker(entry, { workerData, execArgv });
  const source = new URL(entry.href.replace(/\.js$/, '.ts'));
  return new Worker(new URL('./test-support/ts-thread.mjs', import.meta.url), { workerData: { ...workerData, entry: source.href }, execArgv });
}

let mergeQueued = true;

/**
 * Makes audit workers started from now on commit each batch in a transaction of its own (the
 * reference of the writer thread's group commit, see audit-thread.ts), or again merge the small
 * batches queued at the thread (`false`, the default).
 */
export function useReferenceAuditCommits(on: boolean): void {
  mergeQueued = !on;
}

/**
 * What the audit worker needs: the database, its settings, and the SQL of the one-row and
 * `rowsPerStatement`-row inserts that {@link insertPackedRows} runs (see `RowInserts`).
 */
export interface SqliteAuditWorkerOptions extends Omit<AuditThreadData, 'checkpoint'> {
  /**
   * Run WAL checkpoints on a checkpointer thread each time about this many KiB of rows were
   * committed (the writer then checkpoints by itself only at `walAutocheckpoint`). Omitted:
   * no checkpointer; the writer checkpoints at `walAutocheckpoint`.
   */
  checkpointEveryKiB?: number;
  /** With a checkpointer: the WAL size (pages) past which the WAL is started over (default `walAutocheckpoint`). */
  restartWalAtFrames?: number;
}

/** A client for the audit worker: `append(rows)` resolves once the rows are committed. */
export class SqliteAuditWorker {
  private readonly worker: Worker;
  private readonly checkpointer: Worker | undefined;
  private readonly checkpointState: Int32Array | undefined;
  private readonly checkpointEveryKiB: number;
  private checkpointerExited: Promise<void> | undefined;
  private readonly pending = new Map<number, { resolve: () => void; reject: (e: unknown) => void }>();
  private nextId = 1;
  private dead: Error | undefined;
  private closing: Promise<void> | undefined;
  private idle: (() => void)[] = [];
  /** Transactions committed so far (several batches may share one, see audit-thread.ts). */
  transactions = 0;
  /** True when the thread commits the small batches queued at it together (not the reference). */
  readonly merges: boolean;

  constructor(options: SqliteAuditWorkerOptions) {
    const { checkpointEveryKiB, restartWalAtFrames, ...thread } = options;
    this.checkpointEveryKiB = checkpointEveryKiB ?? 0;
    let shared: Int32Array | undefined;
    if (checkpointEveryKiB !== undefined) {
      this.checkpointState = shared = new Int32Array(new SharedArrayBuffer(CHECKPOINT.LENGTH * 4));
      this.checkpointer = startThread(new URL('./checkpoint-thread.js', import.meta.url), {
        path: options.path,
        busyTimeoutMs: options.busyTimeoutMs,
        synchronous: options.synchronous,
        everyKiB: checkpointEveryKiB,
        restartFrames: restartWalAtFrames ?? options.walAutocheckpoint,
        state: shared,
      });
      this.checkpointer.unref();
      const cp = this.checkpointer;
      this.checkpointerExited = new Promise<void>((resolve) => cp.once('exit', () => resolve()));
      // Without it the writer still checkpoints at walAutocheckpoint: nothing is lost but speed.
      this.checkpointer.on('error', () => {});
    }
    this.merges = mergeQueued;
    this.worker = startThread(new URL('./audit-thread.js', import.meta.url), {
      mergeQueued,
      ...thread,
      ...(shared && { checkpoint: shared, checkpointEveryKiB }),
    });
    this.worker.on('message', (m: FromAuditThread) => {
      if (m.type === 'closed') return;
      if (m.type === 'committed') {
        this.transactions++;
        for (const id of m.ids) this.settle(id)?.resolve();
      } else
        this.settle(m.id)?.reject(
          new ToolEnvelopeError('store-failure', `sqlite appendAudit failed: ${m.message ?? 'unknown error'}${m.code ? ` (${m.code})` : ''}`),
        );
    });
    const fail = (e: unknown): void => {
      this.dead = e instanceof Error ? e : new Error(String(e));
      // Nothing is lost (the store commits on the calling thread instead), but it should not go unnoticed.
      if (this.closing === undefined) {
        process.emitWarning(
          `tool-envelope: the SQLite audit worker stopped (${this.dead.message}); audit batches are committed on the calling thread`,
          'ToolEnvelopeWarning',
        );
      }
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

  /** Takes a batch's callbacks out of the pending ones (undefined when unknown). */
  private settle(id: number): { resolve: () => void; reject: (e: unknown) => void } | undefined {
    const p = this.pending.get(id);
    if (!p) return undefined;
    this.pending.delete(id);
    if (this.pending.size === 0) {
      this.worker.unref();
      for (const w of this.idle.splice(0)) w();
    }
    return p;
  }

  /** True when no batch is in flight: everything handed over so far is committed (or failed). */
  get settled(): boolean {
    return this.pending.size === 0;
  }

  /**
   * The state shared with the checkpointer (undefined without one). Any other connection of this
   * process that commits audit rows keeps it too (see audit-commit.ts), or the checkpointer would
   * not know the WAL grew.
   */
  get checkpointShared(): Int32Array | undefined {
    return this.checkpointState;
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
      const message: ToAuditThread = { type: 'batch', id, bytes, meta };
      this.worker.postMessage(message, [bytes.buffer as ArrayBuffer, meta.buffer as ArrayBuffer]);
    });
  }

  /**
   * Resolves once the checkpointer has done all it will for what was committed so far (it sleeps
   * until more is): what a test waits on to see the WAL's size as the checkpoints leave it.
   */
  async checkpointerIdle(): Promise<void> {
    const state = this.checkpointState;
    if (!state) return;
    for (;;) {
      const seen = Atomics.load(state, CHECKPOINT.SEEN);
      const last = Atomics.load(state, CHECKPOINT.LAST);
      if (seen === Atomics.load(state, CHECKPOINT.KIB) || this.dead) return;
      // Asleep since its last checkpoint (SEEN at or past LAST) with less than everyKiB written
      // since: the writer does not wake it for that, and it would find nothing to do.
      if (((seen - last) | 0) >= 0 && ((Atomics.load(state, CHECKPOINT.KIB) - last) | 0) < this.checkpointEveryKiB) return;
      // Atomics.waitAsync is not in the TypeScript lib this project targets (ES2022).
      const w = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number, t: number): { async: boolean; value: unknown } }).waitAsync(
        state,
        CHECKPOINT.SEEN,
        seen,
        100,
      );
      if (w.async) await w.value;
    }
  }

  private async stopCheckpointer(): Promise<void> {
    const cp = this.checkpointer;
    const state = this.checkpointState;
    if (!cp || !state) return;
    stopCheckpoints(state);
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
        this.worker.postMessage({ type: 'close' } satisfies ToAuditThread);
      });
      this.dead = new Error('closed');
      await this.worker.terminate();
      await this.stopCheckpointer();
    })();
    return this.closing;
  }
}
