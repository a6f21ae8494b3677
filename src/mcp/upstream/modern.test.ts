// The gateway in front of a modern-era upstream (a real SDK v2 server process speaking only
// 2026-07-28, test-support/modern-server.mjs) and of a 2025-era one (server-everything): the era is
// negotiated per upstream, tools, resources, prompts and completions pass, an upstream's
// elicitation and sampling (input asked for inside its results) reach the gateway's client and come
// back, and every envelope is valid under the published schemas. Over stdio and Streamable HTTP.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../../test/oracle.js';
import { contracts } from '../../core/contracts/registry.js';
import { isOk } from '../../core/model.js';
import { BINARY_RESULT_KEY } from '../binary.js';
import type { Dialect } from '../envelope.js';
import { Gateway } from '../gateway/gateway.js';
import { clientFor, everythingSpec, GATEWAY_CLIENT_CAPABILITIES, repoRoot, silent } from '../test-support/harness.js';
import type { UpstreamSpec } from './upstream.js';

const MODERN = join(repoRoot, 'src/mcp/test-support/modern-server.mjs');
const modernSpec = (extra: Partial<UpstreamSpec> = {}): UpstreamSpec => ({ name: 'modern', command: process.execPath, args: [MODERN], ...extra });
const DIALECTS: Dialect[] = ['mcec', 'dw', 'contextos'];

function expectEnvelope(dialect: Dialect, result: CallToolResult): ReturnType<(typeof contracts)['mcec']['decode']> {
  const verdict = oracleValidate(dialect === 'contextos' ? 'contextos-result' : dialect, result.structuredContent);
  expect(verdict.errors, JSON.stringify(result.structuredContent).slice(0, 500)).toEqual([]);
  const outcome = contracts[dialect].decode(result.structuredContent);
  expect(result.isError).toBe(!isOk(outcome));
  return outcome;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

describe.each(DIALECTS)('a 2026-07-28 upstream over stdio (%s)', (dialect) => {
  let gw: Gateway;
  let client: Client;
  beforeAll(async () => {
    gw = await Gateway.start({ upstreams: [modernSpec()], dialect, log: silent, supervision: { healthIntervalMs: 0 } });
    client = await clientFor(gw.createServer(), GATEWAY_CLIENT_CAPABILITIES);
  });
  afterAll(async () => {
    await client?.close();
    await gw?.close();
  });

  it('is spoken to in its own era, its discover result giving capabilities, server info and instructions', () => {
    const up = gw.upstreams[0]!;
    expect(up.era).toBe('modern');
    expect(up.protocolVersion).toBe('2026-07-28');
    expect(up.serverInfo).toEqual({ name: 'modern-test-server', version: '2.0.0' });
    expect(up.capabilities).toMatchObject({ tools: {}, resources: {}, prompts: {}, completions: {} });
    expect(client.getInstructions()).toBe('A 2026-07-28 test server.');
  });

  it('lists and calls its tools: content kept, structured results and tool errors in valid envelopes', async () => {
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['echo', 'chart', 'fail', 'big', 'confirm_delete', 'summarise']));
    const echo = await call(client, 'echo', { text: 'hello modern' });
    expect(echo.content).toEqual([{ type: 'text', text: 'hello modern' }]);
    expect(expectEnvelope(dialect, echo).result).toEqual({ echoed: 'hello modern' });
    const failed = expectEnvelope(dialect, await call(client, 'fail', {}));
    expect(failed.error).toMatchObject({ category: 'no-target' });
  });

  it('a structured result with an image: the image described beside the structure, its base64 only in content', async () => {
    const r = await call(client, 'chart', { title: 'sales' });
    const image = r.content[1] as { type: 'image'; data: string; mimeType: string };
    expect(image).toMatchObject({ type: 'image', mimeType: 'image/png' });
    expect(JSON.stringify(r.structuredContent)).not.toContain(image.data);
    const bytes = Buffer.from(image.data, 'base64');
    const described = {
      type: 'image',
      kind: 'image',
      mimeType: 'image/png',
      bytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      contentIndex: 1,
    };
    const outcome = expectEnvelope(dialect, r);
    if (dialect === 'dw') expect(JSON.stringify(r.structuredContent)).toContain(described.sha256);
    else expect(outcome.result).toEqual({ title: 'sales', points: [1, 2, 3], [BINARY_RESULT_KEY]: [described] });
  });

  it('passes resources, templates, prompts and completions through', async () => {
    expect((await client.listResources()).resources.map((r) => r.uri)).toContain('modern://note');
    expect((await client.readResource({ uri: 'modern://note' })).contents).toEqual([{ uri: 'modern://note', mimeType: 'text/plain', text: 'a modern note' }]);
    expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toContain('modern://colour/{name}');
    expect((await client.readResource({ uri: 'modern://colour/red' })).contents[0]).toMatchObject({ text: 'colour red' });
    const prompt = await client.getPrompt({ name: 'paint', arguments: { colour: 'blue' } });
    expect(prompt.messages[0]!.content).toEqual({ type: 'text', text: 'Paint it blue.' });
    const byPrompt = await client.complete({ ref: { type: 'ref/prompt', name: 'paint' }, argument: { name: 'colour', value: 'r' } });
    expect(byPrompt.completion.values).toEqual(['red', 'rebeccapurple']);
    const byTemplate = await client.complete({ ref: { type: 'ref/resource', uri: 'modern://colour/{name}' }, argument: { name: 'name', value: 'g' } });
    expect(byTemplate.completion.values).toEqual(['green']);
  });

  it("an upstream's elicitation (input_required) reaches the client as a request, and its answer goes back", async () => {
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return { action: 'accept', content: { confirm: true } };
    });
    const result = await call(client, 'confirm_delete', { item: 'report.txt' });
    expect(asked).toEqual(['Delete report.txt?']);
    expect(result.content).toEqual([{ type: 'text', text: 'deleted report.txt' }]);
    expect(expectEnvelope(dialect, result).result).toEqual({ item: 'report.txt', deleted: true });
  });

  it("an upstream's sampling (input_required) reaches the client as a request, and its answer goes back", async () => {
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({ model: 'test-model', role: 'assistant', content: { type: 'text', text: 'short' } }));
    const result = await call(client, 'summarise', { text: 'a long text' });
    expect(result.content).toEqual([{ type: 'text', text: 'summary: short' }]);
    expectEnvelope(dialect, result);
  });
});

