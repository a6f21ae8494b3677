import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { TOO_LARGE_MARK } from './result-size.js';
import { asJsonRpcMessage, ChildProcessTransport, InvalidMessageError, StdioServerLineTransport } from './stdio.js';

const VALID: unknown[] = [
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: { a: 1 }, _meta: { progressToken: 'p' } } },
  { jsonrpc: '2.0', id: 'a', method: 'ping' },
  { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 3, progress: 1 } },
  { jsonrpc: '2.0', id: 7, result: { content: [], isError: false } },
  { jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found', data: { x: 1 } } },
  { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' } },
];
const INVALID: unknown[] = [
  null,
  [],
  'x',
  { id: 1, method: 'ping' },
  { jsonrpc: '1.0', id: 1, method: 'ping' },
  { jsonrpc: '2.0', id: 1.5, method: 'ping' },
  { jsonrpc: '2.0', id: null, method: 'ping' },
  { jsonrpc: '2.0', id: 1, method: 3 },
  { jsonrpc: '2.0', id: 1, method: 'x', params: [] },
  { jsonrpc: '2.0', id: 1, method: 'x', params: { _meta: 'no' } },
  { jsonrpc: '2.0', id: 1, method: 'x', params: { _meta: { progressToken: 1.5 } } },
  { jsonrpc: '2.0', id: 1, method: 'x', extra: true },
  { jsonrpc: '2.0', id: 1, result: [] },
  { jsonrpc: '2.0', result: {} },
  { jsonrpc: '2.0', id: 1, result: {}, extra: 1 },
  { jsonrpc: '2.0', id: 1, error: { code: 1.5, message: 'x' } },
  { jsonrpc: '2.0', id: 1, error: { code: 1 } },
  { jsonrpc: '2.0', id: 1 },
];

describe('asJsonRpcMessage', () => {
  it('accepts exactly what the SDK schema accepts, and returns the message unchanged', () => {
    for (const m of VALID) {
      expect(JSONRPCMessageSchema.safeParse(m).success).toBe(true);
      expect(asJsonRpcMessage(m)).toBe(m);
    }
    for (const m of INVALID) {
      expect(JSONRPCMessageSchema.safeParse(m).success, JSON.stringify(m)).toBe(false);
      expect(() => asJsonRpcMessage(m), JSON.stringify(m)).toThrow(InvalidMessageError);
    }
  });

  it('reports bad messages as SyntaxErrors (protocol faults of the peer)', () => {
    expect(() => asJsonRpcMessage({ jsonrpc: '2.0' })).toThrow(SyntaxError);
  });
});

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

describe('ChildProcessTransport', () => {
  it('runs an SDK client against a real server process and stops it on close', async () => {
    const transport = new ChildProcessTransport({
      command: process.execPath,
      args: ['node_modules/@modelcontextprotocol/server-memory/dist/index.js'],
      stderr: 'pipe',
    });
    const client = new Client({ name: 't', version: '1' });
    let closed = false;
    client.onclose = () => (closed = true);
    await client.connect(transport);
    expect(transport.pid).toBeGreaterThan(0);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('create_entities');
    await client.close();
    expect(closed).toBe(true);
    await expect(transport.send({ jsonrpc: '2.0', method: 'notifications/x' })).rejects.toThrow(/Not connected/);
  });

  it('reads lines cut anywhere (CRLF too), reports bad ones, drops a line over the limit with a too-large answer, and stays up', async () => {
    const big = JSON.stringify({ jsonrpc: '2.0', result: { pad: 'x'.repeat(5000) }, id: 7 });
    const script = `const big = ${JSON.stringify(big)};
      process.stdout.write('{"jsonrpc":"2.0","id":1,"res');
      setTimeout(() => process.stdout.write('ult":{}}\\r\\nnot json\\n{"jsonrpc":"2.0","id":2}\\n' + big.slice(0, 3000)), 30);
      setTimeout(() => process.stdout.write(big.slice(3000) + '\\n{"jsonrpc":"2.0","method":"notifications/x"}\\n'), 60);
      process.stdin.on('data', (d) => process.stdout.write(d));`;
    const transport = new ChildProcessTransport({ command: process.execPath, args: ['-e', script], maxMessageBytes: 1024 });
    const got: JSONRPCMessage[] = [];
    const errors: Error[] = [];
    let closed = false;
    transport.onmessage = (m) => got.push(m);
    transport.onerror = (e) => errors.push(e);
    transport.onclose = () => (closed = true);
    await transport.start();
    try {
      await expect.poll(() => got.length, { timeout: 10_000 }).toBe(3);
      expect(got).toEqual([
        { jsonrpc: '2.0', id: 1, result: {} },
        {
          jsonrpc: '2.0',
          id: 7,
          error: {
            code: -32603,
            message: expect.stringMatching(/over the limit of 1024 bytes/),
            data: { [TOO_LARGE_MARK]: true, bytes: big.length, limitBytes: 1024 },
          },
        },
        { jsonrpc: '2.0', method: 'notifications/x' },
      ]);
      // Not JSON, then JSON that is not JSON-RPC.
      expect(errors).toHaveLength(2);
      expect(errors[0]).toBeInstanceOf(SyntaxError);
      // Messages sent in one tick and one by one all arrive, each as one line.
      await Promise.all([transport.send({ jsonrpc: '2.0', id: 8, result: { a: 'é✓' } }), transport.send({ jsonrpc: '2.0', method: 'notifications/y' })]);
      await transport.send({ jsonrpc: '2.0', id: 'z', method: 'ping' });
      await expect.poll(() => got.length, { timeout: 10_000 }).toBe(6);
      expect(got.slice(3)).toEqual([
        { jsonrpc: '2.0', id: 8, result: { a: 'é✓' } },
        { jsonrpc: '2.0', method: 'notifications/y' },
        { jsonrpc: '2.0', id: 'z', method: 'ping' },
      ]);
      expect(closed).toBe(false);
    } finally {
      await transport.close();
    }
    expect(closed).toBe(true);
  });

  it('fails to start for a command that does not exist', async () => {
    const transport = new ChildProcessTransport({ command: '/nonexistent/tool-envelope-test' });
    await expect(transport.start()).rejects.toThrow(/ENOENT/);
  });
});
