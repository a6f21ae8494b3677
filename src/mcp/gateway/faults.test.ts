// Faults, with real processes: an upstream that exits mid-call, freezes, never answers or
// writes garbage to stdout; clients that disconnect mid-call; 1 000 concurrent calls over HTTP.
// Each gives the right envelope (or protocol error) and the gateway keeps serving.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../../test/oracle.js';
import { contracts } from '../../core/contracts/registry.js';
import type { ToolOutcome } from '../../core/model.js';
import type { Dialect } from '../envelope.js';
import { Gateway } from './gateway.js';
import type { GatewayOptions } from './options.js';
import { openStore } from '../../store/index.js';
import { serveHttp } from '../serve/http.js';
import { GatewayGovernance } from './governor.js';
import { clientFor, faultSpec, httpClient, silent, tempDir } from '../test-support/harness.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function start(options: Partial<GatewayOptions> = {}, args: string[] = []): Promise<{ gw: Gateway; client: Client }> {
  const gw = await Gateway.start({
    upstreams: [faultSpec({}, args)],
    log: silent,
    deadlineMs: 2_000,
    supervision: { restartInitialDelayMs: 50, healthIntervalMs: 0 },
    ...options,
  });
  cleanups.push(() => gw.close());
  const client = await clientFor(gw.createServer());
  cleanups.push(() => client.close());
  return { gw, client };
}

