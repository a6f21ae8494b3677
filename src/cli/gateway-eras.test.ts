// The built gateway as a real process, driven by a real SDK v2 stdio client in `auto` negotiation
// (it probes the gateway's era first, with a short-lived gateway process of its own), in front of a
// 2026-07-28 upstream (the SDK v2 test server) and of a 2025-era one (server-everything): tools,
// resources, prompts, completions and an upstream's elicitation round trip, envelopes valid under
// the published schemas.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { oracleValidate } from '../../test/oracle.js';
import { EVERYTHING, repoRoot, tempDir } from '../mcp/test-support/harness.js';

const MAIN = join(repoRoot, 'dist/src/cli/main.js');
const MODERN = join(repoRoot, 'src/mcp/test-support/modern-server.mjs');
const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');

beforeAll(() => {
  if (!existsSync(MAIN)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
});

async function gateway(upstream: string[], mode: 'auto' | { pin: '2026-07-28' } = 'auto'): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, 'gateway', '--no-store', '--quiet', '--dialect', 'dw', '--', process.execPath, ...upstream],
    env: { PATH: process.env.PATH ?? '' },
    stderr: 'ignore',
  });
  const client = new Client(
    { name: 'eras-test', version: '1' },
    { capabilities: { elicitation: {} }, versionNegotiation: mode === 'auto' ? { mode, probe: { timeoutMs: 5_000 } } : { mode } },
  );
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { confirm: true } }));
  await client.connect(transport);
  return client;
}

function envelope(result: CallToolResult): Record<string, unknown> {
  expect(oracleValidate('dw', result.structuredContent).errors).toEqual([]);
  return result.structuredContent as Record<string, unknown>;
}

describe('the built gateway in front of a 2026-07-28 upstream, a v2 client in auto mode', () => {
  let client: Client;
  beforeAll(async () => {
    client = await gateway([MODERN]);
  }, 60_000);
  afterAll(async () => {
    await client?.close();
  });

  it('tools: a structured result in a valid envelope, the content kept', async () => {
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'confirm_delete']));
    const r = await client.callTool({ name: 'echo', arguments: { text: 'through the gateway' } });
    expect(r.content).toEqual([{ type: 'text', text: 'through the gateway' }]);
    expect(envelope(r)).toMatchObject({ status: 'ok', result: { echoed: 'through the gateway' } });
  });

  it('resources, prompts and completions', async () => {
    expect((await client.readResource({ uri: 'modern://note' })).contents[0]).toMatchObject({ text: 'a modern note' });
    expect((await client.getPrompt({ name: 'paint', arguments: { colour: 'red' } })).messages[0]!.content).toEqual({ type: 'text', text: 'Paint it red.' });
    const done = await client.complete({ ref: { type: 'ref/prompt', name: 'paint' }, argument: { name: 'colour', value: 'b' } });
    expect(done.completion.values).toEqual(['blue']);
  });

  it("a client pinned to 2026-07-28: a listen stream naming a resource gets its updates (held on the upstream's own listen stream)", async () => {
    const pinned = await gateway([MODERN], { pin: '2026-07-28' });
    try {
      const updates: string[] = [];
      pinned.setNotificationHandler('notifications/resources/updated', async (n) => void updates.push(n.params.uri));
      const sub = await pinned.listen({ resourceSubscriptions: ['modern://note'] });
      expect(sub.honoredFilter.resourceSubscriptions).toEqual(['modern://note']);
      await pinned.callTool({ name: 'touch_note', arguments: {} });
      await expect.poll(() => updates, { timeout: 10_000 }).toEqual(['modern://note']);
      await sub.close();
    } finally {
      await pinned.close();
    }
  }, 60_000);

  it("the upstream's elicitation reaches this client and its answer goes back", async () => {
    const r = await client.callTool({ name: 'confirm_delete', arguments: { item: 'old.log' } });
    expect(r.content).toEqual([{ type: 'text', text: 'deleted old.log' }]);
    expect(envelope(r)).toMatchObject({ status: 'ok', result: { item: 'old.log', deleted: true } });
  });
});

describe('the built gateway in front of server-everything (2025-era), a v2 client in auto mode', () => {
  let client: Client;
  beforeAll(async () => {
    client = await gateway([EVERYTHING, 'stdio']);
  }, 60_000);
  afterAll(async () => {
    await client?.close();
  });

  it('tools, resources, prompts and completions', async () => {
    const r = await client.callTool({ name: 'echo', arguments: { message: 'old era' } });
    expect(r.content).toEqual([{ type: 'text', text: 'Echo: old era' }]);
    expect(envelope(r)).toMatchObject({ status: 'ok' });
    expect((await client.listResources()).resources.length).toBeGreaterThan(0);
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toContain('simple-prompt');
    const templates = (await client.listResourceTemplates()).resourceTemplates;
    expect(templates.length).toBeGreaterThan(0);
  });

  it('a client pinned to 2026-07-28: a listen stream naming a resource gets its updates (resources/subscribe upstream)', async () => {
    const pinned = await gateway([EVERYTHING, 'stdio'], { pin: '2026-07-28' });
    try {
      const uri = (await pinned.listResources()).resources[0]!.uri;
      const updates: string[] = [];
      pinned.setNotificationHandler('notifications/resources/updated', async (n) => void updates.push(n.params.uri));
      const sub = await pinned.listen({ resourceSubscriptions: [uri] });
      await pinned.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      await expect.poll(() => updates.includes(uri), { timeout: 10_000 }).toBe(true);
      await sub.close();
    } finally {
      await pinned.close();
    }
  }, 60_000);

  it("the upstream's elicitation reaches this client and its answer goes back", async () => {
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain('trigger-elicitation-request');
    const r = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
    envelope(r);
    expect(JSON.stringify(r.content)).toContain('accept');
  });
});

describe('the built gateway with a selfApproval policy, a v2 client pinned to 2026-07-28 over stdio', () => {
  it("a paused call is confirmed in an input round (the client's elicitation handler) and runs once", async () => {
    const dir = tempDir();
    const count = join(dir, 'count.jsonl');
    const policy = join(dir, 'policy.yaml');
    writeFileSync(policy, 'version: 1\nrules:\n  - { name: own-deletes, match: { tool: delete_item }, effect: require-approval, selfApproval: true }\n');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, 'gateway', '--quiet', '--dialect', 'dw', '--store', join(dir, 'audit.db'), '--policy', policy, '--', process.execPath, COUNTING],
      env: { PATH: process.env.PATH ?? '', COUNT_FILE: count, TOOL_ENVELOPE_KEY: randomBytes(32).toString('hex'), XDG_CONFIG_HOME: join(dir, 'config') },
      stderr: 'ignore',
    });
    const client = new Client(
      { name: 'confirm-stdio', version: '1' },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(String(req.params.message));
      return { action: 'accept', content: { approve: true } };
    });
    await client.connect(transport);
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const r = await client.callTool({ name: 'delete_item', arguments: { id: 's1' } });
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain('delete_item');
      expect(envelope(r)).toMatchObject({ status: 'ok' });
      expect(r.content).toEqual([{ type: 'text', text: 'deleted s1' }]);
      expect(readFileSync(count, 'utf8').trim().split('\n')).toHaveLength(1);
    } finally {
      await client.close();
    }
  }, 60_000);
});
