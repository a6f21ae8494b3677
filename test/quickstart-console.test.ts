// The quick start's operator walk-through (README "Approve a paused call in the console"), run as
// written: package.json's start script (the gateway with --console in front of the bundled example
// server, built) on a free port and a fresh store and home, a real SDK client as the agent, and the
// console's own forms over HTTP as the operator. The agent's delete_item pauses, the operator (the
// OS user, signed in to the loopback console) approves it, and the agent's retry with its
// idempotency key gets the completed result. The agent acts as user:quickstart-agent (the script's
// --principal), so the operator is not a principal of the call's chain: without it the approval
// would be refused as self-approval.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../src/console/test-support/http-client.js';
import { repoRoot } from './oracle.js';

const dir = mkdtempSync(path.join(tmpdir(), 'te-quickstart-'));
let gateway: ChildProcess;
let mcpUrl: string;
let consoleUrl: string;
let client: Client;

beforeAll(async () => {
  const script = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  // The script after its build step (dist is built), on a free port, with a store of its own.
  const cmd = script
    .slice(script.indexOf('&&') + 2)
    .replace('--http 3333', '--http 0')
    .replace('./tool-envelope.db', path.join(dir, 'start.db'));
  gateway = spawn('sh', ['-c', `exec ${cmd}`], { cwd: repoRoot, env: { ...process.env, HOME: dir, TOOL_ENVELOPE_KEY: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  gateway.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise<void>((resolve, reject) => {
    gateway.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /MCP endpoint \(Streamable HTTP\): (\S+)[\s\S]*Console: (\S+)/.exec(out);
      if (m) {
        mcpUrl = m[1]!;
        consoleUrl = m[2]!.replace(/\/$/, '');
        resolve();
      }
    });
    gateway.once('exit', (code) => reject(new Error(`npm start's gateway exited (${code}): ${out}`)));
  });
  client = new Client({ name: 'quickstart-agent', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => {});
  if (gateway && gateway.exitCode === null) {
    const exited = new Promise((r) => gateway.once('exit', r));
    gateway.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

async function deleteItem(id: string, key: string): Promise<Record<string, unknown>> {
  const r = (await client.callTool({ name: 'delete_item', arguments: { id }, _meta: { 'tool-envelope/idempotency-key': key } })) as CallToolResult;
  return r.structuredContent as Record<string, unknown>;
}

describe('the quick start: approve a paused call in the console', () => {
  it("delete_item pauses, the operator approves it in the console, the agent's retry gets the result", async () => {
    const paused = await deleteItem('item-2', 'quickstart-1');
    expect(paused).toMatchObject({ ok: false, error: { code: 'approval-required' } });
    const operator = new Agent(consoleUrl);
    // A loopback console without tokens signs its user in as the OS user (an admin).
    expect((await operator.signIn()).status).toBe(303);
    const inbox = await operator.request('/inbox');
    expect(inbox.body).toContain('delete_item');
    expect(inbox.body).toContain('user:quickstart-agent');
    const id = /action="\/console\/approvals\/([^/"]+)\/decide"/.exec(inbox.body)![1]!;
    const decided = await operator.request(`/approvals/${id}/decide`, {
      form: { csrf: Agent.csrfOf(inbox.body)!, decision: 'approve', reason: 'quick start' },
    });
    expect(decided.status).toBe(303);
    expect(decided.headers.get('location')).toContain('done=approved');
    let done: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) {
      done = await deleteItem('item-2', 'quickstart-1');
      if (done.ok === true) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(done).toMatchObject({ ok: true, result: { deleted: 'item-2' } });
    // The audit log has the approved call, readable on the console's audit list.
    expect((await operator.request('/audit?tool=delete_item')).body).toContain('delete_item');
  });
});
