// The node:http fetch of an HTTP upstream against a real node:http server: answers as the SDK's
// transport reads them, a lone SSE answer handed over as JSON, streams kept as streams, answers over
// the limit replaced by the too-large error without being read whole, aborts, non-2xx and 202.
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOO_LARGE_MARK } from '../wire/result-size.js';
import { nodeHttpFetch } from './node-fetch.js';

const LIMIT = 16 * 1024;
/** Over the first event's lookahead (32 KiB), under the limit of `wide`. */
const MID = 40 * 1024;
const answer = (id: number, text: string): string => JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
const progress = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } });
const elicit = JSON.stringify({ jsonrpc: '2.0', id: 100, method: 'elicitation/create', params: { message: 'name?' } });

describe('nodeHttpFetch', () => {
  let server: Server;
  let url: string;
  const seen: IncomingMessage[] = [];
  const endless: { closed: boolean }[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req);
      req.resume();
      const sse = (): void => void res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (req.url === '/json') res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1' }).end(answer(1, 'small'));
      else if (req.url === '/sse-one') {
        sse();
        res.end(`id: prime\ndata: \n\nevent: message\ndata: ${answer(2, 'one')}\n\n`);
      } else if (req.url === '/sse-many') {
        sse();
        res.write(`event: message\ndata: ${progress}\n\n`);
        res.write(`event: message\ndata: ${elicit}\n\n`);
        setTimeout(() => res.end(`event: message\ndata: ${answer(3, 'last')}\n\n`), 20);
      } else if (req.url === '/sse-big-answer') {
        // The first event is the answer, and it is over the limit: it arrives in pieces.
        sse();
        const event = `event: message\ndata: ${answer(4, 'x'.repeat(LIMIT * 3))}\n\n`;
        for (let at = 0; at < event.length; at += 4000) res.write(event.slice(at, at + 4000));
        res.end();
      } else if (req.url === '/sse-mid-answer') {
        // The answer alone, past the lookahead for the first event: trickled in small pieces.
        sse();
        const event = `event: message\ndata: ${answer(6, 'm'.repeat(MID))}\n\n`;
        let at = 0;
        const tick = setInterval(() => {
          res.write(event.slice(at, at + 512));
          at += 512;
          if (at >= event.length) {
            clearInterval(tick);
            res.end();
          }
        }, 0);
      } else if (req.url === '/json-endless') {
        // Never ends: only a fetch that stops reading past the limit answers at all.
        const state = { closed: false };
        endless.push(state);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(answer(5, 'x').slice(0, 20));
        const tick = setInterval(() => res.write('y'.repeat(8192)), 1);
        res.once('close', () => {
          state.closed = true;
          clearInterval(tick);
        });
      } else if (req.url === '/json-declared') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(LIMIT * 4) });
        res.write('{"jsonrpc":"2.0"');
      } else if (req.url === '/slow') {
        sse();
        res.write(`event: message\ndata: ${progress}\n\n`);
      } else if (req.url === '/later') setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(answer(1, 'later')), 40);
      else if (req.url === '/error') res.writeHead(404, { 'content-type': 'text/plain' }).end('Session not found');
      else if (req.url === '/accepted') res.writeHead(202).end();
      else res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const post = (id: number, init: RequestInit = {}): RequestInit => ({
    method: 'POST',
    body: JSON.stringify({ method: 'tools/call', params: { name: 't' }, jsonrpc: '2.0', id }),
    ...init,
  });
  const f = nodeHttpFetch(LIMIT);
  const events = (text: string): string[] => text.split(/\r?\n\r?\n/).filter((e) => e !== '');

  it('a JSON answer is a real Response with its headers; request headers reach the server', async () => {
    const headers = new Headers({ authorization: 'Bearer t', 'mcp-session-id': 's-1', 'mcp-protocol-version': '2025-11-25' });
    const res = await f(`${url}/json`, post(1, { headers }));
    expect(res).toBeInstanceOf(Response);
    expect(res.headers).toBeInstanceOf(Headers);
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBe('s-1');
    expect(await res.json()).toEqual(JSON.parse(answer(1, 'small')));
    const req = seen.at(-1)!;
    expect(req.headers.authorization).toBe('Bearer t');
    expect(req.headers['mcp-session-id']).toBe('s-1');
    expect(req.headers['mcp-protocol-version']).toBe('2025-11-25');
    expect(req.method).toBe('POST');
  });

  it('an SSE answer whose first message is the answer to the request becomes a JSON answer', async () => {
    const res = await f(`${url}/sse-one`, post(2));
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual(JSON.parse(answer(2, 'one')));
  });

  it('an answer past the lookahead for the first event arrives whole, as a stream', async () => {
    const wide = nodeHttpFetch(MID * 4);
    const res = await wide(`${url}/sse-mid-answer`, post(6));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const got = events(await res.text());
    expect(got).toHaveLength(1);
    expect(JSON.parse(got[0]!.replace(/^event: message\ndata: /, ''))).toEqual(JSON.parse(answer(6, 'm'.repeat(MID))));
  });

  it('the same answer to another request id stays a stream', async () => {
    const res = await f(`${url}/sse-one`, post(77));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(events(await res.text())).toHaveLength(2);
  });

  it('an SSE answer of several events (progress, a server request, the answer) stays a stream, in order', async () => {
    const res = await f(`${url}/sse-many`, post(3));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const got = events(await res.text()).map(
      (e) =>
        JSON.parse(
          e
            .split('\n')
            .find((l) => l.startsWith('data: '))!
            .slice(6),
        ) as { id?: number; method?: string },
    );
    expect(got.map((m) => m.method ?? `answer ${m.id}`)).toEqual(['notifications/progress', 'elicitation/create', 'answer 3']);
  });

  it('a GET SSE stream stays a stream', async () => {
    const controller = new AbortController();
    const res = await f(`${url}/slow`, { method: 'GET', signal: controller.signal });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('notifications/progress');
    controller.abort();
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('a first SSE event over the limit is the too-large error event of the request', async () => {
    const res = await f(`${url}/sse-big-answer`, post(4));
    const text = await res.text();
    expect(text.length).toBeLessThan(LIMIT);
    const [event] = events(text);
    const error = JSON.parse(
      event!
        .split('\n')
        .find((l) => l.startsWith('data: '))!
        .slice(6),
    ) as { id: number; error: { data: Record<string, unknown> } };
    expect(error.id).toBe(4);
    expect(error.error.data).toMatchObject({ [TOO_LARGE_MARK]: true, limitBytes: LIMIT });
    expect(error.error.data.bytes as number).toBeGreaterThan(LIMIT * 3);
  });

  it('an endless JSON answer is the too-large error of its request, and its connection is dropped', async () => {
    const res = await f(`${url}/json-endless`, post(5));
    const body = (await res.json()) as { id: number; error: { code: number; data: Record<string, unknown> } };
    expect(body.id).toBe(5);
    expect(body.error.code).toBe(-32603);
    expect(body.error.data[TOO_LARGE_MARK]).toBe(true);
    expect(body.error.data.bytes as number).toBeGreaterThan(LIMIT * 16);
    await expect.poll(() => endless.at(-1)?.closed).toBe(true);
  });

  it('a JSON answer declared over the limit is the too-large error without reading it', async () => {
    const res = await f(`${url}/json-declared`, post(6));
    const body = (await res.json()) as { id: number; error: { data: Record<string, unknown> } };
    expect(body.error.data).toEqual({ [TOO_LARGE_MARK]: true, bytes: LIMIT * 4, limitBytes: LIMIT });
  });

  it('an over-limit answer to a notification (no request id) is an empty 202', async () => {
    const res = await f(`${url}/json-declared`, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    expect(res.status).toBe(202);
    expect(res.body).toBeNull();
  });

  it('an abort before the answer rejects with the reason; an abort mid-answer errors the body', async () => {
    const early = new AbortController();
    early.abort(new DOMException('stop', 'AbortError'));
    await expect(f(`${url}/json`, post(1, { signal: early.signal }))).rejects.toMatchObject({ name: 'AbortError' });
    const mid = new AbortController();
    const res = await f(`${url}/slow`, post(8, { signal: mid.signal }));
    const reader = res.body!.getReader();
    await reader.read();
    mid.abort();
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('leaves no listener on a long-lived signal once its requests are done', async () => {
    const outer = new AbortController();
    for (let i = 0; i < 20; i++) await (await f(`${url}/json`, post(1, { signal: outer.signal }))).text();
    expect(EventEmitter.getEventListeners(outer.signal, 'abort')).toHaveLength(0);
  });

  it('a non-2xx answer keeps its status and body; a 202 has no body', async () => {
    const res = await f(`${url}/error`, post(1));
    expect(res.ok).toBe(false);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('Session not found');
    const accepted = await f(`${url}/accepted`, { method: 'POST', body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toBeNull();
  });

  it('keeps a connection pool per socket bound: a fetch bounded to one socket never opens a second', async () => {
    const portsOf = async (fetchOf: typeof f): Promise<Set<number>> => {
      const from = seen.length;
      await Promise.all(Array.from({ length: 4 }, async () => (await fetchOf(`${url}/later`, post(1))).text()));
      return new Set(seen.slice(from).map((r) => r.socket.remotePort ?? 0));
    };
    // Made after a wider one: the bound of the first fetch made must not be every fetch's.
    const wide = nodeHttpFetch(LIMIT, 4);
    const narrow = nodeHttpFetch(LIMIT, 1);
    expect((await portsOf(wide)).size).toBe(4);
    expect((await portsOf(narrow)).size).toBe(1);
  });
});

describe("nodeHttpFetch's kept-alive connections", () => {
  it("are closed before the server's Keep-Alive timeout, so a request never goes out on one the server is closing", async () => {
    let connections = 0;
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end(answer(1, 'ok'));
    });
    // The server announces `Keep-Alive: timeout=2` and closes an idle connection after 2 s.
    server.keepAliveTimeout = 2_000;
    server.on('connection', () => void connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const fetch = nodeHttpFetch(LIMIT, 7);
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const post = async () => (await fetch(url, { method: 'POST', body: '{}' })).text();
      await post();
      await post();
      expect(connections).toBe(1);
      // Past the announced timeout less a second, before the server's own: the client has let it go.
      await new Promise((r) => setTimeout(r, 1_500));
      await post();
      expect(connections).toBe(2);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
