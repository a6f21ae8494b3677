/**
 * The live calls stream's fan-out: one reader of the store's call feed per console (one indexed
 * query per interval, woken by PostgreSQL's NOTIFY), its rows sent as server-sent events to every
 * subscriber whose identity may see them and whose filters match. Bounded: at most
 * `maxSubscribers` streams, and a stream whose client does not keep up (more than `maxBufferBytes`
 * unsent) is closed rather than buffered; its EventSource reconnects with `Last-Event-ID` and gets
 * at most `catchUp` rows it missed (the newest, after a `skipped` event when there were more). A `ready` event
 * says the stream is live: every call committed after it reaches the stream.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PRINCIPAL_KINDS } from 'tool-envelope/core';
import { auditFilterFrom } from '../store/audit-filter.js';
import { AUDIT_STATUSES } from '../store/query.js';
import type { FeedCall } from '../store/call-feed.js';
import { CallFeedReader } from '../store/call-feed-reader.js';
import type { Store } from '../store/types.js';
import { CSP } from './headers.js';
import { type ConsoleIdentity, principalName } from './identity.js';
import { marked } from './inert.js';
import { visibleTo } from './tenancy.js';

/**
 * A stream's filters (each exact; absent: any).
 *
 * @example
 * ```ts
 * const f: LiveFilter = { tool: 'delete_item', status: 'error' };
 * ```
 */
export interface LiveFilter {
  tool?: string;
  /** `started` for calls starting, or an outcome status. */
  status?: string;
  category?: string;
  /** `kind:id` of any principal of the call's chain. */
  principal?: string;
}

/**
 * Options of {@link LiveHub}.
 *
 * @example
 * ```ts
 * new LiveHub(store, { maxSubscribers: 50 });
 * ```
 */
export interface LiveHubOptions {
  maxSubscribers?: number;
  maxBufferBytes?: number;
  /** Rows a reconnecting stream may catch up on. */
  catchUp?: number;
  /** The feed's poll (ms); default 200 on SQLite and in memory, 1 000 on PostgreSQL (NOTIFY wakes it sooner). */
  pollMs?: number;
  heartbeatMs?: number;
}

interface Subscriber {
  who: ConsoleIdentity;
  filter: LiveFilter;
  res: ServerResponse;
  /** What the stream shows (who may see which calls, and its filters): streams of one view get the same bytes. */
  view: string;
  /** Rows that came while the stream caught up, sent after it. */
  held: FeedCall[] | undefined;
}

const FILTER_KEYS = ['tool', 'status', 'category', 'principal'] as const;

/**
 * The filters of a stream's query (each cut to 200 characters).
 *
 * @example
 * ```ts
 * liveFilterOf(new URLSearchParams('tool=a')); // { tool: 'a' }
 * ```
 */
export function liveFilterOf(query: URLSearchParams): LiveFilter {
  const f: LiveFilter = {};
  for (const k of FILTER_KEYS) {
    const v = query.get(k)?.trim();
    if (v) f[k] = v.slice(0, 200);
  }
  return f;
}

/** The statuses a feed row has: `started` for a call starting, else its outcome's. */
const LIVE_STATUSES = ['started', ...AUDIT_STATUSES];

/**
 * What is wrong with a stream's filters, said as the audit list says it, or `undefined`: a value
 * that can never match would leave the stream empty with no word why.
 *
 * @example
 * ```ts
 * liveFilterError({ status: 'bogus' }); // "unknown status 'bogus' (one of started, ok, ...)"
 * ```
 */
export function liveFilterError(f: LiveFilter): string | undefined {
  if (f.status !== undefined && !LIVE_STATUSES.includes(f.status as never)) return `unknown status '${f.status}' (one of ${LIVE_STATUSES.join(', ')})`;
  if (f.category !== undefined) {
    const c = auditFilterFrom({ category: f.category });
    if ('error' in c) return c.error;
    if (c.category!.length !== 1) return `category '${f.category}': give one category`;
  }
  if (f.principal !== undefined) {
    const colon = f.principal.indexOf(':');
    const kind = f.principal.slice(0, Math.max(colon, 0));
    if (colon < 1 || colon === f.principal.length - 1 || !(PRINCIPAL_KINDS as readonly string[]).includes(kind))
      return `principal must be KIND:ID with KIND one of ${PRINCIPAL_KINDS.join(', ')}; got '${f.principal}'`;
  }
  return undefined;
}

