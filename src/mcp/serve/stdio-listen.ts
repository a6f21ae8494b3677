/**
 * 2026-07-28 listen streams on the gateway's stdio connection. The SDK's `serveStdio` serves
 * `subscriptions/listen` before the gateway sees it; this `Transport` between them holds a stream's
 * resources on the upstreams before handing the request on (so no update is lost) and releases them
 * when the stream or the connection ends. Everything else passes through, in order.
 */
import type { JSONRPCMessage, Notification, Transport, TransportSendOptions } from '@modelcontextprotocol/server';
import { type ListenHooks, listenFilterOf } from '../gateway/subscriptions.js';

/** At most this many listen streams of one connection are held (the SDK's own limit per connection). */
const MAX_LISTENS = 1_024;

type RequestId = string | number;

/** The gateway's stdio transport, seen by `serveStdio`, with the listen streams' resources held. */
export class ListenAwareTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  /** The held streams of this connection, by their listen request's id. */
  private readonly open = new Map<RequestId, Promise<() => void>>();
  /** Messages that arrived after a listen request still being held wait for it, in order. */
  private queue: Promise<void> = Promise.resolve();
  private waiting = 0;

  constructor(
    private readonly inner: Transport,
    private readonly hooks: ListenHooks,
    private readonly deliver: (n: Notification) => void,
  ) {
    inner.onmessage = (message, extra) => this.inbound(message, extra);
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => {
      for (const held of this.open.values()) void held.then((release) => release());
      this.open.clear();
      this.onclose?.();
    };
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  private inbound(message: JSONRPCMessage, extra: Parameters<NonNullable<Transport['onmessage']>>[1]): void {
    const filter = listenFilterOf(message);
    const id = (message as { id?: RequestId }).id;
    if (filter && id !== undefined && !this.open.has(id) && this.open.size < MAX_LISTENS) {
      const held = this.hooks.opened(filter, this.deliver);
      this.open.set(id, held);
      this.pass(message, extra, held);
      return;
    }
    if ((message as { method?: string }).method === 'notifications/cancelled') {
      const cancelled = (message as { params?: { requestId?: RequestId } }).params?.requestId;
      const held = cancelled === undefined ? undefined : this.open.get(cancelled);
      if (held) {
        this.open.delete(cancelled!);
        void held.then((release) => release());
      }
    }
    if (this.waiting === 0) this.onmessage?.(message, extra);
    else this.pass(message, extra);
  }

  /** Hands a message on after everything queued before it (and after `first`, when given). */
  private pass(message: JSONRPCMessage, extra: Parameters<NonNullable<Transport['onmessage']>>[1], first?: Promise<unknown>): void {
    this.waiting++;
    this.queue = this.queue
      .then(() => first)
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.waiting--;
        this.onmessage?.(message, extra);
      });
  }
}
