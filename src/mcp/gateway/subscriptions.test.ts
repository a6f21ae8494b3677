// Resource subscriptions across eras through the gateway. A 2025-era client's `resources/subscribe`
// in front of a 2026-07-28 upstream (which has no such method) becomes a `subscriptions/listen`
// stream for that URI on the upstream; a 2026-07-28 client's `subscriptions/listen` naming a URI
// in front of a 2025-era upstream (server-everything) becomes `resources/subscribe` there. Real
// SDK clients (v1 for the 2025 era, v2 pinned to 2026-07-28 over Streamable HTTP), the real v2
// test server (test-support/modern-server.mjs, its `touch_note` tool changes `modern://note`) and
// server-everything (its `toggle-subscriber-updates` tool sends updates of subscribed URIs).
import { join } from 'node:path';
import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from './gateway.js';
import { serveHttp, type HttpEndpoint } from '../serve/http.js';
import { clientFor, everythingSpec, repoRoot, silent } from '../test-support/harness.js';

const MODERN = join(repoRoot, 'src/mcp/test-support/modern-server.mjs');
const NOTE = 'modern://note';

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a 2025-era client subscribing through the gateway to a 2026-07-28 upstream', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await Gateway.start({ upstreams: [{ name: 'modern', command: process.execPath, args: [MODERN] }], log: silent });
  }, 60_000);
  afterAll(() => gw?.close());

  const subscriber = async (): Promise<{ client: Client; updates: unknown[] }> => {
    const client = await clientFor(gw.createServer());
    const updates: unknown[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void updates.push(n.params));
    return { client, updates };
  };

  it('resources/subscribe becomes a listen stream upstream: updates arrive, clean; the last unsubscribe ends them', async () => {
    const one = await subscriber();
    const two = await subscriber();
    try {
      expect(one.client.getServerCapabilities()?.resources?.subscribe).toBe(true);
      await one.client.subscribeResource({ uri: NOTE });
      await two.client.subscribeResource({ uri: NOTE });
      await one.client.callTool({ name: 'touch_note', arguments: {} });
      await until(() => one.updates.length === 1 && two.updates.length === 1);
      // The upstream's listen-stream id is not relayed: a 2025 client gets the plain notification.
      expect(one.updates[0]).toEqual({ uri: NOTE });

      // One session leaving keeps the other's subscription on the upstream.
      await one.client.unsubscribeResource({ uri: NOTE });
      await two.client.callTool({ name: 'touch_note', arguments: {} });
      await until(() => two.updates.length === 2);
      expect(one.updates).toHaveLength(1);

      // The last one leaving (its session closes) ends the upstream's stream: nothing more is delivered.
      await two.client.close();
      const three = await subscriber();
      await three.client.callTool({ name: 'touch_note', arguments: {} });
      await new Promise((r) => setTimeout(r, 500));
      expect(three.updates).toHaveLength(0);
      expect(one.updates).toHaveLength(1);
      // And a new subscriber gets a fresh stream.
      await three.client.subscribeResource({ uri: NOTE });
      await three.client.callTool({ name: 'touch_note', arguments: {} });
      await until(() => three.updates.length === 1);

      // The upstream restarts: the gateway listens again, and the subscriber keeps getting updates.
      const up = gw.upstreams[0]!;
      const generation = up.generation;
      process.kill(up.pid!, 'SIGKILL');
      await expect.poll(() => up.generation, { timeout: 20_000 }).toBe(generation + 1);
      for (let i = 0; i < 50 && three.updates.length < 2; i++) {
        await three.client.callTool({ name: 'touch_note', arguments: {} }).catch(() => {});
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(three.updates.length).toBeGreaterThanOrEqual(2);
      await three.client.close();
    } finally {
      await one.client.close();
      await two.client.close().catch(() => {});
    }
  }, 60_000);
});

