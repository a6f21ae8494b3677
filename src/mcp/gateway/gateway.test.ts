// End to end: the SDK's own Client against the gateway in front of the real reference
// servers (server-everything, server-memory), for each of the three contracts.
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, LoggingMessageNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../../test/oracle.js';
import { contracts } from '../../core/contracts/registry.js';
import { isOk, type ContentBlock } from '../../core/model.js';
import type { Dialect } from '../envelope.js';
import { toolOutputSchema } from './output-schema.js';
import { withBinaryDescribed } from '../binary.js';
import { Gateway } from './gateway.js';
import { META_KEYS } from '../wire/meta-keys.js';
import { serveHttp } from '../serve/http.js';
import { readToolResult } from '../reader.js';
import {
  EVERYTHING,
  GATEWAY_CLIENT_CAPABILITIES,
  clientFor,
  directClient,
  everythingSpec,
  httpClient,
  memorySpec,
  rawSession,
  silent,
  tempDir,
} from '../test-support/harness.js';

const DIALECTS: Dialect[] = ['mcec', 'dw', 'contextos'];

function expectEnvelope(dialect: Dialect, result: CallToolResult): void {
  const verdict = oracleValidate(dialect === 'contextos' ? 'contextos-result' : dialect, result.structuredContent);
  expect(verdict.errors, JSON.stringify(result.structuredContent).slice(0, 500)).toEqual([]);
  expect(verdict.valid).toBe(true);
  const outcome = contracts[dialect].decode(result.structuredContent);
  expect(result.isError).toBe(!isOk(outcome));
}

// Calls made through the gateway and directly; results compared content block by content block.
const EVERYTHING_CALLS: { name: string; arguments: Record<string, unknown> }[] = [
  { name: 'echo', arguments: { message: 'hello envelope' } },
  { name: 'get-sum', arguments: { a: 2, b: 40 } },
  { name: 'get-tiny-image', arguments: {} },
  { name: 'get-structured-content', arguments: { location: 'New York' } },
  { name: 'get-annotated-message', arguments: { messageType: 'error', includeImage: true } },
  { name: 'get-resource-links', arguments: { count: 2 } },
  { name: 'get-resource-reference', arguments: { resourceType: 'Text', resourceId: 3 } },
  // Invalid arguments: the upstream answers isError, which must become a failed envelope.
  { name: 'get-sum', arguments: { a: 'two' } },
];

