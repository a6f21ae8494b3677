// What the gateway's HTTP front refuses for a 2026-07-28 request, as the SDK v2 server refuses it for
// its own handlers (the conformance scenarios server-stateless and http-custom-header-server-validation):
// a method it does not serve (404, -32601, not the upstream's -32601 on 200), a call whose upstream
// asks for a client capability the request did not declare (400, -32021, its requiredCapabilities),
// and `Mcp-Param-*` headers that disagree with the arguments of a tool's `x-mcp-header` properties
// (400, -32020). Toward a modern HTTP upstream the gateway sends those headers itself. Real upstreams:
// the conformance server (an SDK v2 McpServer, over stdio and over HTTP) and server-everything (2025).
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { Client as V2Client, StreamableHTTPClientTransport as V2HttpTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { Gateway } from '../gateway/gateway.js';
import { type HttpEndpoint, serveHttp } from './http.js';
import { asResult, everythingSpec, httpClient, repoRoot, silent } from '../test-support/harness.js';
import type { UpstreamSpec } from '../upstream/upstream.js';

const SERVER = join(repoRoot, 'test/fixtures/conformance-server.mjs');
const MODERN = '2026-07-28';
const children: ChildProcess[] = [];
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
  for (const c of children) c.kill('SIGTERM');
});

async function front(upstream: UpstreamSpec): Promise<{ gw: Gateway; endpoint: HttpEndpoint }> {
  const gw = await Gateway.start({ upstreams: [upstream], log: silent, supervision: { healthIntervalMs: 0 } });
  const endpoint = await serveHttp((session) => gw.createServer(session), { port: 0, toolInputSchema: (name) => gw.toolInputSchema(name) });
  closers.push(
    () => gw.close(),
    () => endpoint.close(),
  );
  return { gw, endpoint };
}

/** The conformance server over Streamable HTTP (both eras), its URL from its first stdout line. */
async function httpUpstream(): Promise<string> {
  const child = spawn(process.execPath, [SERVER, '--http', '0', '--modern'], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + 20_000;
  for (;;) {
    const url = /"url":"([^"]+)"/.exec(out)?.[1];
    if (url) return url;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the conformance server did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const envelope = (capabilities: Record<string, unknown> = {}) => ({
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': capabilities,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
});

/** One modern-era request as the suite sends it: the standard headers and any extra ones. */
async function post(url: string, id: number, method: string, params: Record<string, unknown>, headers: Record<string, string> = {}) {
  const name: Record<string, string> = typeof params.name === 'string' ? { 'mcp-name': params.name } : {};
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
      ...name,
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { _meta: envelope(), ...params } }),
  });
  const text = await res.text();
  const data = /^data: (.*)$/m.exec(text)?.[1] ?? text;
  return { status: res.status, body: JSON.parse(data) as { id?: unknown; result?: Record<string, unknown>; error?: { code: number; data?: unknown } } };
}

const callHeader = (url: string, id: number, args: Record<string, unknown>, headers: Record<string, string> = {}) =>
  post(url, id, 'tools/call', { name: 'test_header_param', arguments: args }, headers);

