// The gateway's own session transport (serve/http-session.ts) against its reference, the SDK's
// NodeStreamableHTTPServerTransport: the same raw HTTP exchanges through each, answered alike
// (status, content type, session header, JSON-RPC messages), and a real SDK client through each.
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { Gateway } from '../gateway/gateway.js';
import { serveHttp, type HttpEndpoint } from './http.js';
import { useReferenceToolDispatch } from '../gateway/session-server.js';
import { repoRoot, silent, tempDir } from '../test-support/harness.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');
const TRANSPORTS = ['native', 'sdk'] as const;
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

interface Seen {
  status: number;
  type: string | null;
  session: boolean;
  allow: string | null;
  messages: unknown[];
}

/** What a client sees of an answer, without what differs per run (ids, times). */
async function seen(r: Response): Promise<Seen> {
  const text = (await r.text())
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'ID')
    .replace(/\b[0-9a-f]{32}\b/g, 'HEX')
    .replace(/"(latencyMs|latency_ms|duration_ms)":\d+/g, '"$1":0');
  const type = r.headers.get('content-type');
  const messages = type?.startsWith('text/event-stream')
    ? text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)))
    : text
      ? [JSON.parse(text)]
      : [];
  return { status: r.status, type: type?.split(';')[0] ?? null, session: r.headers.has('mcp-session-id'), allow: r.headers.get('allow'), messages };
}

type Step =
  | 'initialize'
  | 'initialized'
  | 'call'
  | 'batch'
  | 'unknownTool'
  | 'badParams'
  | 'badAccept'
  | 'badType'
  | 'notJsonRpc'
  | 'badVersion'
  | 'reinitialize'
  | 'tooBig'
  | 'getNotAccepted'
  | 'put'
  | 'delete'
  | 'afterDelete';

/** One scripted conversation, raw: every answer as the client sees it. */
async function conversation(url: string): Promise<Record<Step, Seen>> {
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(url, { method: 'POST', headers: { ...HEADERS, ...headers }, body: JSON.stringify(body) });
  const out = {} as Record<Step, Seen>;
  const init = await fetch(url, { method: 'POST', headers: HEADERS, body: JSON.stringify(INIT) });
  const id = init.headers.get('mcp-session-id')!;
  out.initialize = await seen(init);
  const s = { 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' };
  out.initialized = await seen(await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, s));
  out.call = await seen(await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_notes', arguments: {} } }, s));
  out.batch = await seen(
    await post(
      [
        { jsonrpc: '2.0', id: 3, method: 'ping' },
        { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'write_note', arguments: { text: 'b' } } },
      ],
      s,
    ),
  );
  out.unknownTool = await seen(await post({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'nope', arguments: {} } }, s));
  out.badParams = await seen(await post({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { arguments: {} } }, s));
  out.badAccept = await seen(await post({ jsonrpc: '2.0', id: 7, method: 'ping' }, { ...s, accept: 'application/json' }));
  out.badType = await seen(await post({ jsonrpc: '2.0', id: 8, method: 'ping' }, { ...s, 'content-type': 'text/plain' }));
  out.notJsonRpc = await seen(await post({ jsonrpc: '2.0', id: 9 }, s));
  out.badVersion = await seen(await post({ jsonrpc: '2.0', id: 10, method: 'ping' }, { ...s, 'mcp-protocol-version': '1999-01-01' }));
  out.reinitialize = await seen(await post(INIT, s));
  out.tooBig = await seen(
    await post(
      Array.from({ length: 101 }, (_, i) => ({ jsonrpc: '2.0', id: 100 + i, method: 'ping' })),
      s,
    ),
  );
  out.getNotAccepted = await seen(await fetch(url, { method: 'GET', headers: { ...s, accept: 'application/json' } }));
  out.put = await seen(await fetch(url, { method: 'PUT', headers: { ...HEADERS, ...s }, body: '{}' }));
  out.delete = await seen(await fetch(url, { method: 'DELETE', headers: s }));
  out.afterDelete = await seen(await post({ jsonrpc: '2.0', id: 11, method: 'ping' }, s));
  return out;
}

