/**
 * Resource subscriptions through the gateway, both eras on both sides: who wants which URI (2025
 * sessions, 2026-07-28 listen streams), and one subscription per URI on its upstream while anyone
 * does (`resources/subscribe`, or a listen stream re-opened on reconnect). Updates go to the sessions
 * that subscribed and, through the SDK's event bus, to the listen streams whose filter names the URI.
 */
import type { McpSubscription } from '@modelcontextprotocol/client';
import {
  InMemoryServerEventBus,
  type Notification,
  ProtocolErrorCode,
  type Result,
  type Server,
  type ServerContext,
  type ServerEventBus,
  type SubscriptionFilter,
} from '@modelcontextprotocol/server';
import type { ListHost } from './lists.js';
import { rpcError } from '../wire/rpc-errors.js';
import type { Upstream } from '../upstream/upstream.js';

/** At most this many distinct URIs held on upstreams at once; past it a new subscription is refused. */
export const MAX_SUBSCRIBED_URIS = 1_024;

/** At most this many URIs of one listen stream's filter are held (the rest get no updates). */
export const MAX_URIS_PER_LISTEN = 256;

/** The key the SDK stamps on every notification of a listen stream: the upstream's, never relayed. */
const SUBSCRIPTION_ID_KEY = 'io.modelcontextprotocol/subscriptionId';

/** One URI held on one upstream. */
interface Held {
  up: Upstream;
  uri: string;
  subscribers: number;
  /** A modern upstream's listen stream for this URI. */
  listen?: McpSubscription;
  closed: boolean;
}

/**
 * The hook a modern-era HTTP endpoint gives the gateway: the bus its `subscriptions/listen` streams
 * read, and a call when such a stream opens (with its filter) that returns the call for its end.
 */
export interface ListenHooks {
  readonly bus: ServerEventBus;
  /** `deliver`: how this stream's updates are sent (stdio); without it, through `bus` (HTTP). */
  opened(filter: SubscriptionFilter, deliver?: (n: Notification) => void): Promise<() => void>;
}

/** Who subscribed to which resource, and the gateway's own subscriptions on its upstreams. */
export class ResourceSubscriptions implements ListenHooks {
  /** The event bus of the modern era's listen streams (handed to `createMcpHandler`). */
  readonly bus: ServerEventBus = new InMemoryServerEventBus();
  /** URIs by subscriber: a 2025-era session's server, or one modern listen stream. */
  private readonly bySubscriber = new Map<object, Set<string>>();
  /** How many modern listen streams want each URI. */
  private readonly listened = new Map<string, number>();
  private readonly held = new Map<string, Held>();
  private readonly listens = new WeakSet<object>();
  /** How the updates of a listen stream that does not read the bus are sent. */
  private readonly deliverers = new Map<object, (n: Notification) => void>();

  constructor(
    private readonly host: ListHost,
    private readonly log: (line: string) => void = () => {},
  ) {}

  /** `resources/subscribe` of a 2025-era session. */
  async subscribe(server: Server, uri: string, ctx?: ServerContext): Promise<Result> {
    if (this.bySubscriber.get(server)?.has(uri)) return {};
    await this.hold(uri, ctx);
    this.add(server, uri);
    return {};
  }

  /** `resources/unsubscribe` of a 2025-era session. */
  async unsubscribe(server: Server, uri: string): Promise<Result> {
    const uris = this.bySubscriber.get(server);
    if (!uris?.delete(uri)) return {};
    if (uris.size === 0) this.bySubscriber.delete(server);
    await this.release(uri);
    return {};
  }

  /** A session ended: its subscriptions go. */
  drop(subscriber: object): void {
    const uris = this.bySubscriber.get(subscriber);
    this.bySubscriber.delete(subscriber);
    for (const uri of uris ?? []) void this.release(uri).catch(() => {});
  }

