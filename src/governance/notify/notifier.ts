/**
 * Delivers approval notifications to webhooks from a bounded in-memory queue, so that a call never
 * waits for, or fails with, a receiver: each delivery is POSTed with a per-attempt timeout and
 * retried with exponential backoff on a network error, a timeout, 408, 429 or 5xx; a full queue
 * drops its oldest delivery. Every attempt's outcome goes to the operator log. Nothing is kept
 * across a restart (the audit log and the store hold the facts; a notification is a nudge).
 */
import { randomUUID } from 'node:crypto';
import type { ApprovalEvent } from '../approval-events.js';
import { notificationBody, signBody } from './notify-body.js';
import type { LoadedNotifyTarget } from './notify-target.js';

/** One line of the operator log about a delivery: level, message and flat fields. */
export type NotifyLog = (level: 'info' | 'warn' | 'error', msg: string, fields: Readonly<Record<string, string | number | null>>) => void;

export interface NotifierOptions {
  log: NotifyLog;
  /** The console's base URL, for each notification's link. */
  consoleUrl?: string;
  /** Deliveries queued or waiting for a retry, at most (default 1000); past it the oldest is dropped. */
  maxQueue?: number;
  /** Attempts per delivery, the first included (default 8). */
  maxAttempts?: number;
  /** The wait before the first retry, doubled per retry (default 500 ms). */
  baseDelayMs?: number;
  /** The longest wait between attempts (default 60 s). */
  maxDelayMs?: number;
  /** How long one attempt may take (default 5 s). */
  timeoutMs?: number;
  /** Attempts in flight at once (default 4). */
  concurrency?: number;
}

interface Delivery {
  id: string;
  target: LoadedNotifyTarget;
  /** The target's place in the list, for the log (its URL may hold a secret path). */
  index: number;
  event: ApprovalEvent;
  body: string;
  attempt: number;
  notBefore: number;
}

/** The webhooks of a gateway. */
export class Notifier {
  private readonly queue: Delivery[] = [];
  private inFlight = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly idle = new Set<() => void>();
  private readonly o: Required<Omit<NotifierOptions, 'consoleUrl'>> & { consoleUrl: string | undefined };

  constructor(
    private readonly targets: readonly LoadedNotifyTarget[],
    options: NotifierOptions,
  ) {
    this.o = {
      log: options.log,
      consoleUrl: options.consoleUrl,
      maxQueue: options.maxQueue ?? 1000,
      maxAttempts: options.maxAttempts ?? 8,
      baseDelayMs: options.baseDelayMs ?? 500,
      maxDelayMs: options.maxDelayMs ?? 60_000,
      timeoutMs: options.timeoutMs ?? 5000,
      concurrency: options.concurrency ?? 4,
    };
  }

  /** Queues the event for every target and returns at once; never throws. */
  send(event: ApprovalEvent): void {
    if (this.closed) return;
    for (const [index, target] of this.targets.entries()) {
      const id = `ntf_${randomUUID()}`;
      let body: string;
      try {
        body = notificationBody(event, target.format, this.o.consoleUrl, id);
      } catch (e) {
        this.o.log('error', 'notify not sent', { ...fieldsOf(event, index, id, target.url), error: (e as Error).message });
        continue;
      }
      if (this.queue.length >= this.o.maxQueue) {
        const dropped = this.queue.shift()!;
        this.o.log('warn', 'notify dropped', {
          ...fieldsOf(dropped.event, dropped.index, dropped.id, dropped.target.url),
          reason: `queue full (${this.o.maxQueue})`,
        });
      }
      this.queue.push({ id, target, index, event, body, attempt: 0, notBefore: 0 });
    }
    this.pump();
  }

  /** Deliveries not yet done (queued, waiting for a retry or in flight). */
  get pending(): number {
    return this.queue.length + this.inFlight;
  }