describe('in front of a modern stdio upstream', () => {
  let url = '';
  beforeAll(async () => {
    url = (await front({ name: 'conformance', command: process.execPath, args: [SERVER, '--modern'] })).endpoint.url;
  }, 30_000);

  it('a method the gateway does not serve: 404 and -32601 from the gateway, with the request id', async () => {
    const unknown = await post(url, 601, 'unknown/method', {});
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ id: 601, error: { code: -32601 } });
    // A removed method too, and a served one is still served.
    expect((await post(url, 602, 'ping', {})).status).toBe(404);
    expect((await post(url, 603, 'tools/list', {})).body.result?.tools).toBeDefined();
  });

  it('a tool whose upstream asks for sampling, called without declaring it: 400 and -32021 naming sampling; the upstream call ends', async () => {
    const refused = await post(url, 401, 'tools/call', { name: 'test_missing_capability', arguments: {} });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ id: 401, error: { code: -32021, data: { requiredCapabilities: { sampling: {} } } } });
    // Declared, the same tool gets its input round: the refused call left nothing in flight to confuse it with.
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/call',
        'mcp-name': 'test_missing_capability',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 402,
        method: 'tools/call',
        params: { name: 'test_missing_capability', arguments: {}, _meta: envelope({ sampling: {} }) },
      }),
    });
    expect(res.status).toBe(200);
    const round = (await res.json()) as { result: { resultType: string; inputRequests: Record<string, { method: string }> } };
    expect(round.result.resultType).toBe('input_required');
    expect(Object.values(round.result.inputRequests).map((r) => r.method)).toEqual(['sampling/createMessage']);
  });

  it("Mcp-Param-* headers are checked against the tool's x-mcp-header properties", async () => {
    const ok = await callHeader(url, 201, { region: 'eu' }, { 'Mcp-Param-Region': 'eu' });
    expect(ok.status).toBe(200);
    expect(oracleValidate('mcec', ok.body.result?.structuredContent).errors).toEqual([]);
    expect(ok.body.result?.content).toEqual([{ type: 'text', text: 'region: eu' }]);
    // Base64 (here of a value that is not a plain field value), and surrounding whitespace, decode to the argument.
    const b64 = `=?base64?${Buffer.from(' 東京 ').toString('base64')}?=`;
    expect((await callHeader(url, 202, { region: ' 東京 ' }, { 'Mcp-Param-Region': b64 })).status).toBe(200);
    expect((await callHeader(url, 203, { region: 'eu' }, { 'mcp-param-region': '  eu ' })).status).toBe(200);
    // Refused before the tool runs: missing, different, bad Base64 padding or characters.
    for (const [id, headers] of [
      [204, {}],
      [205, { 'Mcp-Param-Region': 'us' }],
      [206, { 'Mcp-Param-Region': '=?base64?ZXU?=' }],
      [207, { 'Mcp-Param-Region': '=?base64?Z!!=?=' }],
    ] as const) {
      const refused = await callHeader(url, id, { region: 'eu' }, headers);
      expect(refused.status, JSON.stringify(headers)).toBe(400);
      expect(refused.body).toMatchObject({ id, error: { code: -32020, data: { mismatch: { header: 'Mcp-Param-Region' } } } });
    }
    // A value without the whole sentinel is literal.
    expect((await callHeader(url, 208, { region: '=?base64?ZXU=' }, { 'Mcp-Param-Region': '=?base64?ZXU=' })).status).toBe(200);
  });
});

describe('in front of a 2025-era upstream (server-everything)', () => {
  let url = '';
  beforeAll(async () => {
    url = (await front(everythingSpec())).endpoint.url;
  }, 30_000);

  it("its sampling request for a modern call that did not declare sampling: 400 and -32021, and the next call's round works", async () => {
    const args = { name: 'trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 5 } };
    const refused = await post(url, 1, 'tools/call', args);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ id: 1, error: { code: -32021, data: { requiredCapabilities: { sampling: {} } } } });
    const client = new V2Client({ name: 'sampler', version: '1' }, { versionNegotiation: { mode: { pin: MODERN } }, capabilities: { sampling: {} } });
    client.setRequestHandler('sampling/createMessage', async () => ({ model: 'm', role: 'assistant', content: { type: 'text', text: 'sampled answer' } }));
    await client.connect(new V2HttpTransport(new URL(url)));
    try {
      const sampled = asResult(await client.callTool(args));
      expect(JSON.stringify(sampled.content)).toContain('sampled answer');
    } finally {
      await client.close();
    }
  });

  it('a 2025 session still forwards a method the gateway does not know to its upstream', async () => {
    const { client } = await httpClient(url);
    try {
      await expect(
        client.request({ method: 'unknown/method', params: {} }, (await import('@modelcontextprotocol/sdk/types.js')).ResultSchema),
      ).rejects.toMatchObject({
        code: -32601,
      });
    } finally {
      await client.close();
    }
  });
});

describe('in front of a modern HTTP upstream', () => {
  let url = '';
  beforeAll(async () => {
    url = (await front({ name: 'conformance', url: await httpUpstream() })).endpoint.url;
  }, 30_000);

  it('sends the Mcp-Param-* headers the upstream requires, for a 2026-07-28 client and for a 2025 one that sends none', async () => {
    const raw = await callHeader(url, 1, { region: 'eu-west' }, { 'Mcp-Param-Region': 'eu-west' });
    expect(raw.body.result).toMatchObject({ isError: false, content: [{ type: 'text', text: 'region: eu-west' }] });
    // Derived from the arguments, encoded as the spec says (Base64 for a value that is not a plain field value).
    const modern = new V2Client({ name: 'modern', version: '1' }, { versionNegotiation: { mode: { pin: MODERN } } });
    await modern.connect(new V2HttpTransport(new URL(url)));
    const legacy = (await httpClient(url)).client;
    try {
      const viaModern = asResult(await modern.callTool({ name: 'test_header_param', arguments: { region: 'Zürich ' } }));
      expect(viaModern).toMatchObject({ isError: false, content: [{ type: 'text', text: 'region: Zürich ' }] });
      expect(oracleValidate('mcec', viaModern.structuredContent).errors).toEqual([]);
      const viaLegacy = asResult(await legacy.callTool({ name: 'test_header_param', arguments: { region: 'ap' } }));
      expect(viaLegacy).toMatchObject({ isError: false, content: [{ type: 'text', text: 'region: ap' }] });
    } finally {
      await Promise.all([modern.close(), legacy.close()]);
    }
  });
});
