// What the gateway cannot translate is answered by the gateway (issue 40 point 2), in front of a
// real dual-era SDK v2 server (test-support/dual-era-server.mjs) spoken to in the 2026-07-28 era,
// over Streamable HTTP: a 2025 client's logging/setLevel is accepted and applied to the log lines
// the gateway relays (the upstream has no setLevel in that era); resources/subscribe to an upstream
// without the subscribe capability is -32601 at once; completion/complete, which the upstream
// answers without declaring completions, is relayed to a 2026-07-28 client.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client as V2Client, StreamableHTTPClientTransport as V2HttpTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { serveHttp, type HttpEndpoint } from '../serve/http.js';
import { repoRoot, silent } from '../test-support/harness.js';
import { Gateway } from './gateway.js';

let upstream: ChildProcess;
let gw: Gateway;
let endpoint: HttpEndpoint;
beforeAll(async () => {
  upstream = spawn(process.execPath, [join(repoRoot, 'src/mcp/test-support/dual-era-server.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve) => upstream.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())));
  gw = await Gateway.start({ upstreams: [{ name: 'dual', url, era: 'modern' }], log: silent, supervision: { healthIntervalMs: 0 } });
  endpoint = await serveHttp((session) => gw.createServer(session), { port: 0 });
});
afterAll(async () => {
  await endpoint?.close();
  await gw?.close();
  upstream?.kill();
});

async function v1(): Promise<V1Client> {
  const client = new V1Client({ name: 'v1', version: '1' });
  await client.connect(new V1HttpTransport(new URL(endpoint.url)));
  return client;
}

it("a 2025 client's logging/setLevel is accepted and applied to the lines the gateway relays", async () => {
  expect(gw.upstreams[0]!.era).toBe('modern');
  const client = await v1();
  const lines: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    lines.push(`${n.params.level}: ${String(n.params.data)}`);
  });
  try {
    expect(await client.setLoggingLevel('warning')).toEqual({});
    expect((await client.callTool({ name: 'log', arguments: {} })).content).toEqual([{ type: 'text', text: 'logged' }]);
    await expect.poll(() => lines).toContain('error: a error line');
    expect(lines).toEqual(['warning: a warning line', 'error: a error line']);
  } finally {
    await client.close();
  }
});

it('resources/subscribe to an upstream without the subscribe capability is answered -32601 by the gateway', async () => {
  const client = await v1();
  try {
    expect((await client.readResource({ uri: 'dual://note' })).contents[0]).toMatchObject({ text: 'a dual-era note' });
    // Not even asked of the upstream: a listen there may wait for an acknowledgement that never comes.
    const listens = vi.spyOn(gw.upstreams[0]!, 'listen');
    const refused = await client.subscribeResource({ uri: 'dual://note' }).catch((e: unknown) => e);
    expect(listens).not.toHaveBeenCalled();
    listens.mockRestore();
    expect(refused).toMatchObject({ code: -32601 });
    expect(String((refused as Error).message)).toContain("'dual' does not deliver updates of resources (no resources.subscribe capability)");
  } finally {
    await client.close();
  }
});

it('completion/complete the upstream answers without declaring completions is relayed to a 2026-07-28 client', async () => {
  expect(gw.upstreams[0]!.capabilities?.completions).toBeUndefined();
  const client = new V2Client({ name: 'pinned', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new V2HttpTransport(new URL(endpoint.url)));
  try {
    const r = await client.request({
      method: 'completion/complete',
      params: { ref: { type: 'ref/resource', uri: 'dual://note' }, argument: { name: 'x', value: 'gr' } },
    });
    expect((r as { completion: unknown }).completion).toEqual({ values: ['green'], hasMore: false });
  } finally {
    await client.close();
  }
});