describe('HTTP sessions: the native transport and the SDK transport (its reference) answer alike', () => {
  let gw: Gateway;
  const endpoints = new Map<(typeof TRANSPORTS)[number], HttpEndpoint>();
  // The native transport with its JSON answers turned off: the reference of that trick.
  let sseAnswers: HttpEndpoint;

  beforeAll(async () => {
    gw = await Gateway.start({
      upstreams: [{ name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: join(tempDir(), 'count.jsonl') } }],
      log: silent,
    });
    for (const t of TRANSPORTS) endpoints.set(t, await serveHttp((session) => gw.createServer(session), { port: 0, sessionTransport: t }));
    sseAnswers = await serveHttp((session) => gw.createServer(session), { port: 0, sessionTransport: 'native', sessionAnswers: 'sse' });
  });
  afterAll(async () => {
    for (const e of endpoints.values()) await e.close();
    await sseAnswers.close();
    await gw.close();
  });

  it('the same raw exchanges get the same answers: SSE per request, 202 for notifications, the same refusals', async () => {
    const native = await conversation(sseAnswers.url);
    const sdk = await conversation(endpoints.get('sdk')!.url);
    expect(native).toEqual(sdk);
    // And what they agree on is what a 2025-era client expects.
    expect(native.initialize).toMatchObject({ status: 200, type: 'text/event-stream', session: true });
    expect(native.initialized).toMatchObject({ status: 202, messages: [] });
    expect(native.call).toMatchObject({ status: 200, type: 'text/event-stream', messages: [{ id: 2, result: { isError: false } }] });
    expect(oracleValidate('mcec', (native.call.messages[0] as { result: { structuredContent: unknown } }).result.structuredContent).errors).toEqual([]);
    expect(native.batch.messages.map((m) => (m as { id: number }).id).sort()).toEqual([3, 4]);
    expect(native.badParams.messages).toMatchObject([{ id: 6, error: { code: -32602 } }]);
    expect(native.badAccept.status).toBe(406);
    expect(native.badType.status).toBe(415);
    expect(native.notJsonRpc).toMatchObject({ status: 400, messages: [{ error: { code: -32700 } }] });
    expect(native.badVersion.status).toBe(400);
    expect(native.reinitialize).toMatchObject({ status: 400, messages: [{ error: { code: -32600 } }] });
    expect(native.tooBig).toMatchObject({ status: 400, messages: [{ error: { code: -32600 } }] });
    expect(native.getNotAccepted.status).toBe(406);
    expect(native.put).toMatchObject({ status: 405, allow: 'GET, POST, DELETE' });
    expect(native.delete.status).toBe(200);
    expect(native.afterDelete.status).toBe(404);
  });

  it('by default a lone tools/call answered with nothing before gets its answer as application/json; the rest as the SDK answers', async () => {
    const json = await conversation(endpoints.get('native')!.url);
    const sdk = await conversation(endpoints.get('sdk')!.url);
    // Each of these POSTs holds one tools/call, and nothing is sent on it before its answer; every
    // other request (initialize, ping) keeps its SSE stream.
    const lone = new Set<Step>(['call', 'unknownTool', 'badParams']);
    for (const step of Object.keys(sdk) as Step[]) {
      const expected = lone.has(step) ? { ...sdk[step], type: 'application/json' } : sdk[step];
      expect({ step, ...json[step] }).toEqual({ step, ...expected });
    }
    expect(sdk.call.type).toBe('text/event-stream');
    expect(json.initialize.type).toBe('text/event-stream');
    // Two requests in one POST: a stream, both answers on it.
    expect(json.batch).toMatchObject({ status: 200, type: 'text/event-stream' });
  });

  it("tools/call: the plain dispatch and the SDK's (its reference) answer valid and malformed calls alike", async () => {
    const url = endpoints.get('native')!.url;
    const calls: unknown[] = [
      { name: 'write_note', arguments: { text: 'plain' } },
      { name: 'write_note', arguments: { text: 'token' }, _meta: { progressToken: 'p1' } },
      { _meta: { progressToken: 7, other: { kept: true } }, arguments: { text: 'meta first' }, name: 'write_note' },
      { name: 'read_notes' },
      { name: 'write_note', arguments: { text: 'extra' }, extra: 'stripped by the SDK' },
      { name: 'write_note', arguments: { text: 'own proto', ['__proto__']: { polluted: true } } },
      { name: 'write_note', arguments: { text: 'fraction' }, _meta: { progressToken: 1.5 } },
      { name: 'write_note', arguments: { text: 'object token' }, _meta: { progressToken: {} } },
      { name: 'write_note', arguments: { text: 'related' }, _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't' } } },
      { name: 'write_note', arguments: { text: 'task' }, task: { ttl: 1000 } },
      { name: 'write_note', arguments: ['not', 'an', 'object'] },
      { name: 'write_note', arguments: null },
      { name: 42, arguments: {} },
      { arguments: {} },
      { name: 'nope', arguments: {} },
    ];
    const run = async (): Promise<Seen[]> => {
      const init = await fetch(url, { method: 'POST', headers: HEADERS, body: JSON.stringify(INIT) });
      await init.text();
      const s = { ...HEADERS, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
      await (await fetch(url, { method: 'POST', headers: s, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
      const out: Seen[] = [];
      for (const [i, params] of calls.entries()) {
        // Raw text: JSON.stringify of a literal would drop nothing here, but an own `__proto__` key must reach the wire as data.
        const body = `{"jsonrpc":"2.0","id":${i + 1},"method":"tools/call","params":${JSON.stringify(params).replace('"own proto"}', '"own proto","__proto__":{"polluted":true}}')}}`;
        out.push(await seen(await fetch(url, { method: 'POST', headers: s, body })));
      }
      await (await fetch(url, { method: 'DELETE', headers: s })).text();
      return out;
    };
    const plain = await run();
    const before = useReferenceToolDispatch(true);
    let reference: Seen[];
    try {
      reference = await run();
    } finally {
      useReferenceToolDispatch(before);
    }
    expect(plain).toEqual(reference);
    const results = plain.map((a) => a.messages[0] as { result?: { isError: boolean; structuredContent: unknown }; error?: { code: number } });
    // The first six are valid calls with envelopes. A bad progress token is refused by the transport's
    // JSON-RPC check (-32700), a related-task key is a valid call, the rest the SDK refuses (-32602).
    for (const r of results.slice(0, 6)) expect(oracleValidate('mcec', r.result?.structuredContent).errors).toEqual([]);
    expect(results.slice(6).map((r) => r.error?.code ?? 'result')).toEqual([-32700, -32700, 'result', ...Array(6).fill(-32602)]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each(TRANSPORTS)('a real SDK client through the %s transport: list, calls in flight together, envelopes valid, session closed', async (t) => {
    const endpoint = endpoints.get(t)!;
    const client = new Client({ name: 'two-transports', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(endpoint.url)));
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('write_note');
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => client.callTool({ name: 'write_note', arguments: { text: `n${i}` } })));
    results.forEach((r, i) => {
      expect(oracleValidate('mcec', r.structuredContent).errors).toEqual([]);
      expect(r.content).toEqual([{ type: 'text', text: `wrote n${i}` }]);
    });
    expect(endpoint.sessions).toBe(1);
    await client.close();
  });
});
