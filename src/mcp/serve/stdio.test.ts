import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { InvalidMessageError } from '../wire/message.js';
import { StdioServerLineTransport } from './stdio.js';

describe('StdioServerLineTransport', () => {
  function open(): { input: PassThrough; output: PassThrough; got: JSONRPCMessage[]; errors: Error[]; transport: StdioServerLineTransport } {
    const input = new PassThrough();
    const output = new PassThrough();
    const transport = new StdioServerLineTransport(input, output);
    const got: JSONRPCMessage[] = [];
    const errors: Error[] = [];
    transport.onmessage = (m) => got.push(m);
    transport.onerror = (e) => errors.push(e);
    return { input, output, got, errors, transport };
  }

  it('splits lines across chunks (CRLF too), reports bad lines and goes on reading', async () => {
    const { input, got, errors, transport } = open();
    await transport.start();
    const text = '{"jsonrpc":"2.0","id":1,"method":"ping"}\r\nnot json\n{"jsonrpc":"2.0","id":2}\n{"jsonrpc":"2.0","id":3,"method":"pi';
    const bytes = Buffer.from(text + 'ng","params":{"s":"é✓"}}\n');
    // Byte by byte, so that lines and multi-byte characters are cut everywhere.
    for (const b of bytes) input.write(Buffer.from([b]));
    await new Promise((r) => setImmediate(r));
    expect(got).toEqual([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 3, method: 'ping', params: { s: 'é✓' } },
    ]);
    expect(errors.map((e) => e instanceof SyntaxError)).toEqual([true, true]);
    await transport.close();
  });

  it('answers a request nested deeper than 1000 levels with an Invalid Request error, without parsing it, and goes on reading', async () => {
    const { input, output, got, errors, transport } = open();
    await transport.start();
    const written: string[] = [];
    output.on('data', (c: Buffer) => written.push(c.toString()));
    const nest = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    input.write(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"x":${nest(200_000)}}}\n`);
    // A notification has nobody to answer: it is reported only.
    input.write(`{"jsonrpc":"2.0","method":"notifications/x","params":{"x":${nest(2_000)}}}\n`);
    // At the bound (998 + the message and params objects) it is read as usual.
    input.write(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":${nest(998)}}}\n{"jsonrpc":"2.0","id":3,"method":"ping"}\n`);
    await new Promise((r) => setImmediate(r));
    expect(written.join('')).toBe(
      '{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"Invalid Request: the message nests deeper than 1000 levels"}}\n',
    );
    expect(got.map((m) => (m as { id: unknown }).id)).toEqual([2, 3]);
    expect(errors.map((e) => [e instanceof InvalidMessageError, e.message])).toEqual([
      [true, 'Invalid Request: the message nests deeper than 1000 levels'],
      [true, 'Invalid Request: the message nests deeper than 1000 levels'],
    ]);
    await transport.close();
  });

  it('writes one line per message; messages sent in one tick leave together', async () => {
    const { output, transport } = open();
    await transport.start();
    const chunks: string[] = [];
    output.on('data', (c: Buffer) => chunks.push(c.toString()));
    await Promise.all([transport.send({ jsonrpc: '2.0', id: 1, result: {} }), transport.send({ jsonrpc: '2.0', method: 'notifications/x' })]);
    await new Promise((r) => setImmediate(r));
    expect(chunks.join('')).toBe('{"jsonrpc":"2.0","id":1,"result":{}}\n{"jsonrpc":"2.0","method":"notifications/x"}\n');
    await transport.close();
  });

  it('closes on a line longer than 10 MiB', async () => {
    const { input, errors, transport } = open();
    let closed = false;
    transport.onclose = () => (closed = true);
    await transport.start();
    input.write(Buffer.alloc(6 * 1024 * 1024, 0x20));
    input.write(Buffer.alloc(6 * 1024 * 1024, 0x20));
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(true);
    expect(errors[0]?.message).toMatch(/maximum size/);
  });
});
