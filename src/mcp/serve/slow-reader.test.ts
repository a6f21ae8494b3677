// A client that stops reading while notifications keep coming: the stdio serving transport and the
// HTTP session transport hold at most MAX_UNSENT_NOTIFICATION_BYTES of them, always deliver answers,
// and wait for one 'drain' at a time. Real streams: a PassThrough nobody reads, and a node:http
// server with a raw client that reads its response only once the answer is sent. And the writer to an
// upstream that does not read: one wait for its drain.
import { randomUUID } from 'node:crypto';
import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { NodeSessionTransport } from './http-session.js';
import { isNotification, MAX_UNSENT_NOTIFICATION_BYTES } from './slow-reader.js';
import { StdioServerLineTransport } from './stdio.js';
import { childWriter } from '../upstream/child-pipes.js';
import { rawSession } from '../test-support/harness.js';

const PAD = 'x'.repeat(1_000);
const progress = (i: number): JSONRPCMessage => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: 't', progress: i, message: PAD },
});
const SENT = 20_000; // about 20 MB of notifications, five times the bound

describe('isNotification', () => {
  it('is a message with a method and no id', () => {
    expect(isNotification(progress(1))).toBe(true);
    expect(isNotification({ jsonrpc: '2.0', id: 1, method: 'ping' })).toBe(false);
    expect(isNotification({ jsonrpc: '2.0', id: 1, result: {} })).toBe(false);
  });
});

describe('stdio serving transport, client not reading', () => {
  it('holds at most the bound of notifications, still writes answers, and waits for one drain at a time', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const transport = new StdioServerLineTransport(input, output);
    const errors: Error[] = [];
    transport.onerror = (e) => errors.push(e);
    await transport.start();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < SENT; i++) pending.push(transport.send(progress(i)));
    const held = output.writableLength;
    expect(held).toBeLessThanOrEqual(MAX_UNSENT_NOTIFICATION_BYTES + 2 * 1_100);
    expect(transport.droppedNotifications).toBeGreaterThan(SENT - MAX_UNSENT_NOTIFICATION_BYTES / 1_000);
    expect(errors.map((e) => e.message)).toEqual([expect.stringContaining('the client is not reading')]);
    // Before, each send that found the pipe full added its own 'drain' listener.
    expect(output.listenerCount('drain')).toBeLessThanOrEqual(1);
    // The answer is never dropped.
    pending.push(transport.send({ jsonrpc: '2.0', id: 9, result: { done: true } }));
    expect(output.writableLength).toBeGreaterThan(held);
    const chunks: Buffer[] = [];
    output.on('data', (c: Buffer) => chunks.push(c));
    await Promise.all(pending);
    await new Promise((r) => setImmediate(r));
    const lines = Buffer.concat(chunks).toString('utf8').trim().split('\n');
    expect(lines).toHaveLength(SENT - transport.droppedNotifications + 1);
    expect(JSON.parse(lines.at(-1)!)).toEqual({ jsonrpc: '2.0', id: 9, result: { done: true } });
    // What was kept came in order, from the first notification on.
    expect(lines.slice(0, 3).map((l) => (JSON.parse(l) as { params: { progress: number } }).params.progress)).toEqual([0, 1, 2]);
    await transport.close();
  });
});

describe('HTTP session transport, client not reading', () => {
  it('holds at most the bound of notifications for a client that does not read, and the answer still arrives', async () => {
    const transport = new NodeSessionTransport({ sessionIdGenerator: randomUUID, keepAliveMs: 0 });
    const calls: JSONRPCMessage[] = [];
    transport.onmessage = (m) => {
      if ('method' in m && m.method === 'initialize' && 'id' in m) {
        void transport.send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 't', version: '1' } } });
      } else if ('id' in m) calls.push(m);
    };
    await transport.start();
    const server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => void transport.handleRequest(req, res, JSON.parse(Buffer.concat(parts).toString('utf8'))));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    try {
      const session = await rawSession(url);
      const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'chatty', arguments: {}, _meta: { progressToken: 't' } } });
      const response = new Promise<IncomingMessage>((resolve) =>
        request(url, { method: 'POST', headers: { ...session, 'content-length': Buffer.byteLength(body) } }, resolve).end(body),
      );
      while (calls.length === 0) await new Promise((r) => setTimeout(r, 5));
      // The client reads nothing until the answer is sent: its response is not flowing (no 'data' listener yet).
      for (let i = 0; i < SENT; i++) await transport.send(progress(i), { relatedRequestId: 2 });
      // What the socket and the client's buffers took is the kernel's; the rest was dropped, not held.
      expect(transport.droppedNotifications).toBeGreaterThan(SENT / 2);
      await transport.send({ jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: 'done' }] } });
      const res = await response;
      const text = await new Promise<string>((resolve) => {
        const got: Buffer[] = [];
        res.on('data', (c: Buffer) => got.push(c));
        res.on('end', () => resolve(Buffer.concat(got).toString('utf8')));
      });
      const events = text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)) as { id?: number; params?: { progress: number } });
      expect(events).toHaveLength(SENT - transport.droppedNotifications + 1);
      expect(events.at(-1)).toEqual({ jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: 'done' }] } });
    } finally {
      await transport.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('writing to an upstream that does not read (childWriter)', () => {
  it('waits for one drain for all the sends made while the pipe is full, and delivers every message in order', async () => {
    const stdin = new PassThrough({ highWaterMark: 1024 });
    const send = childWriter(stdin);
    const pending = Array.from({ length: 200 }, (_, i) => send({ jsonrpc: '2.0', id: i, method: 'ping', params: { pad: PAD } }));
    // Before, each send that found the pipe full added its own 'drain' listener (200 here).
    expect(stdin.listenerCount('drain')).toBe(1);
    const chunks: Buffer[] = [];
    stdin.on('data', (c: Buffer) => chunks.push(c));
    await Promise.all(pending);
    const ids = Buffer.concat(chunks)
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: number }).id);
    expect(ids).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });
});
