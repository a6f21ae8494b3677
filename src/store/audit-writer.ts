/**
 * The audit writer: batches audit records into few transactions so that recording a call costs
 * the caller almost nothing. The queue is bounded: when it is full, `submit` waits (back-pressure)
 * instead of growing memory without limit. A record is *acknowledged* when its `committed`
 * promise resolves, which happens only after the store committed it durably.
 */
import { ToolEnvelopeError } from 'tool-envelope/core';
import { createRedactor, type RedactionOptions } from './redact.js';
import { copyAuditRecord, freezeAuditRecord } from './audit-body.js';
import type { AuditRecord, Store } from './types.js';

/**
 * When a logged record counts as done for the caller ({@link AuditWriter.log}): `before-answer`
 * (default) once it is durably committed, so a call answers only after its record is in the
 * store; `background` once it is queued, which answers sooner but loses the last records when the
 * process dies.
 */
export type AuditCommitMode = 'before-answer' | 'background';

export interface AuditWriterOptions {
  /** What {@link AuditWriter.log} waits for (default `before-answer`: the commit). */
  commit?: AuditCommitMode;
  /**
   * Redaction of secrets before a record is stored (default: on, see `redact.ts`), with extra
   * JSON pointers per tool; `false` stores records as given and marks them `redaction: { off: true }`.
   */
  redact?: RedactionOptions | false;
  /** Most records queued or being written at once; `submit` waits beyond it (default 10 000). */
  maxQueue?: number;
  /** Most records per transaction (default 1 000). */
  maxBatch?: number;
  /**
   * Most batches handed to the store and not yet committed (default 4). More than two keep a
   * store that commits on another thread busy while this thread is busy too: a thread running
   * calls sees each acknowledgement late, and only then hands over the next batch. The queue
   * bound (`maxQueue`) counts these batches' records as well.
   */
  maxInFlightBatches?: number;
  /**
   * Called for every record that could not be written (after the batch was retried one by one).
   * The record is rebuilt from what was serialised at submit (equal in content to the record as
   * submitted, not the same object).
   */
  onError?: (error: unknown, record: AuditRecord) => void;
}

/**
 * What a store may offer the writer to keep queued records small: `prepareAudit` validates and
 * serialises a record into the store's row form when it is submitted, `appendPreparedAudit`
 * commits such rows, and `auditFromPrepared` turns a row back into a record (for `onError`).
 * The SQLite and PostgreSQL stores implement it; other stores get whole records.
 */
export interface PreparedAuditSink {
  prepareAudit(record: AuditRecord): unknown;
  /**
   * `waited`: callers wait on this commit (`before-answer`), so the store may commit it on the
   * calling thread rather than hand it to a thread of its own (the SQLite store does for small
   * batches, see store/sqlite/commit-here.ts).
   */
  appendPreparedAudit(rows: readonly unknown[], options?: { waited?: boolean }): Promise<void>;
  auditFromPrepared(row: unknown): AuditRecord;
  /**
   * True when the store commits the batches handed to it while one commits together (the SQLite
   * writer thread's group commit): the writer then hands over what was queued at once, up to
   * `maxInFlightBatches`, instead of holding it until the batch in flight is acknowledged.
   */
  readonly pipelined?: boolean;
}

/**
 * What a caller of {@link AuditWriter.log} may tell the writer about a record. `alone`: no other
 * record is on its way to join it in a batch (the governance pipeline says so when it runs one
 * call at a time), so a store that commits waited-on batches on the calling thread commits it at
 * once rather than after the event-loop turn, which gathers concurrent calls' records into one
 * commit. Only when it commits, never whether: both ways it is committed before `log` resolves.
 */
export interface AuditLogOptions {
  alone?: boolean;
}

interface Entry {
  /** The record, or its prepared row when the store takes rows. */
  item: unknown;
  resolve: () => void;
  reject: (e: unknown) => void;
  /** The promise `resolve`/`reject` settle (the caller's `committed`). */
  committed: Promise<void>;
}

const ignore = (): void => {};

function isPreparedSink(store: object): store is PreparedAuditSink {
  const s = store as Partial<PreparedAuditSink>;
  return typeof s.prepareAudit === 'function' && typeof s.appendPreparedAudit === 'function' && typeof s.auditFromPrepared === 'function';
}

