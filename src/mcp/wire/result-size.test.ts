// One limit on result size, on both hops, with real processes: an upstream answer over it, or a
// gateway answer that would be over it, is the envelope result-too-large; the upstream is not
// restarted and keeps serving.
import { afterEach, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../../test/oracle.js';
import { contracts } from '../../core/contracts/registry.js';
import { parseUpstreamFlags } from '../../cli/gateway/upstream-flags.js';
import { Gateway } from '../gateway/gateway.js';
import type { GatewayOptions } from '../gateway/options.js';
import fc from 'fast-check';
import { TopLevelIdScanner, jsonBytesBound } from './result-size.js';
import { clientFor, faultSpec, silent } from '../test-support/harness.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function start(options: Partial<GatewayOptions>): Promise<{ gw: Gateway; client: Client }> {
  const gw = await Gateway.start({
    upstreams: [faultSpec()],
    dialect: 'dw',
    log: silent,
    supervision: { healthIntervalMs: 0 },
    deadlineMs: 20_000,
    ...options,
  });
  cleanups.push(() => gw.close());
  const client = await clientFor(gw.createServer());
  cleanups.push(() => client.close());
  return { gw, client };
}

async function big(client: Client, bytes: number): Promise<CallToolResult> {
  const r = (await client.callTool({ name: 'big', arguments: { bytes } })) as CallToolResult;
  expect(oracleValidate('dw', r.structuredContent).errors).toEqual([]);
  return r;
}

describe('result size limit', () => {
  it('an upstream answer over the limit is result-too-large, and the upstream keeps running', async () => {
    const { gw, client } = await start({ maxResultBytes: 1024 * 1024 });
    const pid = gw.upstreams[0]!.pid;
    const r = await big(client, 2 * 1024 * 1024);
    expect(r.isError).toBe(true);
    const err = contracts.dw.decode(r.structuredContent).error!;
    expect(err).toMatchObject({ category: 'internal', code: 'result-too-large', retryable: false });
    expect(err.details).toMatchObject({ upstream: 'fault', hop: 'upstream', limitBytes: 1024 * 1024 });
    expect((err.details as { bytes: number }).bytes).toBeGreaterThan(2 * 1024 * 1024);
    expect(gw.upstreams[0]!.pid).toBe(pid);
    expect(gw.upstreams[0]!.generation).toBe(1);
    expect((await big(client, 10)).isError).toBe(false);
  });

  it('an answer to the client that would be over the limit is result-too-large too', async () => {
    const { gw, client } = await start({ maxResultBytes: 1024 * 1024 });
    // 600 kB from the upstream fits; with the envelope's copy of the text the answer would not.
    const r = await big(client, 600 * 1024);
    const err = contracts.dw.decode(r.structuredContent).error!;
    expect(err).toMatchObject({ code: 'result-too-large', details: { hop: 'client', limitBytes: 1024 * 1024 } });
    expect(JSON.stringify(r).length).toBeLessThan(64 * 1024);
    expect(gw.upstreams[0]!.generation).toBe(1);
    const fits = await big(client, 300 * 1024);
    expect(fits.isError).toBe(false);
    expect((fits.content[0] as { text: string }).text).toHaveLength(300 * 1024);
  });

  it('the default limit is 10 MiB: 11 MiB is result-too-large, not a protocol error and a restart', async () => {
    const { gw, client } = await start({});
    const r = await big(client, 11 * 1024 * 1024);
    expect(contracts.dw.decode(r.structuredContent).error).toMatchObject({
      code: 'result-too-large',
      details: { hop: 'upstream', limitBytes: 10 * 1024 * 1024 },
    });
    expect(gw.upstreams[0]!.generation).toBe(1);
    expect((await big(client, 1)).isError).toBe(false);
  });

  it('--max-result-bytes is read and checked', () => {
    expect(parseUpstreamFlags({ 'max-result-bytes': '65536' })).toMatchObject({ maxResultBytes: 65536 });
    expect(parseUpstreamFlags({ 'max-result-bytes': '65535' })).toMatch(/at least 65536/);
    expect(parseUpstreamFlags({ 'max-result-bytes': 'lots' })).toMatch(/must be an integer/);
  });
});

describe('jsonBytesBound', () => {
  it('is never below the UTF-8 bytes of the JSON text (escapes, surrogates, numbers), so a request or answer under it fits', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(jsonBytesBound(v, Number.POSITIVE_INFINITY)).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(v), 'utf8'));
      }),
      { numRuns: 3000 },
    );
    const hostile = { s: '\u0000"\\\ud800'.repeat(100), n: -1.2345678901234567e-308, k: { ['\u0001'.repeat(50)]: [null, true, 1e21] } };
    expect(jsonBytesBound(hostile, Number.POSITIVE_INFINITY)).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(hostile), 'utf8'));
    // The longest JSON text of a number: a sign, "0.", five zeros, then 17 significant digits (25
    // bytes; fast-check found -0.0000010000136318959522 over the old bound of 24).
    for (const n of [-0.0000010000136318959522, -0.0000012345678901234567, -1.2345678901234567e-308, -123456789012345680000]) {
      expect(jsonBytesBound(n, Number.POSITIVE_INFINITY)).toBeGreaterThanOrEqual(JSON.stringify(n).length);
    }
  });

  it('stops walking once past its budget', () => {
    const wide = Array.from({ length: 100_000 }, () => 'x'.repeat(10));
    const partial = jsonBytesBound(wide, 1000);
    expect(partial).toBeGreaterThan(1000);
    // Past the budget after the list's own count: no string of it was walked.
    expect(partial).toBe(2 + wide.length);
  });
});

describe('TopLevelIdScanner', () => {
  const scan = (text: string, pieces = 1): string | number | undefined => {
    const s = new TopLevelIdScanner();
    const buf = Buffer.from(text);
    const step = Math.ceil(buf.length / pieces);
    for (let i = 0; i < buf.length; i += step) s.feed(buf.subarray(i, i + step));
    return s.id();
  };
  it.each([
    ['{"jsonrpc":"2.0","id":12,"result":{"id":99}}', 12],
    ['{"result":{"id":"inner","content":[{"id":3}]},"jsonrpc":"2.0","id":7}', 7],
    ['{ "result" : { "text" : "a \\"id\\": 5, \\\\" } , "id" : "req-\\"x" }', 'req-"x'],
    ['{"result":{},"jsonrpc":"2.0","id":-3}', -3],
    ['{"result":{"x":"}{]["},"id":42}', 42],
    ['{"method":"notifications/progress","params":{"id":1}}', undefined],
  ])('%s', (text, id) => {
    for (const pieces of [1, 3, 17]) expect(scan(text, pieces)).toBe(id);
  });
});