function viewOf(who: ConsoleIdentity, f: LiveFilter): string {
  const admin = who.role === 'admin';
  return JSON.stringify([admin, admin ? null : who.tenant, f.tool ?? null, f.status ?? null, f.category ?? null, f.principal ?? null]);
}

function matches(f: LiveFilter, c: FeedCall): boolean {
  return (
    (f.tool === undefined || c.tool === f.tool) &&
    (f.status === undefined || c.status === f.status) &&
    (f.category === undefined || c.category === f.category) &&
    (f.principal === undefined || c.principalChain.some((p) => principalName(p) === f.principal))
  );
}

// Every stored string marked and bounded (the page places them with textContent).
function eventOf(c: FeedCall): string {
  const data = {
    seq: c.seq,
    id: marked(c.id, 200),
    phase: c.status === 'started' ? 'start' : 'end',
    tool: marked(c.tool, 200),
    status: marked(c.status, 40),
    // A started row's category says how it reads if nothing ends it (interrupted): not a failure yet.
    category: c.category === null || c.status === 'started' ? null : marked(c.category, 40),
    errorCode: c.errorCode === null || c.status === 'started' ? null : marked(c.errorCode, 200),
    latencyMs: c.latencyMs,
    principals: c.principalChain.map((p) => marked(principalName(p), 200)),
    toolCallId: marked(c.toolCallId, 200),
    runId: marked(c.runId, 200),
    traceId: marked(c.traceId, 200),
    sessionId: c.sessionId === null ? null : marked(c.sessionId, 200),
    approvalId: c.approvalId === null ? null : marked(c.approvalId, 200),
    at: c.status === 'started' ? c.startedAt : c.endedAt,
  };
  return `id: ${c.seq}\nevent: call\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The live calls of one console.
 *
 * @example
 * ```ts
 * const hub = new LiveHub(store);
 * await hub.subscribe(req, res, session.identity, liveFilterOf(query));
 * ```
 */
export class LiveHub {
  private readonly subscribers = new Set<Subscriber>();
  private readonly reader: CallFeedReader;
  private starting: Promise<void> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly maxSubscribers: number;
  private readonly maxBufferBytes: number;
  private readonly catchUp: number;
  private readonly heartbeatMs: number;

  constructor(
    private readonly store: Store,
    options: LiveHubOptions = {},
  ) {
    this.maxSubscribers = options.maxSubscribers ?? 100;
    this.maxBufferBytes = options.maxBufferBytes ?? 1 << 20;
    this.catchUp = options.catchUp ?? 500;
    this.heartbeatMs = options.heartbeatMs ?? 15_000;
    this.reader = new CallFeedReader(store.callFeed, {
      pollMs: options.pollMs ?? (store.kind === 'postgres' ? 1_000 : 200),
      // At most 20 signalled reads a second however many writers commit; bench/README.md, "Measurements behind the code".
      signalGapMs: 50,
      batch: 1_000,
      onRows: (rows) => this.fanOut(rows),
    });
  }

  /** Streams currently open. */
  get size(): number {
    return this.subscribers.size;
  }

  /**
   * Answers a stream request: `text/event-stream` until the client goes, or 503 when full.
   * `Last-Event-ID` (a `seq`) resumes after the last row the client got.
   */
  async subscribe(req: IncomingMessage, res: ServerResponse, who: ConsoleIdentity, filter: LiveFilter): Promise<void> {
    if (this.subscribers.size >= this.maxSubscribers) {
      res
        .writeHead(503, { 'content-security-policy': CSP, 'content-type': 'text/plain; charset=utf-8', 'retry-after': '10' })
        .end('Too many live streams on this console.\n');
      return;
    }
    const last = /^\d{1,15}$/.exec(String(req.headers['last-event-id'] ?? ''))?.[0];
    res.writeHead(200, {
      'content-security-policy': CSP,
      'x-content-type-options': 'nosniff',
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 2000\n\n');
    const sub: Subscriber = { who, filter, res, view: viewOf(who, filter), held: last === undefined ? undefined : [] };
    this.subscribers.add(sub);
    res.on('close', () => this.leave(sub));
    await this.ensureReading();
    if (last !== undefined && sub.held) await this.catchUpOn(sub, Number(last));
    // From here on every call committed reaches this stream (the reader started at or before it).
    this.write(sub, 'event: ready\ndata: {}\n\n');
  }

  /** Stops reading and closes every stream. */
  close(): void {
    for (const s of this.subscribers) s.res.destroy();
    this.subscribers.clear();
    this.stopReading();
  }

  private async ensureReading(): Promise<void> {
    if (this.heartbeat) return this.starting;
    this.heartbeat = setInterval(() => {
      for (const s of this.subscribers) this.write(s, ': keep-alive\n\n');
    }, this.heartbeatMs);
    this.heartbeat.unref();
    this.starting = this.store.callFeed.head().then(
      (head) => {
        if (this.heartbeat) this.reader.start(head);
      },
      () => {
        // The store did not answer: start from the beginning's end on the next subscriber.
        this.stopReading();
      },
    );
    return this.starting;
  }

  private stopReading(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    this.reader.stop();
  }

  private leave(sub: Subscriber): void {
    this.subscribers.delete(sub);
    if (this.subscribers.size === 0) this.stopReading();
  }

  /**
   * Sends what a reconnecting stream missed after `after`, up to the newest row the reader has
   * delivered: all of it when it is at most `catchUp` rows, else a `skipped` event saying how many
   * older rows were left out, then the newest `catchUp` rows (the page shows newest first: the
   * newest calls are the ones it must not lose).
   */
  private async catchUpOn(sub: Subscriber, after: number): Promise<void> {
    let rows: FeedCall[] = [];
    let skipped = 0;
    try {
      rows = await this.store.callFeed.after(after, this.catchUp + 1);
      const newest = this.reader.newest;
      if (rows.length > this.catchUp && rows[this.catchUp]!.seq <= newest) {
        // More than the bound below what the reader delivered: the bound's newest rows. Sequence
        // numbers can have gaps (a rolled-back insert on PostgreSQL), so the count skipped is of
        // numbers, and the rows sent can be fewer than the bound.
        const from = Math.max(after, newest - this.catchUp);
        skipped = from - after;
        rows = await this.store.callFeed.after(from, this.catchUp);
      }
    } catch {
      // Nothing to catch up on from a store that failed; the stream goes on live.
    }
    const held = sub.held ?? [];
    sub.held = undefined;
    const later = new Set(held.map((r) => r.seq));
    const newest = this.reader.newest;
    if (skipped > 0) this.write(sub, `event: skipped\ndata: ${JSON.stringify({ rows: skipped })}\n\n`);
    // Rows above what the reader delivered come from the reader; rows it delivered since the stream joined were held.
    this.deliver(
      sub,
      rows.filter((r) => r.seq <= newest && !later.has(r.seq)),
    );
    this.deliver(sub, held);
  }

  private fanOut(rows: FeedCall[]): void {
    // A row's event is serialised once, when the first stream that may see it needs it; the streams of
    // one view get one chunk, encoded once (a string written is measured and encoded per socket).
    // What this saves: bench/README.md, "Measurements behind the code".
    const texts: (string | undefined)[] = new Array(rows.length);
    const chunks = new Map<string, Buffer | null>();
    for (const s of this.subscribers) {
      if (s.held) {
        s.held.push(...rows.slice(0, this.catchUp - s.held.length));
        continue;
      }
      let chunk = chunks.get(s.view);
      if (chunk === undefined) {
        const text = this.textFor(s, rows, texts);
        chunk = text === '' ? null : Buffer.from(text);
        chunks.set(s.view, chunk);
      }
      if (chunk !== null) this.write(s, chunk);
    }
  }

  /** One write per stream per read: a write is a system call, and a busy log has thousands of rows a second. */
  private deliver(s: Subscriber, rows: readonly FeedCall[]): void {
    const text = this.textFor(s, rows, new Array(rows.length));
    if (text !== '') this.write(s, text);
  }

  /** The events of the rows `s` may see and its filters match; `texts` holds each row's event once made. */
  private textFor(s: Subscriber, rows: readonly FeedCall[], texts: (string | undefined)[]): string {
    let text = '';
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      if (visibleTo(s.who, r.principalChain) && matches(s.filter, r)) text += texts[i] ??= eventOf(r);
    }
    return text;
  }

  private write(s: Subscriber, text: string | Buffer): void {
    if (s.res.destroyed) return;
    // A client that does not read: closed, not buffered (it reconnects and catches up, bounded).
    if (s.res.writableLength > this.maxBufferBytes) {
      s.res.destroy();
      this.leave(s);
      return;
    }
    s.res.write(text);
  }
}