describe('a 2025-era client subscribing through the gateway to a 2025-era upstream (server-everything)', () => {
  it('updates reach the subscriber; a restarted upstream is subscribed again', async () => {
    const gw = await Gateway.start({ upstreams: [everythingSpec()], log: silent });
    const client = await clientFor(gw.createServer());
    try {
      const updates: string[] = [];
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void updates.push(n.params.uri));
      const uri = (await client.listResources()).resources[0]!.uri;
      await client.subscribeResource({ uri });
      await client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      await until(() => updates.includes(uri));

      const up = gw.upstreams[0]!;
      const generation = up.generation;
      process.kill(up.pid!, 'SIGKILL');
      await expect.poll(() => up.generation, { timeout: 20_000 }).toBe(generation + 1);
      updates.length = 0;
      // The new process knows nothing of the old one's subscriptions: the gateway subscribed again.
      await expect.poll(() => up.state, { timeout: 10_000 }).toBe('ready');
      await new Promise((r) => setTimeout(r, 300));
      await client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      await until(() => updates.includes(uri));
    } finally {
      await client.close();
      await gw.close();
    }
  }, 60_000);
});

describe('a 2026-07-28 client listening through the gateway', () => {
  let gw: Gateway;
  let endpoint: HttpEndpoint;
  let modernGw: Gateway;
  let modernEndpoint: HttpEndpoint;
  beforeAll(async () => {
    gw = await Gateway.start({ upstreams: [everythingSpec()], log: silent });
    endpoint = await serveHttp((session) => gw.createServer(session), { port: 0, listen: gw.subscriptions });
    modernGw = await Gateway.start({ upstreams: [{ name: 'modern', command: process.execPath, args: [MODERN] }], log: silent });
    modernEndpoint = await serveHttp((session) => modernGw.createServer(session), { port: 0, listen: modernGw.subscriptions });
  }, 60_000);
  afterAll(async () => {
    await endpoint?.close();
    await gw?.close();
    await modernEndpoint?.close();
    await modernGw?.close();
  });

  const modern = async (url: string): Promise<{ client: ModernClient; updates: unknown[] }> => {
    const client = new ModernClient({ name: 'listener', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const updates: unknown[] = [];
    client.setNotificationHandler('notifications/resources/updated', async (n) => void updates.push(n.params.uri));
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    return { client, updates };
  };

  it("a 2025-era upstream (server-everything): the listen filter's URI is subscribed upstream and its updates reach the stream", async () => {
    const a = await modern(endpoint.url);
    try {
      const uri = (await a.client.listResources()).resources[0]!.uri;
      const sub = await a.client.listen({ resourceSubscriptions: [uri] });
      expect(sub.honoredFilter.resourceSubscriptions).toEqual([uri]);
      // Updates of subscribed URIs start (server-everything sends one at once, then every 5 s).
      await a.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      await until(() => a.updates.includes(uri));
      await sub.close();
    } finally {
      await a.client.close();
    }
  }, 60_000);

  it('a 2026-07-28 upstream: the listen stream is held upstream for the URI; a stream without it gets nothing; list changes reach the streams that asked', async () => {
    const a = await modern(modernEndpoint.url);
    const b = await modern(modernEndpoint.url);
    try {
      const sub = await a.client.listen({ resourceSubscriptions: [NOTE] });
      const other = await b.client.listen({ resourceSubscriptions: ['modern://colour/red'] });
      await b.client.callTool({ name: 'touch_note', arguments: {} });
      await until(() => a.updates.length === 1);
      expect(a.updates).toEqual([NOTE]);
      await new Promise((r) => setTimeout(r, 300));
      expect(b.updates).toEqual([]);
      await sub.close();
      await other.close();

      // List changes of the upstream reach the streams that asked for them.
      let changed = 0;
      b.client.setNotificationHandler('notifications/tools/list_changed', async () => void changed++);
      const lists = await b.client.listen({ toolsListChanged: true });
      await a.client.callTool({ name: 'add_tool', arguments: {} });
      await until(() => changed === 1);
      await lists.close();
    } finally {
      await a.client.close();
      await b.client.close();
    }
  }, 60_000);
});
