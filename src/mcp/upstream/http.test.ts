// The bounded fetch of an HTTP upstream, against a real HTTP server: a JSON answer or an SSE event
// over the limit never reaches the SDK's transport whole; it becomes a JSON-RPC error for the
// request, marked too large, and everything else passes as it came.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOO_LARGE_MARK } from '../wire/result-size.js';
import { boundedFetch } from './http.js';
import { nodeHttpFetch } from './node-fetch.js';

const LIMIT = 64 * 1024;
const answer = (id: number, text: string): string => JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });

// The reference (boundedFetch over the global fetch) and the node:http fetch, the same cases.
const fetches: [string, (max: number) => typeof fetch][] = [
  ['boundedFetch (the reference)', (max) => boundedFetch(max)],
  ['nodeHttpFetch', (max) => nodeHttpFetch(max)],
];

describe.each(fetches)('%s', (_name, fetchOf) => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const big = 'x'.repeat(LIMIT * 2);
      if (req.url === '/json-small') res.writeHead(200, { 'content-type': 'application/json' }).end(answer(1, 'small'));
      else if (req.url === '/json-big') {
        // Chunked, no content-length: the size is only known while it streams.
        res.writeHead(200, { 'content-type': 'application/json' });
        for (let i = 0; i < 8; i++) res.write(i === 0 ? answer(7, big).slice(0, 1000) : 'y'.repeat(LIMIT / 2));
        res.end();
      } else if (req.url === '/sse') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(
          `event: message\r\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })}\r\n\r\n`,
        );
        const event = `event: message\ndata: ${answer(9, big)}\n\n`;
        // The big event arrives in pieces, so its end is found across chunks.
        for (let at = 0; at < event.length; at += 10_000) res.write(event.slice(at, at + 10_000));
        res.end(': done\n\n');
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const post = (id: number): RequestInit => ({ method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'big' } }) });

  it('passes an answer within the limit as it came', async () => {
    const res = await fetchOf(LIMIT)(`${url}/json-small`, post(1));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(JSON.parse(answer(1, 'small')));
  });

  it('a JSON answer over the limit is the too-large error of its request, with its size', async () => {
    const res = await fetchOf(LIMIT)(`${url}/json-big`, post(7));
    const body = (await res.json()) as { id: number; error: { code: number; data: Record<string, unknown> } };
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(body.id).toBe(7);
    expect(body.error.code).toBe(-32603);
    expect(body.error.data).toEqual({ [TOO_LARGE_MARK]: true, bytes: 1000 + 7 * (LIMIT / 2), limitBytes: LIMIT });
  });

  it('an SSE event over the limit is replaced by the error event; the events around it pass', async () => {
    const res = await fetchOf(LIMIT)(`${url}/sse`, post(9));
    const text = await res.text();
    expect(text.length).toBeLessThan(LIMIT);
    const events = text.split(/\r?\n\r?\n/).filter((e) => e !== '');
    expect(events).toHaveLength(3);
    expect(events[0]).toContain('notifications/progress');
    const error = JSON.parse(
      events[1]!
        .split('\n')
        .find((l) => l.startsWith('data: '))!
        .slice(6),
    ) as { id: number; error: { data: Record<string, unknown> } };
    expect(error.id).toBe(9);
    expect(error.error.data).toMatchObject({ [TOO_LARGE_MARK]: true, limitBytes: LIMIT });
    expect(error.error.data.bytes as number).toBeGreaterThan(LIMIT * 2);
    expect(events[2]).toBe(': done');
  });
});