  /**
   * A modern-era listen stream opened: the URIs of its filter are held on their upstreams before
   * the stream is acknowledged (so no update is lost); returns the call for its end.
   */
  async opened(filter: SubscriptionFilter, deliver?: (n: Notification) => void): Promise<() => void> {
    const key = {};
    this.listens.add(key);
    if (deliver) this.deliverers.set(key, deliver);
    const wanted = [...new Set(filter.resourceSubscriptions ?? [])];
    if (wanted.length > MAX_URIS_PER_LISTEN) this.log(`subscriptions/listen: ${wanted.length} resources asked for; the first ${MAX_URIS_PER_LISTEN} are held`);
    for (const uri of wanted.slice(0, MAX_URIS_PER_LISTEN)) {
      try {
        await this.hold(uri);
      } catch (err) {
        // The stream still opens; this URI's updates just cannot be had from its upstream.
        this.log(`subscriptions/listen: ${uri}: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      this.add(key, uri);
      if (!deliver) this.listened.set(uri, (this.listened.get(uri) ?? 0) + 1);
    }
    return () => {
      for (const uri of deliver ? [] : (this.bySubscriber.get(key) ?? [])) {
        const n = (this.listened.get(uri) ?? 1) - 1;
        if (n > 0) this.listened.set(uri, n);
        else this.listened.delete(uri);
      }
      this.deliverers.delete(key);
      this.drop(key);
    };
  }

  /**
   * An upstream notification: `resources/updated` reaches the sessions that subscribed and the
   * listen streams (bus), list changes reach the listen streams; everything else is not ours.
   */
  relay(n: Notification, send: (server: Server, n: Notification) => void): void {
    if (n.method === 'notifications/resources/updated' && typeof n.params?.uri === 'string') {
      const uri = n.params.uri;
      const clean = withoutSubscriptionId(n);
      // A stdio connection's streams share one delivery (the SDK's entry fans it out by filter): once each.
      const direct = new Set<(n: Notification) => void>();
      for (const [subscriber, uris] of this.bySubscriber) {
        if (!uris.has(uri)) continue;
        if (!this.listens.has(subscriber)) send(subscriber as Server, clean);
        else {
          const deliver = this.deliverers.get(subscriber);
          if (deliver) direct.add(deliver);
        }
      }
      for (const deliver of direct) deliver(clean);
      if (this.listened.has(uri)) this.bus.publish({ kind: 'resource_updated', uri });
      return;
    }
    const kind = LIST_EVENTS[n.method];
    if (kind) this.bus.publish({ kind });
  }

  /**
   * A 2025-era upstream came back (a restarted process holds no subscriptions): every URI held on
   * it is subscribed again. (A modern upstream's listen streams are re-opened as they close.)
   */
  reconnected(up: Upstream): void {
    if (up.era === 'modern') return;
    for (const h of this.held.values()) {
      if (h.up !== up || h.closed) continue;
      void this.host
        .forward(up, { method: 'resources/subscribe', params: { uri: h.uri } }, undefined as unknown as ServerContext)
        .catch((err: unknown) => this.log(`resources/subscribe of ${h.uri} on '${up.name}' after its restart failed: ${String(err)}`));
    }
  }

  /** Stops holding everything (the gateway closes). */
  close(): void {
    for (const h of this.held.values()) {
      h.closed = true;
      void h.listen?.close().catch(() => {});
    }
    this.held.clear();
    this.bySubscriber.clear();
    this.listened.clear();
    this.deliverers.clear();
  }

  private add(subscriber: object, uri: string): void {
    let uris = this.bySubscriber.get(subscriber);
    if (!uris) this.bySubscriber.set(subscriber, (uris = new Set()));
    uris.add(uri);
  }

  /** One more subscriber of `uri`: the first one subscribes on the upstream that owns it. */
  private async hold(uri: string, ctx?: ServerContext): Promise<void> {
    const held = this.held.get(uri);
    if (held) {
      held.subscribers++;
      return;
    }
    if (this.held.size >= MAX_SUBSCRIBED_URIS)
      throw rpcError(ProtocolErrorCode.InvalidRequest, `At most ${MAX_SUBSCRIBED_URIS} resources can be subscribed to at once`);
    const up = this.ownerOf(uri);
    // A modern upstream that does not declare subscribe would only be found out after the listen
    // acknowledgement's timeout: answered at once, as docs/mcp.md says.
    if (up.era === 'modern' && !up.capabilities?.resources?.subscribe) {
      throw rpcError(ProtocolErrorCode.MethodNotFound, `The upstream '${up.name}' does not deliver updates of resources (no resources.subscribe capability)`);
    }
    const h: Held = { up, uri, subscribers: 1, closed: false };
    this.held.set(uri, h);
    try {
      if (up.era === 'modern') await this.listenOn(h);
      else await this.host.forward(up, { method: 'resources/subscribe', params: { uri } }, ctx as ServerContext);
    } catch (err) {
      if (this.held.get(uri) === h) this.held.delete(uri);
      throw err;
    }
  }

  /** One subscriber fewer: the last one unsubscribes on the upstream. */
  private async release(uri: string): Promise<void> {
    const h = this.held.get(uri);
    if (!h || --h.subscribers > 0) return;
    this.held.delete(uri);
    h.closed = true;
    if (h.listen) await h.listen.close();
    else if (h.up.era !== 'modern')
      await this.host.forward(h.up, { method: 'resources/unsubscribe', params: { uri } }, undefined as unknown as ServerContext).catch(() => {});
  }

  /** A modern upstream delivers updates of `uri` on a listen stream for it, re-opened when the connection comes back. */
  private async listenOn(h: Held): Promise<void> {
    const listen = await h.up.listen({ resourceSubscriptions: [h.uri] });
    if (h.closed) {
      await listen.close();
      return;
    }
    if (!listen.honoredFilter.resourceSubscriptions?.includes(h.uri)) {
      await listen.close();
      throw rpcError(ProtocolErrorCode.MethodNotFound, `The upstream '${h.up.name}' does not deliver updates of resources (no resources.subscribe capability)`);
    }
    h.listen = listen;
    void listen.closed.then((cause) => {
      if (h.closed || cause === 'local' || this.held.get(h.uri) !== h) return;
      // The upstream went away (or ended the stream): listen again once it is back.
      h.listen = undefined;
      setTimeout(() => {
        if (!h.closed && this.held.get(h.uri) === h)
          this.listenOn(h).catch((err: unknown) => this.log(`subscriptions/listen of ${h.uri} on '${h.up.name}' failed: ${String(err)}`));
      }, 200).unref();
    });
  }

  private ownerOf(uri: string): Upstream {
    const ups = this.host.upstreams;
    if (ups.length === 1) return ups[0]!;
    const owner = this.host.resourceOwners.get(uri) ?? ups.find((u) => u.capabilities?.resources?.subscribe);
    if (!owner) throw rpcError(ProtocolErrorCode.InvalidParams, `No upstream serves '${uri}'`);
    return owner;
  }
}

/**
 * The filter of a modern-era `subscriptions/listen` request body (what the SDK's listen router
 * will honor), or `undefined` for any other message.
 */
export function listenFilterOf(body: unknown): SubscriptionFilter | undefined {
  if (typeof body !== 'object' || body === null || (body as { method?: unknown }).method !== 'subscriptions/listen') return undefined;
  const filter = (body as { params?: { notifications?: unknown } }).params?.notifications;
  if (typeof filter !== 'object' || filter === null) return undefined;
  const uris = (filter as SubscriptionFilter).resourceSubscriptions;
  return Array.isArray(uris) ? { resourceSubscriptions: uris.filter((u): u is string => typeof u === 'string') } : {};
}

const LIST_EVENTS: Record<string, 'tools_list_changed' | 'prompts_list_changed' | 'resources_list_changed' | undefined> = {
  'notifications/tools/list_changed': 'tools_list_changed',
  'notifications/prompts/list_changed': 'prompts_list_changed',
  'notifications/resources/list_changed': 'resources_list_changed',
};

function withoutSubscriptionId(n: Notification): Notification {
  const meta = n.params?._meta as Record<string, unknown> | undefined;
  if (!meta || !(SUBSCRIPTION_ID_KEY in meta)) return n;
  const { [SUBSCRIPTION_ID_KEY]: _dropped, ...rest } = meta;
  const { _meta, ...params } = n.params as Record<string, unknown>;
  return { method: n.method, params: Object.keys(rest).length > 0 ? { ...params, _meta: rest } : params };
}
