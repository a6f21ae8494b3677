// Liberal in what it accepts (issue 40 point 3): a real dual-era SDK v2 server whose 2026-07-28
// answers leave out resultType (test-support/dual-era-server.mjs --omit-result-type), behind the
// gateway over Streamable HTTP. Its results are read as complete, with a warning in the log; with
// `strict` the refusal of before stays. A v2 client pinned to 2026-07-28 refuses any answer without
// resultType itself, so its successful calls through the gateway show the gateway's answers carry it.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client as V2Client, StreamableHTTPClientTransport as V2HttpTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { Gateway } from '../gateway/gateway.js';
import { serveHttp, type HttpEndpoint } from '../serve/http.js';
import { repoRoot } from '../test-support/harness.js';

const DUAL = join(repoRoot, 'src/mcp/test-support/dual-era-server.mjs');

let upstream: ChildProcess;
let url: string;
beforeAll(async () => {
  upstream = spawn(process.execPath, [DUAL, '--omit-result-type'], { stdio: ['ignore', 'pipe', 'inherit'] });
  url = await new Promise<string>((resolve) => upstream.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())));
});
afterAll(() => {
  upstream?.kill();
});

async function gatewayFor(strict: boolean): Promise<{ gw: Gateway; endpoint: HttpEndpoint; lines: string[] }> {
  const lines: string[] = [];
  const gw = await Gateway.start({ upstreams: [{ name: 'dual', url, strict }], log: (l) => lines.push(l), supervision: { healthIntervalMs: 0 } });
  const endpoint = await serveHttp((session) => gw.createServer(session), { port: 0 });
  return { gw, endpoint, lines };
}

type Called = { content: unknown[]; structuredContent?: unknown; isError?: boolean };

describe('a 2026-07-28 upstream that leaves out resultType', () => {
  let gw: Gateway;
  let endpoint: HttpEndpoint;
  let lines: string[];
  beforeAll(async () => {
    ({ gw, endpoint, lines } = await gatewayFor(false));
  });
  afterAll(async () => {
    await endpoint?.close();
    await gw?.close();
  });

  it('is read as complete: a 2026-07-28 client and a 2025 one get the tool result, and the log says so once', async () => {
    expect(gw.upstreams[0]!.era).toBe('modern');
    const modern = new V2Client({ name: 'pinned', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await modern.connect(new V2HttpTransport(new URL(endpoint.url)));
    const old = new V1Client({ name: 'v1', version: '1' });
    await old.connect(new V1HttpTransport(new URL(endpoint.url)));
    try {
      for (const client of [modern, old]) {
        const r = (await client.callTool({ name: 'echo', arguments: { text: 'no resultType' } })) as Called;
        expect(r.isError, JSON.stringify(r)).toBe(false);
        expect(r.content).toEqual([{ type: 'text', text: 'no resultType' }]);
        expect(oracleValidate('mcec', r.structuredContent).errors).toEqual([]);
        expect((r.structuredContent as { result: unknown }).result).toEqual({ echoed: 'no resultType' });
      }
      const warnings = lines.filter((l) => l.includes('without the resultType 2026-07-28 requires'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/^\[dual\] answered request .* read as 'complete'/);
    } finally {
      await modern.close();
      await old.close();
    }
  });
});

describe('the same upstream with strict: true (--strict-upstream)', () => {
  let gw: Gateway;
  let endpoint: HttpEndpoint;
  beforeAll(async () => {
    ({ gw, endpoint } = await gatewayFor(true));
  });
  afterAll(async () => {
    await endpoint?.close();
    await gw?.close();
  });

  it('keeps the refusal: the upstream answer is a protocol fault naming the missing resultType, and the gateway lists none of its tools', async () => {
    const fault = await gw.upstreams[0]!.request({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } }, { timeoutMs: 10_000 }).catch(
      (e: unknown) => e,
    );
    expect(fault).toMatchObject({ kind: 'protocol' });
    expect(String((fault as Error).message)).toContain('missing required resultType');
    const client = new V2Client({ name: 'pinned', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new V2HttpTransport(new URL(endpoint.url)));
    try {
      expect((await client.listTools()).tools).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