describe.each(DIALECTS)('gateway in front of server-everything and server-memory (%s)', (dialect) => {
  let gw: Gateway;
  let client: Client;
  let directEverything: Client;
  let directMemory: Client;

  beforeAll(async () => {
    const dirGw = tempDir();
    const dirDirect = tempDir();
    gw = await Gateway.start({
      upstreams: [everythingSpec({ prefix: 'ev_' }), memorySpec(dirGw, { prefix: 'mem_' })],
      dialect,
      log: silent,
    });
    client = await clientFor(gw.createServer());
    // The gateway announces sampling/elicitation/roots upstream (it forwards them), so the direct client does too.
    directEverything = await directClient(everythingSpec(), GATEWAY_CLIENT_CAPABILITIES);
    directMemory = await directClient(memorySpec(dirDirect), GATEWAY_CLIENT_CAPABILITIES);
  });

  afterAll(async () => {
    await client?.close();
    await directEverything?.close();
    await directMemory?.close();
    await gw?.close();
  });

  it('lists every upstream tool with its prefix, the compact envelope outputSchema and annotations kept', async () => {
    const { tools } = await client.listTools();
    const direct = [
      ...(await directEverything.listTools()).tools.map((t) => ['ev_', t] as const),
      ...(await directMemory.listTools()).tools.map((t) => ['mem_', t] as const),
    ];
    expect(tools.map((t) => t.name).sort()).toEqual(direct.map(([p, t]) => p + t.name).sort());
    for (const [prefix, orig] of direct) {
      const t = tools.find((x) => x.name === prefix + orig.name)!;
      expect(t.outputSchema).toEqual(toolOutputSchema(dialect));
      expect(t.inputSchema).toEqual(orig.inputSchema);
      expect(t.annotations).toEqual(orig.annotations);
      expect(t.description).toEqual(orig.description);
      if (orig.outputSchema) expect(t._meta?.[META_KEYS.upstreamOutputSchema]).toEqual(orig.outputSchema);
      const mode = t._meta?.[META_KEYS.approvalMode];
      if (orig.annotations?.readOnlyHint) expect(mode).toBe('read_only');
      else if (orig.annotations?.destructiveHint) expect(mode).toBe('destructive');
      else if (orig.annotations?.openWorldHint) expect(mode).toBe('network');
      else expect(mode).toBe('local_write');
    }
  });

  it('wraps every server-everything tool result: valid envelope, isError == !ok, content unchanged', async () => {
    for (const call of EVERYTHING_CALLS) {
      // Some server-everything results embed the time of day to the second: the gateway's answer
      // must equal a direct answer taken just before or just after it.
      const before = (await directEverything.callTool(call)) as CallToolResult;
      const viaGateway = (await client.callTool({ name: `ev_${call.name}`, arguments: call.arguments })) as CallToolResult;
      const after = (await directEverything.callTool(call)) as CallToolResult;
      const direct = isDeepStrictEqual(viaGateway.content, before.content) ? before : after;
      expectEnvelope(dialect, viaGateway);
      expect(viaGateway.content).toEqual(direct.content);
      expect(viaGateway.isError ?? false).toBe(direct.isError ?? false);
      // The canonical outcome is the same whether read from the envelope or from the plain result.
      const fromEnvelope = readToolResult(viaGateway);
      const fromDirect = readToolResult(direct);
      expect(fromEnvelope.status).toBe(fromDirect.status);
      // Binary blocks are described in the envelope, not copied (see binary.test.ts).
      if (isOk(fromDirect)) expect(fromEnvelope.result).toEqual(withBinaryDescribed(fromDirect, direct.content as ContentBlock[]).result);
      else expect(fromEnvelope.error).toMatchObject({ category: fromDirect.error!.category, code: fromDirect.error!.code });
      // server-everything is an SDK McpServer: bad arguments come back as an isError result the reader classifies.
      if (call.name === 'get-sum' && call.arguments.a === 'two')
        expect(fromEnvelope.error).toMatchObject({ category: 'invalid-argument', code: 'invalid-params' });
    }
  });

  it('wraps server-memory results the same way, structuredContent kept inside the envelope', async () => {
    const entities = { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] };
    const steps: { name: string; arguments: Record<string, unknown> }[] = [
      { name: 'create_entities', arguments: entities },
      { name: 'add_observations', arguments: { observations: [{ entityName: 'Ada', contents: ['born 1815'] }] } },
      { name: 'search_nodes', arguments: { query: 'Ada' } },
      { name: 'read_graph', arguments: {} },
      { name: 'open_nodes', arguments: { names: ['Ada'] } },
      { name: 'create_entities', arguments: {} },
    ];
    for (const step of steps) {
      const viaGateway = (await client.callTool({ name: `mem_${step.name}`, arguments: step.arguments })) as CallToolResult;
      const direct = (await directMemory.callTool(step)) as CallToolResult;
      expectEnvelope(dialect, viaGateway);
      expect(viaGateway.content).toEqual(direct.content);
      expect(viaGateway.isError ?? false).toBe(direct.isError ?? false);
      if (!direct.isError && direct.structuredContent) {
        expect(readToolResult(viaGateway).result).toEqual(direct.structuredContent);
      }
    }
  });

  it('answers an unknown tool with a JSON-RPC error, not an envelope', async () => {
    await expect(client.callTool({ name: 'ev_no-such-tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await expect(client.callTool({ name: 'nothing', arguments: {} })).rejects.toMatchObject({ code: -32602 });
  });
});

describe('non-tool requests answer exactly as the upstream answers them directly', () => {
  let gw: Gateway;
  let client: Client;
  let direct: Client;

  beforeAll(async () => {
    gw = await Gateway.start({ upstreams: [everythingSpec()], log: silent });
    client = await clientFor(gw.createServer(), { sampling: {} });
    direct = await directClient(everythingSpec(), GATEWAY_CLIENT_CAPABILITIES);
  });
  afterAll(async () => {
    await client?.close();
    await direct?.close();
    await gw?.close();
  });

  it('mirrors capabilities and instructions', () => {
    const caps = client.getServerCapabilities()!;
    const upstream = direct.getServerCapabilities()!;
    expect(caps.resources).toEqual(upstream.resources);
    expect(caps.prompts).toEqual(upstream.prompts);
    expect(caps.completions).toEqual(upstream.completions);
    expect(caps.logging).toEqual(upstream.logging);
    expect(client.getInstructions()).toBe(direct.getInstructions());
  });

  it('resources, templates, reads, prompts, completions, logging, ping', async () => {
    expect(await client.listResources()).toEqual(await direct.listResources());
    const page1 = await direct.listResources();
    if (page1.nextCursor) expect(await client.listResources({ cursor: page1.nextCursor })).toEqual(await direct.listResources({ cursor: page1.nextCursor }));
    expect(await client.listResourceTemplates()).toEqual(await direct.listResourceTemplates());
    for (const r of page1.resources.slice(0, 3)) expect(await client.readResource({ uri: r.uri })).toEqual(await direct.readResource({ uri: r.uri }));
    expect(await client.listPrompts()).toEqual(await direct.listPrompts());
    expect(await client.getPrompt({ name: 'simple-prompt' })).toEqual(await direct.getPrompt({ name: 'simple-prompt' }));
    const argsPrompt = { name: 'args-prompt', arguments: { city: 'Paris', state: 'IDF' } };
    expect(await client.getPrompt(argsPrompt)).toEqual(await direct.getPrompt(argsPrompt));
    const complete = { ref: { type: 'ref/prompt' as const, name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } };
    expect(await client.complete(complete)).toEqual(await direct.complete(complete));
    expect(await client.setLoggingLevel('debug')).toEqual(await direct.setLoggingLevel('debug'));
    expect(await client.ping()).toEqual(await direct.ping());
  });

  it('forwards requests of the upstream (sampling) to a client that supports them', async () => {
    const asked: unknown[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      asked.push(req.params.messages);
      return { model: 'test-model', role: 'assistant', content: { type: 'text', text: 'sampled answer' } };
    });
    const result = (await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello?', maxTokens: 10 } })) as CallToolResult;
    expectEnvelope('mcec', result);
    expect(asked).toHaveLength(1);
    expect(JSON.stringify(result.content)).toContain('sampled answer');
  });

  it('protocol errors of the upstream come back unchanged', async () => {
    const a = await client.getPrompt({ name: 'no-such-prompt' }).catch((e: unknown) => e);
    const b = await direct.getPrompt({ name: 'no-such-prompt' }).catch((e: unknown) => e);
    expect(a).toMatchObject({ code: (b as { code: number }).code, message: (b as Error).message });
    const c = await client.readResource({ uri: 'demo://nope' }).catch((e: unknown) => e);
    const d = await direct.readResource({ uri: 'demo://nope' }).catch((e: unknown) => e);
    expect(c).toMatchObject({ code: (d as { code: number }).code, message: (d as Error).message });
  });

  it('forwards progress with the client token and logging notifications', async () => {
    const progress: number[] = [];
    const result = (await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    })) as CallToolResult;
    expect(progress).toEqual([1, 2, 3]);
    expectEnvelope('mcec', result);

    const logs: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push(n.params);
    });
    await client.setLoggingLevel('debug');
    await client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
    await expect.poll(() => logs.length, { timeout: 10_000 }).toBeGreaterThan(0);
    await client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
  });
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