  /** Stops taking events; waits up to `graceMs` for what is queued, then drops the rest (logged). */
  async close(graceMs = 2000): Promise<void> {
    this.closed = true;
    if (this.pending > 0) {
      let done: () => void = () => {};
      const drained = new Promise<void>((r) => {
        done = r;
        this.idle.add(r);
      });
      const timer = setTimeout(done, graceMs);
      await drained;
      clearTimeout(timer);
      this.idle.delete(done);
    }
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.queue.splice(0))
      this.o.log('warn', 'notify dropped', { ...fieldsOf(d.event, d.index, d.id, d.target.url), reason: 'gateway stopping' });
  }

  /** Starts every delivery that is due, up to the concurrency; schedules a wake-up for the next retry. */
  private pump(): void {
    const now = Date.now();
    while (this.inFlight < this.o.concurrency) {
      const i = this.queue.findIndex((d) => d.notBefore <= now);
      if (i === -1) break;
      const [d] = this.queue.splice(i, 1);
      this.inFlight++;
      void this.attempt(d!).finally(() => {
        this.inFlight--;
        if (this.pending === 0) for (const r of this.idle) r();
        this.pump();
      });
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.queue.length > 0 && this.inFlight < this.o.concurrency) {
      const next = Math.min(...this.queue.map((d) => d.notBefore));
      // Unreferenced: a retry waiting must not keep a stopping process alive.
      this.timer = setTimeout(() => this.pump(), Math.max(0, next - now)).unref();
    }
  }

  private async attempt(d: Delivery): Promise<void> {
    d.attempt++;
    const fields = { ...fieldsOf(d.event, d.index, d.id, d.target.url), attempt: d.attempt };
    let retryable: boolean;
    let why: string;
    try {
      const res = await fetch(d.target.url, {
        method: 'POST',
        headers: headersOf(d),
        body: d.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.o.timeoutMs),
      });
      // The answer's body is not read: a receiver says all it needs in its status.
      await res.body?.cancel().catch(() => {});
      if (res.status >= 200 && res.status < 300) {
        this.o.log('info', 'notify delivered', { ...fields, httpStatus: res.status });
        return;
      }
      retryable = res.status === 408 || res.status === 429 || res.status >= 500;
      why = `HTTP ${res.status}`;
    } catch (e) {
      retryable = true;
      const err = e as Error & { cause?: { code?: string } };
      why = err.name === 'TimeoutError' ? `no answer within ${this.o.timeoutMs} ms` : (err.cause?.code ?? err.message);
    }
    if (!retryable || d.attempt >= this.o.maxAttempts) {
      this.o.log('error', 'notify failed', { ...fields, error: why, final: retryable ? `gave up after ${d.attempt} attempts` : 'not retried' });
      return;
    }
    const delay = Math.min(this.o.maxDelayMs, this.o.baseDelayMs * 2 ** (d.attempt - 1));
    this.o.log('warn', 'notify failed', { ...fields, error: why, retryInMs: delay });
    d.notBefore = Date.now() + delay;
    if (this.queue.length >= this.o.maxQueue) {
      this.o.log('warn', 'notify dropped', { ...fieldsOf(d.event, d.index, d.id, d.target.url), reason: `queue full (${this.o.maxQueue})` });
      return;
    }
    this.queue.push(d);
  }
}

function headersOf(d: Delivery): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'tool-envelope-gateway',
    'x-tool-envelope-event': `approval.${d.event.event}`,
    // The same across retries: a receiver drops a delivery it already has.
    'x-tool-envelope-delivery': d.id,
  };
  if (d.target.secret) headers['x-tool-envelope-signature'] = signBody(d.target.secret, d.body);
  return headers;
}

/** A delivery's log fields: the target by its place and host only (a webhook's path or query is often its secret). */
function fieldsOf(e: ApprovalEvent, index: number, id: string, url: string): Record<string, string | number | null> {
  return { event: e.event, approvalId: e.approvalId, tool: e.tool, target: index, host: new URL(url).host, deliveryId: id };
}