/** Batched asynchronous audit writes with a bounded queue. */
export class AuditWriter {
  private readonly maxQueue: number;
  private readonly maxBatch: number;
  private readonly maxInFlightBatches: number;
  private readonly onError: AuditWriterOptions['onError'];
  /** What {@link log} waits for. */
  readonly commitMode: AuditCommitMode;
  private readonly sink: PreparedAuditSink | undefined;
  private readonly redact: (record: AuditRecord) => AuditRecord;
  /** What the store is told of each batch: whether callers wait on its commit. */
  private readonly waited: { waited: boolean };
  private queue: Entry[] = [];
  private inFlight = 0;
  private draining = false;
  private scheduled = false;
  private closed = false;
  /** The next batch goes to the store without the group-commit turn (see drain and schedule). */
  private atOnce = false;
  /** Wakes a drain that waits on a commit when records are queued (see {@link PreparedAuditSink.pipelined}). */
  private wake: (() => void) | undefined;
  private spaceWaiters: (() => void)[] = [];
  private idleWaiters: (() => void)[] = [];
  /** Records committed so far. */
  written = 0;
  /** Records that failed to be written. */
  failed = 0;

  constructor(
    private readonly store: Pick<Store, 'appendAudit'>,
    options: AuditWriterOptions = {},
  ) {
    this.maxQueue = options.maxQueue ?? 10_000;
    this.maxBatch = options.maxBatch ?? 1_000;
    this.maxInFlightBatches = options.maxInFlightBatches ?? 4;
    this.onError = options.onError;
    this.commitMode = options.commit ?? 'before-answer';
    if (this.commitMode !== 'before-answer' && this.commitMode !== 'background') {
      throw new ToolEnvelopeError('invalid-option', `commit must be before-answer or background, got ${String(this.commitMode)}`);
    }
    this.sink = isPreparedSink(store) ? store : undefined;
    this.waited = { waited: this.commitMode === 'before-answer' };
    this.redact = createRedactor(options.redact ?? {});
    if (!Number.isInteger(this.maxQueue) || this.maxQueue < 1) throw new ToolEnvelopeError('invalid-option', 'maxQueue must be a positive integer');
    if (!Number.isInteger(this.maxBatch) || this.maxBatch < 1) throw new ToolEnvelopeError('invalid-option', 'maxBatch must be a positive integer');
    if (!Number.isInteger(this.maxInFlightBatches) || this.maxInFlightBatches < 1) {
      throw new ToolEnvelopeError('invalid-option', 'maxInFlightBatches must be a positive integer');
    }
  }

  /** Records queued or being written. */
  get pending(): number {
    return this.queue.length + this.inFlight;
  }

  /**
   * Queues a record, waiting while the queue is full. Resolves once queued with `committed`,
   * which resolves when the record is durably stored (or rejects when it cannot be).
   */
  async submit(record: AuditRecord, options?: AuditLogOptions): Promise<{ committed: Promise<void> }> {
    while (this.pending >= this.maxQueue && !this.closed) await new Promise<void>((r) => this.spaceWaiters.push(r));
    if (this.closed) throw new ToolEnvelopeError('closed', 'audit writer is closed');
    let resolve!: () => void;
    let reject!: (e: unknown) => void;
    const committed = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    let item: unknown;
    // Serialised now, so what is written is the record as submitted. With a row-taking store the
    // queue then holds one string per record rather than its object graph, which would otherwise
    // outlive young-generation GCs while it waits.
    try {
      const stored = this.redact(record);
      item = this.sink ? this.sink.prepareAudit(stored) : freezeAuditRecord(stored);
    } catch (e) {
      this.fail({ item: record, resolve, reject, committed }, e, record);
      return { committed };
    }
    this.queue.push({ item, resolve, reject, committed });
    this.schedule(options?.alone === true);
    return { committed };
  }

  /** Queues a record and resolves once it is durably committed (acknowledged). */
  async record(record: AuditRecord): Promise<void> {
    const { committed } = await this.submit(record);
    return committed;
  }

  /**
   * Logs a record per the commit mode: resolves once it is durably committed (`before-answer`;
   * concurrent records share one commit) or once it is queued (`background`). A record that
   * cannot be written goes to `onError` (then `log` resolves) or, without one, rejects `log`
   * (`before-answer`); a closed writer always rejects. `options.alone`: see {@link AuditLogOptions}.
   */
  async log(record: AuditRecord, options?: AuditLogOptions): Promise<void> {
    const { committed } = await this.submit(record, options);
    if (this.commitMode === 'background') return;
    if (!this.onError) return committed;
    return committed.catch(ignore);
  }

  /** Resolves when everything submitted so far has been written (or has failed). */
  flush(): Promise<void> {
    if (this.pending === 0 && !this.draining) return Promise.resolve();
    return new Promise<void>((r) => this.idleWaiters.push(r));
  }