function envelopeOf(result: CallToolResult, dialect: Dialect = 'mcec'): ToolOutcome {
  const verdict = oracleValidate(dialect === 'contextos' ? 'contextos-result' : dialect, result.structuredContent);
  expect(verdict.errors).toEqual([]);
  const outcome = contracts[dialect].decode(result.structuredContent);
  expect(result.isError).toBe(outcome.status !== 'ok' && outcome.status !== 'completed');
  return outcome;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

async function pidOf(client: Client): Promise<{ pid: number; cancelled: number }> {
  const r = await call(client, 'pid');
  return JSON.parse((r.content[0] as { text: string }).text) as { pid: number; cancelled: number };
}

describe('upstream faults', () => {
  it('an upstream that exits mid-call gives internal/upstream-exited, and is restarted', async () => {
    const { gw, client } = await start({ dialect: 'dw' });
    const before = await pidOf(client);
    const r = await call(client, 'exit');
    const outcome = envelopeOf(r, 'dw');
    expect(outcome.error).toMatchObject({ category: 'internal', code: 'upstream-exited', retryable: true });
    // The gateway-made envelope travels as text too, since there are no upstream blocks.
    expect(JSON.parse((r.content[0] as { text: string }).text)).toEqual(r.structuredContent);
    const echo = await call(client, 'echo', { text: 'still here' });
    expect(echo.content).toEqual([{ type: 'text', text: 'still here' }]);
    expect((await pidOf(client)).pid).not.toBe(before.pid);
    expect(gw.upstreams[0]!.generation).toBe(2);
  });

  it('an upstream killed from outside during a call gives upstream-exited to every call in flight', async () => {
    const { gw, client } = await start({ dialect: 'dw' });
    const pending = [call(client, 'slow', { ms: 10_000 }), call(client, 'slow', { ms: 10_000 })];
    await new Promise((r) => setTimeout(r, 100));
    process.kill(gw.upstreams[0]!.pid!, 'SIGKILL');
    for (const r of await Promise.all(pending)) {
      const outcome = envelopeOf(r, 'dw');
      expect(outcome.error).toMatchObject({ code: 'upstream-exited' });
    }
    expect((await call(client, 'echo', { text: 'ok' })).isError).toBe(false);
  });

  it('a call the upstream never answers gives timeout/upstream-timeout at the deadline, and the upstream is cancelled', async () => {
    const { client } = await start({ deadlineMs: 300, dialect: 'contextos' });
    const before = await pidOf(client);
    const started = Date.now();
    const r = await call(client, 'slow', { ms: 60_000 });
    expect(Date.now() - started).toBeLessThan(3_000);
    const outcome = envelopeOf(r, 'contextos');
    expect(outcome.status).toBe('error');
    expect(outcome.error).toMatchObject({ category: 'timeout', code: 'upstream-timeout' });
    const after = await pidOf(client);
    expect(after.pid).toBe(before.pid);
    expect(after.cancelled).toBe(before.cancelled + 1);
  });

  it('an upstream that freezes entirely is detected by health pings, killed and restarted', async () => {
    const { client } = await start({ deadlineMs: 10_000, supervision: { restartInitialDelayMs: 50, healthIntervalMs: 100, healthTimeoutMs: 300 } });
    const before = await pidOf(client);
    const r = await call(client, 'freeze');
    expect(envelopeOf(r).error).toMatchObject({ category: 'timeout', code: 'upstream-hung' });
    expect((await pidOf(client)).pid).not.toBe(before.pid);
  });

  it('an upstream writing garbage to stdout gives internal/upstream-protocol-error and keeps serving', async () => {
    const { client } = await start({ deadlineMs: 500 });
    const r = await call(client, 'garbage');
    expect(envelopeOf(r).error).toMatchObject({ category: 'internal', code: 'upstream-protocol-error' });
    expect((await call(client, 'echo', { text: 'fine' })).content).toEqual([{ type: 'text', text: 'fine' }]);
  });

  it('an upstream answering with JSON nested deeper than 1000 levels gives internal/upstream-protocol-error, recorded, and keeps serving', async () => {
    // Unbounded, 10 000 levels left the call without an answer (serialising it overflowed the stack) and without an audit record.
    const store = await openStore(join(tempDir(), 'audit.db'));
    cleanups.push(() => store.close());
    const { client } = await start({ governance: new GatewayGovernance({ store }) });
    for (const depth of [1_001, 10_000, 200_000]) {
      const outcome = envelopeOf(await call(client, 'deep', { depth }));
      expect(outcome.error).toMatchObject({ category: 'internal', code: 'upstream-protocol-error' });
      expect(outcome.error?.detail).toContain('nested deeper than 1000 levels');
    }
    // At the bound it is an answer like any other.
    const ok = envelopeOf(await call(client, 'deep', { depth: 990 }));
    expect(ok.status).toBe('ok');
    expect((await call(client, 'echo', { text: 'fine' })).content).toEqual([{ type: 'text', text: 'fine' }]);
    const { records } = await store.listAudit({ tool: 'deep' });
    expect(records.map((r) => r.status).sort()).toEqual(['error', 'error', 'error', 'ok']);
  });

  it('over a transport that does not bound nesting (in memory), a call nested too deep is refused before it is recorded or relayed', async () => {
    const store = await openStore(join(tempDir(), 'audit.db'));
    cleanups.push(() => store.close());
    const { client } = await start({ governance: new GatewayGovernance({ store }) });
    const before = await pidOf(client);
    const x = JSON.parse(`${'['.repeat(20_000)}${']'.repeat(20_000)}`) as unknown;
    await expect(client.callTool({ name: 'echo', arguments: { text: 'hi', x } })).rejects.toMatchObject({
      code: -32600,
      message: expect.stringContaining('the message nests deeper than 1000 levels'),
    });
    // Within the bound (params, arguments, x: 3 levels above the array) the call runs as usual.
    const y = JSON.parse(`${'['.repeat(996)}${']'.repeat(996)}`) as unknown;
    expect((await call(client, 'echo', { text: 'fine', y })).content).toEqual([{ type: 'text', text: 'fine' }]);
    expect((await pidOf(client)).pid).toBe(before.pid);
    const { records } = await store.listAudit({ tool: 'echo' });
    expect(records.map((r) => r.status)).toEqual(['ok']);
  });

  it('a notification nested too deep is dropped and logged; the call goes on', async () => {
    const lines: string[] = [];
    const { client } = await start({ log: (line: string) => lines.push(line) });
    const r = await call(client, 'deep-notice', { depth: 50_000 });
    expect(r.content).toEqual([{ type: 'text', text: 'after' }]);
    expect(lines.some((l) => l.includes('dropped a notifications/message notification nested deeper than 1000 levels'))).toBe(true);
  });

  it('an upstream flooding stdout with lines that are not MCP costs the log 10 lines and a count, not a line each', async () => {
    const lines: string[] = [];
    const { gw, client } = await start({ log: (line: string) => lines.push(line) });
    expect((await call(client, 'flood', { lines: 20_000 })).content).toEqual([{ type: 'text', text: 'after' }]);
    expect((await call(client, 'echo', { text: 'fine' })).content).toEqual([{ type: 'text', text: 'fine' }]);
    await gw.close();
    expect(lines.filter((l) => l.includes('protocol error:'))).toHaveLength(10);
    expect(lines).toContain('[fault] (19990 more protocol errors not shown)');
  });

  it('refuses a call beyond maxCallsInFlight on a session with -32000, and takes calls again as they answer', async () => {
    const store = await openStore(join(tempDir(), 'audit.db'));
    cleanups.push(() => store.close());
    const { client } = await start({ maxCallsInFlight: 3, governance: new GatewayGovernance({ store }) });
    const settled = await Promise.allSettled(Array.from({ length: 5 }, () => call(client, 'slow', { ms: 300 })));
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(3);
    for (const s of settled.filter((x) => x.status === 'rejected')) {
      expect((s as PromiseRejectedResult).reason).toMatchObject({
        code: -32000,
        message: expect.stringContaining('Too many tool calls in flight on this session (3)'),
      });
    }
    // Answered calls, and failed ones, give their place back.
    expect(envelopeOf(await call(client, 'deep', { depth: 2_000 })).error?.code).toBe('upstream-protocol-error');
    const again = await Promise.all(Array.from({ length: 3 }, () => call(client, 'slow', { ms: 10 })));
    expect(again.map((r) => r.content)).toEqual(Array(3).fill([{ type: 'text', text: 'slept 10' }]));
    // The refused calls were neither recorded nor relayed.
    expect((await store.listAudit({ tool: 'slow' })).records).toHaveLength(6);
  });

  it('while the upstream restarts, calls get upstream-unavailable with a retry hint', async () => {
    const { client } = await start({ dialect: 'dw', waitReadyMs: 50, supervision: { restartInitialDelayMs: 1_500, healthIntervalMs: 0 } });
    await call(client, 'exit');
    const r = await call(client, 'echo', { text: 'x' });
    const outcome = envelopeOf(r, 'dw');
    expect(outcome.error).toMatchObject({ category: 'internal', code: 'upstream-unavailable', retryable: true });
    await expect.poll(async () => (await call(client, 'echo', { text: 'back' })).isError, { timeout: 5_000 }).toBe(false);
  });

  it('an upstream that cannot start is a clear error at startup', async () => {
    await expect(Gateway.start({ upstreams: [faultSpec({}, ['--exit-at-start'])], log: silent })).rejects.toThrow(/fault.*failed to start/);
    await expect(Gateway.start({ upstreams: [{ name: 'nope', command: '/nonexistent/binary' }], log: silent })).rejects.toThrow(/failed to start/);
  });

  it('forwards progress and the client cancelling a call reaches the upstream', async () => {
    const { client } = await start();
    const seen: number[] = [];
    const r = (await client.callTool({ name: 'progress', arguments: {} }, undefined, { onprogress: (p) => seen.push(p.progress) })) as CallToolResult;
    expect(seen).toEqual([1, 2, 3]);
    expect(envelopeOf(r).status).toBe('ok');
    const before = await pidOf(client);
    const ac = new AbortController();
    const pending = client.callTool({ name: 'slow', arguments: { ms: 10_000 } }, undefined, { signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    await expect(pending).rejects.toThrow();
    await expect.poll(async () => (await pidOf(client)).cancelled).toBe(before.cancelled + 1);
  });
});

describe('clients over Streamable HTTP', () => {
  it('a client disconnecting mid-call does not disturb the gateway; terminating the session cancels its upstream call', async () => {
    const { gw } = await start({ deadlineMs: 20_000 });
    const endpoint = await serveHttp(() => gw.createServer(), { port: 0 });
    cleanups.push(() => endpoint.close());
    const watcher = await httpClient(endpoint.url);
    cleanups.push(() => watcher.client.close());
    const before = await pidOf(watcher.client);

    // Drop the connection mid-call.
    const a = await httpClient(endpoint.url);
    const dropped = a.client.callTool({ name: 'slow', arguments: { ms: 1_000 } }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    await a.transport.close();
    expect(await dropped).toBeInstanceOf(Error);
    expect((await call(watcher.client, 'echo', { text: 'alive' })).isError).toBe(false);

    // End the session mid-call: its in-flight call is cancelled upstream.
    const b = await httpClient(endpoint.url);
    const ended = b.client.callTool({ name: 'slow', arguments: { ms: 15_000 } }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    await b.transport.terminateSession();
    await b.transport.close();
    await ended;
    await expect.poll(async () => (await pidOf(watcher.client)).cancelled, { timeout: 5_000 }).toBeGreaterThan(before.cancelled);
    expect((await call(watcher.client, 'echo', { text: 'still alive' })).content).toEqual([{ type: 'text', text: 'still alive' }]);
  });

  it('1 000 concurrent calls over HTTP all get their own valid envelope', async () => {
    const { gw } = await start({ dialect: 'dw', deadlineMs: 30_000 });
    const endpoint = await serveHttp(() => gw.createServer(), { port: 0 });
    cleanups.push(() => endpoint.close());
    const clients = await Promise.all(Array.from({ length: 4 }, () => httpClient(endpoint.url)));
    for (const c of clients) cleanups.push(() => c.client.close());
    const results = await Promise.all(Array.from({ length: 1_000 }, (_, i) => call(clients[i % clients.length]!.client, 'echo', { text: `call ${i}` })));
    results.forEach((r, i) => {
      expect(r.content).toEqual([{ type: 'text', text: `call ${i}` }]);
      const outcome = envelopeOf(r, 'dw');
      expect(outcome.status).toBe('ok');
      expect(outcome.result).toEqual({ text: `call ${i}` });
    });
    expect((await call(clients[0]!.client, 'echo', { text: 'after' })).isError).toBe(false);
  });
});
