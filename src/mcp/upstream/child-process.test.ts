import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { TOO_LARGE_MARK } from '../wire/result-size.js';
import { ChildProcessTransport } from './child-process.js';

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