  /** Flushes, then refuses further records. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    for (const w of this.spaceWaiters.splice(0)) w();
  }

  private schedule(alone = false): void {
    // A record nobody else's can join (one call at a time), waited on, for a store that commits
    // such a batch on this thread at once (see drain): committed as soon as the caller's
    // synchronous work is done, not after the rest of the event-loop turn (a tick for each of a
    // call's two records). Pays for `SQLite log added latency, one call at a time (HTTP)` (figures in
    // bench/README.md); reference: `useReferenceAuditCommits(true)` (`pipelined` false).
    const now = alone && this.queue.length === 1 && this.waited.waited && this.sink?.pipelined === true;
    if (this.draining) {
      if (now) this.atOnce = true;
      this.wake?.();
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    const run = (): void => {
      this.scheduled = false;
      void this.drain();
    };
    if (now) queueMicrotask(run);
    // setImmediate lets the records of concurrent calls accumulate into one batch.
    else setImmediate(run);
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    const writing = new Set<Promise<void>>();
    // The first batch of a drain holds what one event-loop turn queued (this drain starts from a
    // setImmediate, see schedule). A store that commits the small batches callers wait on while
    // they wait, on this thread (SQLite, see store/sqlite/commit-here.ts), commits it at once:
    // waiting one more turn for a bigger batch cost each call that turn, twice (its started
    // record, then its outcome). Pays for `gateway (audit commit)`, `stdio, SQLite: commit before
    // answer, median latency` (one at a time and 32 in flight); reference:
    // `useReferenceAuditCommits(true)`, under which the store reports `pipelined` false.
    if (this.waited.waited && this.sink?.pipelined === true) this.atOnce = true;
    try {
      while (this.queue.length > 0 || writing.size > 0) {
        if (this.queue.length === 0 || writing.size >= this.maxInFlightBatches) {
          // A store that merges what it is handed while it commits gets new records at once: the
          // acknowledgement of the batch in flight reaches a thread busy with calls late, and the
          // store would idle until then. Pays for `gateway (audit commit)`, `stdio, SQLite: commit
          // before answer, median latency, 32 in flight`; reference: `useReferenceAuditCommits(true)`.
          if (writing.size < this.maxInFlightBatches && this.sink?.pipelined === true) {
            await Promise.race([...writing, new Promise<void>((r) => (this.wake = r))]);
            this.wake = undefined;
          } else await Promise.race(writing);
          continue;
        }
        // Group commit: give producers one event-loop turn to queue more records, so that a
        // synchronous driver commits big batches instead of one transaction per few records.
        if (this.atOnce) this.atOnce = false;
        else if (this.queue.length < this.maxBatch) await new Promise<void>((r) => setImmediate(r));
        const batch = this.queue.splice(0, this.maxBatch);
        if (batch.length === 0) continue;
        this.inFlight += batch.length;
        // Several batches in flight let the next ones wait at the store while one commits.
        const w: Promise<void> = this.write(batch).finally(() => {
          this.inFlight -= batch.length;
          writing.delete(w);
          for (const s of this.spaceWaiters.splice(0)) s();
        });
        writing.add(w);
      }
    } finally {
      this.draining = false;
      if (this.queue.length > 0) this.schedule();
      else for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  private append(items: unknown[]): Promise<void> {
    return this.sink ? this.sink.appendPreparedAudit(items, this.waited) : this.store.appendAudit(items as AuditRecord[]);
  }

  private async write(batch: Entry[]): Promise<void> {
    try {
      await this.append(batch.map((e) => e.item));
      this.written += batch.length;
      for (const e of batch) e.resolve();
      return;
    } catch (e) {
      if (batch.length === 1) {
        this.fail(batch[0] as Entry, e);
        return;
      }
    }
    // One bad record must not sink its neighbours: retry one by one.
    for (const entry of batch) {
      try {
        await this.append([entry.item]);
        this.written++;
        entry.resolve();
      } catch (e) {
        this.fail(entry, e);
      }
    }
  }

  private fail(entry: Entry, error: unknown, record?: AuditRecord): void {
    this.failed++;
    try {
      if (this.onError) this.onError(error, record ?? (this.sink ? this.sink.auditFromPrepared(entry.item) : copyAuditRecord(entry.item as AuditRecord)));
    } catch {
      // A throwing error callback (or a row that cannot be read back) must not stop the writer.
    }
    // Callers that only care about back-pressure may drop `committed`; failures also reach
    // onError. Marked handled only when it fails: a handler on every record's promise would be
    // one more promise per queued record for the GC to copy while it waits.
    void entry.committed.catch(ignore);
    entry.reject(error);
  }
}
