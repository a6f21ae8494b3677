import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEventListeners } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { perRequestSignalFetch } from './fetch.js';

describe('perRequestSignalFetch', () => {
  let server: Server;
  let url: string;
  const open = new Set<ServerResponse>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/stream') {
        // An SSE-like answer that stays open until the client goes away.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: first\n\n');
        open.add(res);
        res.on('close', () => open.delete(res));
        return;
      }
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('keeps one listener on a long-lived signal however many requests use it', async () => {
    const outer = new AbortController();
    const f = perRequestSignalFetch();
    for (let i = 0; i < 300; i++) expect(await (await f(`${url}/`, { signal: outer.signal })).text()).toBe('ok');
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(1);
    // The same requests through the plain fetch leave one listener each until garbage collection.
    const plain = new AbortController();
    for (let i = 0; i < 50; i++) await (await fetch(`${url}/`, { signal: plain.signal })).text();
    expect(getEventListeners(plain.signal, 'abort').length).toBeGreaterThan(1);
  });

  it('aborting the caller signal aborts a request whose body is still streaming', async () => {
    const outer = new AbortController();
    const f = perRequestSignalFetch();
    const res = await f(`${url}/stream`, { signal: outer.signal });
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('first');
    const pending = reader.read();
    outer.abort(new Error('closed'));
    await expect(pending).rejects.toThrow();
    await expect.poll(() => open.size).toBe(0);
  });

  it('a signal aborted before the call aborts it at once', async () => {
    const outer = new AbortController();
    outer.abort(new Error('gone'));
    await expect(perRequestSignalFetch()(`${url}/`, { signal: outer.signal })).rejects.toThrow();
  });

  it('passes requests without a signal through unchanged', async () => {
    expect(await (await perRequestSignalFetch()(`${url}/`)).text()).toBe('ok');
  });
});
