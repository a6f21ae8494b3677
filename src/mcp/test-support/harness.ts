// Shared pieces of the MCP tests: real upstream servers, SDK clients, the oracle.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult, ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { perRequestSignalFetch } from '../upstream/fetch.js';
import type { UpstreamSpec } from '../upstream/upstream.js';

export const repoRoot = resolve(fileURLToPath(import.meta.url), '../../../..');
const nm = (p: string): string => join(repoRoot, 'node_modules', p);

export const EVERYTHING = nm('@modelcontextprotocol/server-everything/dist/index.js');
export const MEMORY = nm('@modelcontextprotocol/server-memory/dist/index.js');
export const FAULT = join(repoRoot, 'test/fixtures/fault-server.mjs');
export const EXAMPLE_TS = join(repoRoot, 'examples/example-server.ts');
export const TSX = nm('tsx/dist/cli.mjs');

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'te-mcp-'));
}

export function everythingSpec(extra: Partial<UpstreamSpec> = {}): UpstreamSpec {
  return { name: 'everything', command: process.execPath, args: [EVERYTHING, 'stdio'], ...extra };
}

export function memorySpec(dir: string, extra: Partial<UpstreamSpec> = {}): UpstreamSpec {
  return { name: 'memory', command: process.execPath, args: [MEMORY], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') }, ...extra };
}

export function faultSpec(extra: Partial<UpstreamSpec> = {}, args: string[] = []): UpstreamSpec {
  return { name: 'fault', command: process.execPath, args: [FAULT, ...args], ...extra };
}

/** A server of either SDK line (v1 `Server`, v2 `Server` / `McpServer`): what `clientFor` needs of it. */
export interface Connectable {
  // biome-ignore lint/suspicious/noExplicitAny: v1 and v2 declare their Transport types apart; the in-memory pair fits both.
  connect(transport: any): Promise<void>;
}

/** Initializes a 2025-era session at `url` with plain fetch requests: the headers of its later requests. */
export async function rawSession(url: string): Promise<Record<string, string>> {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  const session = init.headers.get('mcp-session-id')!;
  await init.text();
  const sessionHeaders = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
  await (await fetch(url, { method: 'POST', headers: sessionHeaders, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  return sessionHeaders;
}

/** A real SDK client connected to `server` over the SDK's in-memory transport pair. */
export async function clientFor(server: Server | Connectable, capabilities: ClientCapabilities = {}): Promise<Client> {
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  const client = new Client({ name: 'test', version: '1' }, { capabilities });
  await client.connect(a);
  return client;
}

/** A real SDK client talking to an upstream directly. */
export async function directClient(spec: UpstreamSpec, capabilities: ClientCapabilities = {}): Promise<Client> {
  const client = new Client({ name: 'direct', version: '1' }, { capabilities });
  if (spec.url) await client.connect(new StreamableHTTPClientTransport(new URL(spec.url)));
  else {
    const params: ConstructorParameters<typeof StdioClientTransport>[0] = { command: spec.command!, args: spec.args ?? [], stderr: 'ignore' };
    if (spec.env) params.env = spec.env;
    await client.connect(new StdioClientTransport(params));
  }
  return client;
}

export async function httpClient(url: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  // Node's fetch would leave one abort listener per request on the transport's long-lived signal
  // until garbage collection (thousands in a test that makes 10 000 calls).
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: perRequestSignalFetch() });
  const client = new Client({ name: 'http-test', version: '1' });
  await client.connect(transport);
  return { client, transport };
}

export function asResult(r: unknown): CallToolResult {
  return r as CallToolResult;
}

export const silent = (): void => {};

/** What the gateway announces to its upstreams as a client: it forwards these requests to its own clients. */
export const GATEWAY_CLIENT_CAPABILITIES: ClientCapabilities = { sampling: {}, elicitation: {} };
