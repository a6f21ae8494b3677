/**
 * One reader of a store's call feed: it keeps a position, reads forward on a short poll and when
 * the store signals a write, and hands every new row to `onRows` once. A process serving many live
 * views runs one reader and fans its rows out, so the store sees one indexed query per interval
 * however many people watch.
 *
 * On PostgreSQL a row may become visible after rows with a higher `seq` (its transaction took the
 * number first and committed last). The reader therefore keeps its position below the first
 * missing `seq` for the feed's `settleMs`, remembers what it delivered above it, and only then
 * takes the number for one that will never come (a rolled-back insert).
 */
import type { CallFeedTable, FeedCall } from './call-feed.js';

export interface CallFeedReaderOptions {
  /** Read at least this often (ms). */
  pollMs: number;
  /** Rows per read. */
  batch: number;
  /** Reads per wake-up at most, so a long backlog cannot hold the process. */
  maxReadsPerTick?: number;
  /**
   * After a read, the store's write signals wait this long (ms) for the next: a store signalling
   * every commit (PostgreSQL's NOTIFY) would otherwise cost a read, and a write to every stream,
   * per commit. Default 0 (a signal reads at once).
   */
  signalGapMs?: number;
  onRows(rows: FeedCall[]): void;
  /** A failed read (the reader tries again at the next poll). */
  onError?(e: unknown): void;
  now?(): number;
}

/** Reads a feed forward from a position. */
export class CallFeedReader {
  /** Every row with `seq <= low` was delivered or given up for. */
  private low = 0;
  /** What was delivered above `low`. */
  private readonly seen = new Set<number>();
  private gap: { at: number; since: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopWatching: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** When the last read started (the reader's clock). */
  private lastRead = Number.NEGATIVE_INFINITY;
  /** A signalled read, waiting out `signalGapMs`. */
  private signalTimer: NodeJS.Timeout | undefined;
  private stopped = true;

  constructor(
    private readonly feed: CallFeedTable,
    private readonly options: CallFeedReaderOptions,
  ) {}

  /** The highest `seq` below which every row was delivered (or given up for). */
  get position(): number {
    return this.low;
  }

  /** The highest `seq` delivered so far. */
  get newest(): number {
    let top = this.low;
    for (const s of this.seen) if (s > top) top = s;
    return top;
  }

  start(from: number): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.low = from;
    this.seen.clear();
    this.gap = undefined;
    this.timer = setInterval(() => this.wake(), this.options.pollMs);
    this.timer.unref();
    this.stopWatching = this.feed.watch?.(() => this.signalled());
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.stopWatching?.();
    this.stopWatching = undefined;
    if (this.signalTimer) clearTimeout(this.signalTimer);
    this.signalTimer = undefined;
  }

  /** Reads now (or right after the read under way). */
  wake(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.lastRead = this.now();
    this.running = this.tick().finally(() => {
      this.running = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        void this.wake();
      }
    });
    return this.running;
  }

  /** The store signalled a write: read now, or once `signalGapMs` has passed since the last read. */
  private signalled(): void {
    if (this.signalTimer) return;
    const wait = this.lastRead + (this.options.signalGapMs ?? 0) - this.now();
    if (wait <= 0) {
      void this.wake();
      return;
    }
    this.signalTimer = setTimeout(() => {
      this.signalTimer = undefined;
      void this.wake();
    }, wait);
    this.signalTimer.unref();
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  private async tick(): Promise<void> {
    const max = this.options.maxReadsPerTick ?? 8;
    for (let i = 0; i < max && !this.stopped; i++) {
      let rows: FeedCall[];
      try {
        rows = await this.feed.after(this.low, this.options.batch);
      } catch (e) {
        this.options.onError?.(e);
        return;
      }
      if (this.stopped) return;
      const fresh = rows.filter((r) => !this.seen.has(r.seq));
      for (const r of fresh) this.seen.add(r.seq);
      if (fresh.length > 0) this.options.onRows(fresh);
      this.advance();
      // A short page: nothing more yet. A full page of rows already delivered: held behind a gap.
      if (rows.length < this.options.batch || fresh.length === 0) return;
    }
  }

  private advance(): void {
    for (;;) {
      while (this.seen.delete(this.low + 1)) this.low++;
      if (this.seen.size === 0) {
        this.gap = undefined;
        return;
      }
      const now = this.now();
      if (this.gap?.at !== this.low + 1) {
        this.gap = { at: this.low + 1, since: now };
        if (this.feed.settleMs > 0) return;
      } else if (now - this.gap.since < this.feed.settleMs) return;
      // Given up for: move to just below the lowest row delivered above the gap.
      let lowest = Number.POSITIVE_INFINITY;
      for (const s of this.seen) if (s < lowest) lowest = s;
      this.low = lowest - 1;
      this.gap = undefined;
    }
  }
}