describe('eras side by side', () => {
  let gw: Gateway;
  let client: Client;
  beforeAll(async () => {
    gw = await Gateway.start({
      upstreams: [everythingSpec({ prefix: 'old_' }), modernSpec({ prefix: 'new_' })],
      dialect: 'dw',
      log: silent,
      supervision: { healthIntervalMs: 0, restartInitialDelayMs: 50 },
    });
    client = await clientFor(gw.createServer(), GATEWAY_CLIENT_CAPABILITIES);
  });
  afterAll(async () => {
    await client?.close();
    await gw?.close();
  });

  it('negotiates each upstream on its own: server-everything initializes (2025), the modern one discovers', async () => {
    const [old, modern] = gw.upstreams;
    expect(old!.era).toBe('legacy');
    expect(old!.protocolVersion).toMatch(/^2025-/);
    expect(modern!.era).toBe('modern');
    const a = await call(client, 'old_echo', { message: 'from 2025' });
    const b = await call(client, 'new_echo', { text: 'from 2026' });
    expect(a.content).toEqual([{ type: 'text', text: 'Echo: from 2025' }]);
    expect(b.content).toEqual([{ type: 'text', text: 'from 2026' }]);
    expectEnvelope('dw', a);
    expectEnvelope('dw', b);
  });

  it("the modern upstream's list_changed, sent only on the subscriptions/listen stream the gateway opens, reaches the client", async () => {
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changed++;
    });
    expect((await call(client, 'new_add_tool', {})).content).toEqual([{ type: 'text', text: 'added extra_1' }]);
    await expect.poll(() => changed, { timeout: 10_000 }).toBeGreaterThan(0);
    await expect.poll(async () => (await client.listTools()).tools.map((t) => t.name), { timeout: 10_000 }).toContain('new_extra_1');
  });

  it('a restarted modern upstream comes back in the same era (the first verdict is reused, no new probe)', async () => {
    const modern = gw.upstreams[1]!;
    const pid = modern.pid!;
    process.kill(pid, 'SIGKILL');
    await expect.poll(() => modern.generation, { timeout: 15_000 }).toBe(2);
    expect(modern.pid).not.toBe(pid);
    expect(modern.era).toBe('modern');
    expect((await call(client, 'new_echo', { text: 'again' })).content).toEqual([{ type: 'text', text: 'again' }]);
  });
});

describe('a 2026-07-28 upstream over Streamable HTTP', () => {
  let upstream: ChildProcess;
  let url: string;
  let gw: Gateway;
  let client: Client;
  beforeAll(async () => {
    upstream = spawn(process.execPath, [MODERN, '--http'], { stdio: ['ignore', 'pipe', 'inherit'] });
    url = await new Promise<string>((resolve) => upstream.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())));
    gw = await Gateway.start({
      // Pinned: with auto, this server (which also serves 2025 sessions) would get this 2025-era client over one (same-era.test.ts).
      upstreams: [{ name: 'modern-http', url, era: 'modern' }],
      dialect: 'dw',
      log: silent,
      maxResultBytes: 256 * 1024,
      supervision: { healthIntervalMs: 0 },
    });
    client = await clientFor(gw.createServer(), GATEWAY_CLIENT_CAPABILITIES);
  });
  afterAll(async () => {
    await client?.close();
    await gw?.close();
    upstream?.kill();
  });

  it('is spoken to in the modern era, tools and elicitation included', async () => {
    expect(gw.upstreams[0]!.era).toBe('modern');
    expect(expectEnvelope('dw', await call(client, 'echo', { text: 'over http' })).result).toEqual({ echoed: 'over http' });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { confirm: false } }));
    const kept = await call(client, 'confirm_delete', { item: 'a' });
    expect(kept.content).toEqual([{ type: 'text', text: 'kept a' }]);
  });

  it('an answer over --max-result-bytes is bounded while it streams: result-too-large, the connection stays', async () => {
    const r = await call(client, 'big', { bytes: 512 * 1024 });
    const outcome = expectEnvelope('dw', r);
    expect(outcome.error, JSON.stringify(r.structuredContent)).toMatchObject({ category: 'internal', code: 'result-too-large' });
    expect(outcome.error?.details, JSON.stringify(outcome.error)).toMatchObject({ upstream: 'modern-http', hop: 'upstream', limitBytes: 256 * 1024 });
    expect((outcome.error!.details as { bytes: number }).bytes).toBeGreaterThan(512 * 1024);
    expect(gw.upstreams[0]!.generation).toBe(1);
    const small = await call(client, 'big', { bytes: 1000 });
    expect(small.isError).toBeFalsy();
    expect((small.content[0] as { text: string }).text).toHaveLength(1000);
  });
});