describe('HTTP upstream and HTTP clients', () => {
  let child: ChildProcess;
  let upstreamUrl: string;
  let gw: Gateway;

  beforeAll(async () => {
    const port = await freePort();
    child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (d: Buffer) => {
        if (/listening/i.test(d.toString())) resolve();
      });
      child.on('exit', (code) => reject(new Error(`server-everything exited with ${code}`)));
    });
    upstreamUrl = `http://127.0.0.1:${port}/mcp`;
    gw = await Gateway.start({ upstreams: [{ name: 'everything-http', url: upstreamUrl }], dialect: 'dw', log: silent });
  });
  afterAll(async () => {
    await gw?.close();
    child?.kill();
  });

  it('wraps results of an upstream reached by URL, for clients over Streamable HTTP', async () => {
    const endpoint = await serveHttp(() => gw.createServer(), { port: 0 });
    try {
      const { client } = await httpClient(endpoint.url);
      const direct = await directClient({ name: 'd', url: upstreamUrl });
      const call = { name: 'echo', arguments: { message: 'over http' } };
      const viaGateway = (await client.callTool(call)) as CallToolResult;
      expectEnvelope('dw', viaGateway);
      expect(viaGateway.content).toEqual(((await direct.callTool(call)) as CallToolResult).content);
      expect(await client.listPrompts()).toEqual(await direct.listPrompts());
      expect(endpoint.sessions).toBe(1);
      await client.close();
      await direct.close();
    } finally {
      await endpoint.close();
    }
  });

  it('relays progress over HTTP on both sides, before the answer', async () => {
    const endpoint = await serveHttp(() => gw.createServer(), { port: 0 });
    try {
      const { client } = await httpClient(endpoint.url);
      const progress: number[] = [];
      let answered = false;
      const result = (await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, undefined, {
        onprogress: (p) => {
          expect(answered).toBe(false);
          progress.push(p.progress);
        },
      })) as CallToolResult;
      answered = true;
      expect(progress).toEqual([1, 2, 3]);
      expectEnvelope('dw', result);
      await client.close();
    } finally {
      await endpoint.close();
    }
  });

  /** A raw HTTP/1.1 conversation with `endpoint`: initialize, initialized, then `call`; the call's answer as it came off the socket. */
  async function rawCall(endpoint: { url: string; port: number }, call: unknown, complete: (text: string) => boolean): Promise<string> {
    const sessionHeaders = await rawSession(endpoint.url);
    const body = JSON.stringify(call);
    const chunks = await new Promise<string[]>((resolve, reject) => {
      const socket = connect(endpoint.port, '127.0.0.1');
      const seen: string[] = [];
      socket.on('data', (d: Buffer) => {
        seen.push(d.toString('utf8'));
        if (complete(seen.join(''))) {
          socket.destroy();
          resolve(seen);
        }
      });
      socket.on('error', reject);
      const lines = Object.entries({ ...sessionHeaders, host: `127.0.0.1:${endpoint.port}`, 'content-length': String(Buffer.byteLength(body)) });
      socket.write(`POST /mcp HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body}`);
    });
    return chunks.join('');
  }

  // The answer of a lone request with nothing sent before it is one JSON body (serve/http-session.ts); it
  // was an SSE stream before, which the next test still gets, as a call that sends progress does.
  it('answers a call over raw HTTP/1.1: status, JSON headers with the length, the answer as the whole body', async () => {
    const endpoint = await serveHttp(() => gw.createServer(), { port: 0 });
    try {
      const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { message: 'raw answer' } } };
      const text = await rawCall(endpoint, call, (t) => {
        const length = /content-length: (\d+)/i.exec(t);
        const start = t.indexOf('\r\n\r\n');
        return length !== null && start !== -1 && Buffer.byteLength(t.slice(start + 4)) >= Number(length[1]);
      });
      expect(text).toMatch(/^HTTP\/1\.1 200 /);
      const [head, body] = text.split('\r\n\r\n');
      expect(head).toMatch(/content-type: application\/json/i);
      expect(head).not.toMatch(/transfer-encoding/i);
      expect(head).toMatch(/mcp-session-id: /i);
      const answer = JSON.parse(body!) as { id: number; result: CallToolResult };
      expect(answer.id).toBe(2);
      expect(JSON.stringify(answer.result.content)).toContain('raw answer');
    } finally {
      await endpoint.close();
    }
  });

  it('answers a call that sends progress first over raw HTTP/1.1 on an SSE stream: the events, the answer last, the end of the stream', async () => {
    const endpoint = await serveHttp(() => gw.createServer(), { port: 0 });
    try {
      const call = {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'trigger-long-running-operation', arguments: { duration: 0.2, steps: 2 }, _meta: { progressToken: 'p1' } },
      };
      const text = await rawCall(endpoint, call, (t) => t.endsWith('\r\n0\r\n\r\n'));
      expect(text).toMatch(/^HTTP\/1\.1 200 /);
      expect(text).toMatch(/content-type: text\/event-stream/i);
      const messages = text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)) as { method?: string; id?: number });
      expect(messages.map((m) => m.method ?? m.id)).toEqual(['notifications/progress', 'notifications/progress', 2]);
    } finally {
      await endpoint.close();
    }
  });

  it('refuses a body over the limit with 413 and a JSON-RPC error, and keeps serving', async () => {
    const endpoint = await serveHttp(() => gw.createServer(), { port: 0, maxBodyBytes: 1024 });
    try {
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const big = await fetch(endpoint.url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(4096) } }),
      });
      expect(big.status).toBe(413);
      expect(await big.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
      const { client } = await httpClient(endpoint.url);
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      await client.close();
    } finally {
      await endpoint.close();
    }
  });

  it('refuses a message nested deeper than 1000 levels with 400 and an Invalid Request error for its id, in a session or not, and keeps serving', async () => {
    const endpoint = await serveHttp(() => gw.createServer(), { port: 0 });
    try {
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const deep = (id: number, depth: number): string =>
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}}}`;
      const alone = await fetch(endpoint.url, { method: 'POST', headers, body: deep(4, 100_000) });
      expect(alone.status).toBe(400);
      expect(await alone.json()).toEqual({
        jsonrpc: '2.0',
        id: 4,
        error: { code: -32600, message: 'Invalid Request: the message nests deeper than 1000 levels' },
      });
      const session = await rawSession(endpoint.url);
      for (const depth of [998, 10_000]) {
        const refused = await fetch(endpoint.url, { method: 'POST', headers: session, body: deep(5, depth) });
        expect(refused.status).toBe(400);
        expect(await refused.json()).toMatchObject({ id: 5, error: { code: -32600 } });
      }
      const list = await fetch(endpoint.url, { method: 'POST', headers: session, body: '{"jsonrpc":"2.0","id":6,"method":"tools/list"}' });
      expect(list.status).toBe(200);
      expect(await list.text()).toContain('"id":6');
      const { client } = await httpClient(endpoint.url);
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      await client.close();
    } finally {
      await endpoint.close();
    }
  });

  it('a taken port is a clear error', async () => {
    const endpoint = await serveHttp(() => gw.createServer(), { port: 0 });
    try {
      await expect(serveHttp(() => gw.createServer(), { port: endpoint.port })).rejects.toThrow(/already in use.*--http 0/);
    } finally {
      await endpoint.close();
    }
  });
});
