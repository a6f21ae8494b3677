// Both protocol eras through the gateway, on SDK v2's serving side: a v2 client pinned to
// 2026-07-28, a v2 client in auto mode and a v1 client, each over stdio (the CLI process) and
// Streamable HTTP, in front of server-everything (a 2025-era upstream). Envelopes are checked
// against the published schemas; the upstream's own content and answers are kept.
import { join } from 'node:path';
import { Client as V2Client, StreamableHTTPClientTransport as V2HttpTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport as V2StdioTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { Gateway } from '../gateway/gateway.js';
import { serveHttp, type HttpEndpoint } from './http.js';
import { directClient, EVERYTHING, everythingSpec, repoRoot, silent } from '../test-support/harness.js';

type AnyClient = V1Client | V2Client;
type Who = 'v2 pinned to 2026-07-28' | 'v2 auto' | 'v1';
const WHO: Who[] = ['v2 pinned to 2026-07-28', 'v2 auto', 'v1'];
const CLI = join(repoRoot, 'dist/src/cli/main.js');

function v2(who: Who): V2Client {
  const mode = who === 'v2 auto' ? 'auto' : { pin: '2026-07-28' };
  return new V2Client({ name: `eras-${who}`, version: '1' }, { versionNegotiation: { mode } });
}

async function connect(who: Who, via: 'stdio' | 'http', url?: string): Promise<AnyClient> {
  const stdio = { command: process.execPath, args: [CLI, 'gateway', '--no-store', '--', process.execPath, EVERYTHING, 'stdio'], stderr: 'ignore' as const };
  if (who === 'v1') {
    const client = new V1Client({ name: 'eras-v1', version: '1' }, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({
      model: 'test-model',
      role: 'assistant',
      content: { type: 'text', text: 'sampled answer' },
    }));
    await client.connect(via === 'http' ? new V1HttpTransport(new URL(url!)) : new V1StdioTransport(stdio));
    return client;
  }
  const client = v2(who);
  await client.connect(via === 'http' ? new V2HttpTransport(new URL(url!)) : new V2StdioTransport(stdio));
  return client;
}

let direct: V1Client;
let gw: Gateway;
let endpoint: HttpEndpoint;
beforeAll(async () => {
  direct = await directClient(everythingSpec());
  gw = await Gateway.start({ upstreams: [everythingSpec()], log: silent });
  endpoint = await serveHttp((session) => gw.createServer(session), { port: 0 });
});
afterAll(async () => {
  await endpoint?.close();
  await gw?.close();
  await direct?.close();
});

describe.each(['http', 'stdio'] as const)('both eras over %s', (via) => {
  it.each(WHO)('%s: tools, resources, prompts and completions round trips; envelopes valid; upstream content kept', async (who) => {
    const client = await connect(who, via, endpoint.url);
    try {
      // A v1 client always opens with initialize (a 2025-era session); a v2 client is served the modern era.
      if (client instanceof V2Client) expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      else expect(client.getServerVersion()?.name).toBe('tool-envelope-gateway');

      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('echo');
      const echoed = (await client.callTool({ name: 'echo', arguments: { message: `hi from ${who}` } })) as {
        content: { type: string; text?: string }[];
        structuredContent?: unknown;
        isError?: boolean;
      };
      expect(echoed.isError).toBe(false);
      expect(oracleValidate('mcec', echoed.structuredContent).errors).toEqual([]);
      expect(echoed.content).toEqual([{ type: 'text', text: `Echo: hi from ${who}` }]);
      const failed = (await client.callTool({ name: 'get-tiny-image', arguments: { nope: 1 } })) as { structuredContent?: unknown };
      expect(oracleValidate('mcec', failed.structuredContent).errors).toEqual([]);

      const resources = await client.listResources();
      const upstream = await direct.listResources();
      expect(resources.resources.map((r) => r.uri)).toEqual(upstream.resources.map((r) => r.uri));
      const first = upstream.resources[0]!;
      expect((await client.readResource({ uri: first.uri })).contents).toEqual((await direct.readResource({ uri: first.uri })).contents);
      expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual((await direct.listPrompts()).prompts.map((p) => p.name));
      const args = { name: 'args-prompt', arguments: { city: 'Paris', state: 'IDF' } };
      expect((await client.getPrompt(args)).messages).toEqual((await direct.getPrompt(args)).messages);
      const complete = { ref: { type: 'ref/prompt' as const, name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } };
      expect((await client.complete(complete)).completion.values).toEqual((await direct.complete(complete)).completion.values);

      if (who === 'v1') {
        // A 2025-era session: the upstream's sampling request reaches this client and its answer goes back.
        const sampled = (await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello?', maxTokens: 10 } })) as {
          content: unknown[];
          structuredContent?: unknown;
        };
        expect(oracleValidate('mcec', sampled.structuredContent).errors).toEqual([]);
        expect(JSON.stringify(sampled.content)).toContain('sampled answer');
      }
    } finally {
      await client.close();
    }
  });
});

it('a modern-era HTTP request is served without a session: any gateway process could answer it', async () => {
  const sessionsBefore = endpoint.sessions;
  const client = v2('v2 pinned to 2026-07-28');
  await client.connect(new V2HttpTransport(new URL(endpoint.url)));
  try {
    for (let i = 0; i < 20; i++) await client.listTools();
    expect(endpoint.sessions).toBe(sessionsBefore);
    // Each request's server is closed with its request: none is left behind.
    await expect.poll(() => gw.sessionCount).toBe(sessionsBefore);
  } finally {
    await client.close();
  }
});

it('a modern-era request whose Mcp-Method header disagrees with its body is refused with -32020, before any server runs', async () => {
  const before = gw.sessionCount;
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  };
  const post = (method: string, headerMethod: string): Promise<Response> =>
    fetch(endpoint.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': headerMethod,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { _meta: envelope } }),
    });
  const refused = await post('tools/list', 'prompts/list');
  // The refusal answers the request it refuses (its id), as a JSON-RPC error must.
  expect((await refused.json()) as unknown).toMatchObject({ error: { code: -32020 }, id: 1 });
  const served = await post('tools/list', 'tools/list');
  const text = await served.text();
  expect(served.status).toBe(200);
  expect(text).toContain('"resultType":"complete"');
  // List results carry the modern era's cache fields.
  expect(text).toMatch(/"ttlMs":\d+/);
  expect(text).toContain('"cacheScope"');
  expect(text).toContain('"echo"');
  await expect.poll(() => gw.sessionCount).toBe(before);
});
