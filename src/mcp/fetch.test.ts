import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEventListeners } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nodeHttpFetch, perRequestSignalFetch } from './fetch.js';

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

describe('nodeHttpFetch', () => {
  let server: Server;
  let url: string;
  let release: (() => void) | undefined;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const id = body ? (JSON.parse(body) as { id?: unknown }).id : undefined;
        const answer = `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { echo: body.length } })}\n\n`;
        if (req.url === '/json') {
          res.writeHead(200, { 'content-type': 'application/json', 'x-two': ['a', 'b'] });
          res.end(JSON.stringify({ got: body, method: req.method, h: req.headers['x-h'] ?? null }));
        } else if (req.url === '/accepted') {
          res.writeHead(202).end();
        } else if (req.url === '/sse-answer') {
          // A priming event (id, no data), then the answer, as the SDK's servers send them.
          res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 's1' });
          res.write('id: e1\ndata: \n\n');
          res.end(`event: message\nid: e2\n${answer}`);
        } else if (req.url === '/sse-progress') {
          // A notification first: the stream must reach the caller before the answer exists.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })}\n\n`);
          release = () => res.end(answer);
        } else if (req.url === '/sse-open') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(': keep-alive\n\n');
        } else res.writeHead(404).end('no');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const post = (id: number | string) => ({
    method: 'POST',
    headers: new Headers({ 'content-type': 'application/json', 'x-h': 'v' }),
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call' }),
  });

  it('answers like fetch for a whole answer: status, headers, body, and one abort listener only while in flight', async () => {
    const outer = new AbortController();
    const res = await nodeHttpFetch()(new URL(`${url}/json`), { ...post(1), signal: outer.signal });
    expect(res.ok).toBe(true);
    expect(res.status).toBe(200);
    expect(res.headers.get('Content-Type')).toBe('application/json');
    expect(res.headers.get('x-two')).toBe('a, b');
    expect(await res.json()).toEqual({ got: post(1).body, method: 'POST', h: 'v' });
    await expect(res.text()).rejects.toThrow(/already been read/);
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(0);
    const accepted = await nodeHttpFetch()(`${url}/accepted`, post(2));
    expect(accepted.status).toBe(202);
    expect(accepted.body).toBeNull();
    const missing = await nodeHttpFetch()(`${url}/nope`);
    expect([missing.ok, missing.status, await missing.text()]).toEqual([false, 404, 'no']);
  });

  it('hands a one-event SSE answer over as JSON only when asked to; otherwise the stream as sent', async () => {
    const asJson = await nodeHttpFetch({ sseAnswerAsJson: true })(`${url}/sse-answer`, post(7));
    expect(asJson.headers.get('content-type')).toBe('application/json');
    expect(asJson.headers.get('mcp-session-id')).toBe('s1');
    expect(await asJson.json()).toEqual({ jsonrpc: '2.0', id: 7, result: { echo: post(7).body.length } });
    const byName = await nodeHttpFetch({ sseAnswerAsJson: true })(`${url}/sse-answer`, post('r-1'));
    expect(await byName.json()).toMatchObject({ id: 'r-1' });
    const streamed = await nodeHttpFetch()(`${url}/sse-answer`, post(7));
    expect(streamed.headers.get('content-type')).toBe('text/event-stream');
    expect(await streamed.text()).toContain('id: e1\ndata: \n\nevent: message\nid: e2\ndata: {"jsonrpc":"2.0","id":7');
  });

  it('keeps the stream when a notification comes first, delivering it before the answer exists', async () => {
    const res = await nodeHttpFetch({ sseAnswerAsJson: true })(`${url}/sse-progress`, post(8));
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('notifications/progress');
    release!();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    expect(rest).toContain('"id":8');
  });

  it('aborting the signal ends a body that is still streaming', async () => {
    const outer = new AbortController();
    const res = await nodeHttpFetch()(`${url}/sse-open`, { signal: outer.signal });
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('keep-alive');
    const pending = reader.read();
    outer.abort(new Error('closed'));
    await expect(pending).rejects.toThrow('closed');
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(0);
  });

  it('rejects a refused connection as fetch does, and an aborted signal at once', async () => {
    await expect(nodeHttpFetch()('http://127.0.0.1:1/')).rejects.toThrow(TypeError);
    const outer = new AbortController();
    outer.abort(new Error('gone'));
    await expect(nodeHttpFetch()(`${url}/json`, { signal: outer.signal })).rejects.toThrow('gone');
  });
});
