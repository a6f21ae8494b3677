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
 *
 * @example
 * ```ts
 * const mode: AuditCommitMode = 'background';
 * ```
 */
export type AuditCommitMode = 'before-answer' | 'background';

/**
 * Options of {@link AuditWriter}.
 *
 * @example
 * ```ts
 * const o: AuditWriterOptions = { maxQueue: 10_000, maxBatch: 1_000 };
 * ```
 */
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
 *
 * @example
 * ```ts
 * const sink = store as Partial<PreparedAuditSink>;
 * if (sink.prepareAudit) await sink.appendPreparedAudit!([sink.prepareAudit(record)]);
 * ```
 */
export interface PreparedAuditSink {
  prepareAudit(record: AuditRecord): unknown;
  appendPreparedAudit(rows: readonly unknown[]): Promise<void>;
  auditFromPrepared(row: unknown): AuditRecord;
  /**
   * True when the store commits the batches handed to it while one commits together (the SQLite
   * writer thread's group commit): the writer then hands over what was queued at once, up to
   * `maxInFlightBatches`, instead of holding it until the batch in flight is acknowledged.
   */
  readonly pipelined?: boolean;
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

let groupWaits = true;

/**
 * Makes audit writers created from now on hand records to an idle store at the end of the
 * event-loop turn they were queued in, whatever other calls are under way (the reference of the
 * group wait, see {@link AuditWriter.beginCall}), or again wait for those calls' records (`false`,
 * the default).
 *
 * @example
 * ```ts
 * useReferenceAuditGroupWait(true); // tests run the writer under the reference, then:
 * useReferenceAuditGroupWait(false);
 * ```
 */
export function useReferenceAuditGroupWait(on: boolean): void {
  groupWaits = !on;
}

function isPreparedSink(store: object): store is PreparedAuditSink {
  const s = store as Partial<PreparedAuditSink>;
  return typeof s.prepareAudit === 'function' && typeof s.appendPreparedAudit === 'function' && typeof s.auditFromPrepared === 'function';
}

/**
 * Batched asynchronous audit writes with a bounded queue.
 *
 * @example
 * ```ts
 * const writer = new AuditWriter(store);
 * await writer.record(auditRecord);            // resolves once durably committed
 * const { committed } = await writer.submit(r); // resolves once queued; `committed` once durable
 * await writer.close();
 * ```
 */
export class AuditWriter {
  private readonly maxQueue: number;
  private readonly maxBatch: number;
  private readonly maxInFlightBatches: number;
  private readonly onError: AuditWriterOptions['onError'];
  /** What {@link log} waits for. */
  readonly commitMode: AuditCommitMode;
  private readonly sink: PreparedAuditSink | undefined;
  private readonly redact: (record: AuditRecord) => AuditRecord;
  private queue: Entry[] = [];
  /** Batches handed to the store and not yet acknowledged. */
  private readonly writing = new Set<Promise<void>>();
  /** Waits for the records of calls under way before an idle store commits (see {@link beginCall}); false: the reference. */
  private readonly groupWait: boolean;
  /** Calls under way that will log a record ({@link beginCall}). */
  private calls = 0;
  /** Ends a group wait early: every call under way has its record queued. */
  private groupReady: (() => void) | undefined;
  private inFlight = 0;
  private draining = false;
  private scheduled = false;
  private closed = false;
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
    this.groupWait = groupWaits && this.commitMode === 'before-answer';
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
  async submit(record: AuditRecord): Promise<{ committed: Promise<void> }> {
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
    // A full batch goes without waiting for more.
    if (this.groupReady !== undefined && (!this.expectsMore() || this.queue.length >= this.maxBatch)) this.groupReady();
    this.schedule();
    return { committed };
  }

  /**
   * Counts a call under way that will log records with {@link log}, until {@link endCall}: before an
   * idle store commits a few records, a `before-answer` writer waits (at most a timer tick, about 1
   * ms) for the records of the other calls under way that are not waiting on a commit already, so
   * that concurrent calls share one transaction instead of each paying its own (every commit
   * rewrites about ten pages). One call at a time never waits.
   *
   * @example
   * ```ts
   * writer.beginCall();
   * try { await writer.log(started); await run(); await writer.log(outcome); } finally { writer.endCall(); }
   * ```
   */
  beginCall(): void {
    this.calls++;
  }

  /**
   * Ends a call counted by {@link beginCall}.
   *
   * @example
   * ```ts
   * writer.endCall();
   * ```
   */
  endCall(): void {
    this.calls--;
    if (this.groupReady !== undefined && !this.expectsMore()) this.groupReady();
  }

  /** True while some call under way may still queue a record: one not waiting on its own. */
  private expectsMore(): boolean {
    return this.calls > this.queue.length + this.inFlight;
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
   * (`before-answer`); a closed writer always rejects.
   */
  async log(record: AuditRecord): Promise<void> {
    const { committed } = await this.submit(record);
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

  private schedule(): void {
    if (this.draining) {
      this.wake?.();
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    // setImmediate lets the records of concurrent calls accumulate into one batch.
    setImmediate(() => {
      this.scheduled = false;
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    const writing = this.writing;
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
        if (this.queue.length < this.maxBatch) await new Promise<void>((r) => setImmediate(r));
        // An idle store would commit these few records alone while other calls are about to log
        // theirs: wait for them (see beginCall). Pays for `gateway (audit commit)`, `stdio, SQLite:
        // commit before answer, median latency, 32 in flight`; reference: `useReferenceAuditGroupWait(true)`.
        if (this.groupWait && writing.size === 0 && this.queue.length < this.maxBatch && this.expectsMore()) await this.waitForGroup();
        const batch = this.queue.splice(0, this.maxBatch);
        if (batch.length === 0) continue;
        this.dispatch(batch);
      }
    } finally {
      this.draining = false;
      if (this.queue.length > 0) this.schedule();
      else for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  /** Resolves after a timer tick, or sooner once every call under way has queued its record. */
  private waitForGroup(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.groupReady?.(), 0);
      this.groupReady = () => {
        this.groupReady = undefined;
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Hands a batch to the store; several batches in flight let the next ones wait at the store while one commits. */
  private dispatch(batch: Entry[]): void {
    this.inFlight += batch.length;
    const w: Promise<void> = this.write(batch).finally(() => {
      this.inFlight -= batch.length;
      this.writing.delete(w);
      for (const s of this.spaceWaiters.splice(0)) s();
    });
    this.writing.add(w);
  }

  private append(items: unknown[]): Promise<void> {
    return this.sink ? this.sink.appendPreparedAudit(items) : this.store.appendAudit(items as AuditRecord[]);
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
