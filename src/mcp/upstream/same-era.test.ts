// Same era end to end (issue 40 point 1): a real dual-era SDK v2 server (test-support/dual-era-server.mjs,
// 2025-11-25 sessions and 2026-07-28 requests on one endpoint) behind the gateway over Streamable
// HTTP. With `era: auto` a 2025 client (v1 SDK) is relayed over a 2025 session with the upstream
// and a 2026-07-28 client (v2 SDK) over the modern wire: the upstream's `era` tool says which era
// each call reached it in. `era: modern` keeps every client on the modern wire, `legacy` on 2025.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client as V2Client, StreamableHTTPClientTransport as V2HttpTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Gateway } from '../gateway/gateway.js';
import { serveHttp, type HttpEndpoint } from '../serve/http.js';
import { repoRoot } from '../test-support/harness.js';
import type { UpstreamEra } from './upstream.js';

const DUAL = join(repoRoot, 'src/mcp/test-support/dual-era-server.mjs');

let upstream: ChildProcess;
let url: string;
beforeAll(async () => {
  upstream = spawn(process.execPath, [DUAL], { stdio: ['ignore', 'pipe', 'inherit'] });
  url = await new Promise<string>((resolve) => upstream.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())));
});
afterAll(() => {
  upstream?.kill();
});

type Who = 'v1' | 'v2 pinned to 2026-07-28' | 'v2 auto';
async function connect(who: Who, endpoint: string): Promise<V1Client | V2Client> {
  if (who === 'v1') {
    const client = new V1Client({ name: 'v1', version: '1' });
    await client.connect(new V1HttpTransport(new URL(endpoint)));
    return client;
  }
  const client = new V2Client({ name: who, version: '1' }, { versionNegotiation: { mode: who === 'v2 auto' ? 'auto' : { pin: '2026-07-28' } } });
  await client.connect(new V2HttpTransport(new URL(endpoint)));
  return client;
}

async function eraSeen(who: Who, endpoint: string): Promise<string> {
  const client = await connect(who, endpoint);
  try {
    const r = (await client.callTool({ name: 'era', arguments: {} })) as { content: { text: string }[]; isError?: boolean };
    expect(r.isError).toBe(false);
    // The rest of a session rides the same way: a read and a prompt-less list.
    expect(((await client.readResource({ uri: 'dual://note' })) as { contents: { text?: string }[] }).contents[0]?.text).toBe('a dual-era note');
    return r.content[0]!.text;
  } finally {
    await client.close();
  }
}

describe.each<[UpstreamEra | undefined, Record<Who, string>]>([
  [undefined, { v1: 'legacy', 'v2 pinned to 2026-07-28': 'modern', 'v2 auto': 'modern' }],
  ['modern', { v1: 'modern', 'v2 pinned to 2026-07-28': 'modern', 'v2 auto': 'modern' }],
  ['legacy', { v1: 'legacy', 'v2 pinned to 2026-07-28': 'legacy', 'v2 auto': 'legacy' }],
])('an upstream serving both eras, era %s', (era, expected) => {
  let gw: Gateway;
  let endpoint: HttpEndpoint;
  const lines: string[] = [];
  beforeAll(async () => {
    gw = await Gateway.start({ upstreams: [{ name: 'dual', url, ...(era ? { era } : {}) }], log: (l) => lines.push(l), supervision: { healthIntervalMs: 0 } });
    endpoint = await serveHttp((session) => gw.createServer(session), { port: 0 });
  });
  afterAll(async () => {
    await endpoint?.close();
    await gw?.close();
  });

  it.each(Object.keys(expected) as Who[])('%s reaches it in the expected era', async (who) => {
    expect(await eraSeen(who, endpoint.url)).toBe(expected[who]);
  });

  it('says so in the log once, when a 2025 session is opened beside the modern wire', () => {
    const opened = lines.filter((l) => l.includes('2025-era clients are relayed over a 2025 session'));
    expect(opened).toHaveLength(era === undefined ? 1 : 0);
  });
});
