/**
 * Every example in every `--help` (the top-level verbs and the audit sub-verbs, read from the help
 * texts themselves) runs, as a shell line through the real command (the built CLI, dist/), in a
 * directory this test prepares, and exits 0 as the help's exit codes promise for success. How:
 * - files the examples name (envelopes.ndjson, result.json, results.ndjson, mcec.ndjson,
 *   my-server.js, gateway.yaml) are written first; ./tool-envelope.db (the default store) is filled
 *   by a real governed runtime whose approval worker runs while the examples do, so an approved call
 *   runs and `--wait` sees it complete;
 * - placeholders become real values: apr_... a fresh pending approval per example, aud_... an audit
 *   id (aud_9c1e... the failing call of sess-42), TOOL_ENVELOPE_KEY=... the operator key;
 * - postgres:// stores become the SQLite file (the PostgreSQL store is covered by audit.test.ts and
 *   the store suites; there is no database named in an example to reach);
 * - gateway examples run a real gateway process: over stdio an MCP client initializes and lists the
 *   tools, then closes stdin (exit 0: client gone); over HTTP (--http 3333 becomes --http 0, the port
 *   may be taken) the SDK client lists the tools, then SIGTERM (exit 0: stopped normally).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolFailure } from '../core/classify.js';
import { defineTool } from '../runtime/define.js';
import { createGovernedRuntime, type GovernedRuntime } from '../runtime/governed.js';
import { createRuntime } from '../runtime/runtime.js';
import { createSession } from '../runtime/session.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { Store } from '../store/types.js';
import { SAMPLES, ndjson } from './test-support/envelopes.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const work = mkdtempSync(path.join(tmpdir(), 'te-help-examples-'));
const bin = path.join(work, '.bin');
const KEY = 'ab'.repeat(32);
const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}:${process.env.PATH}`, HOME: path.join(work, '.home'), TOOL_ENVELOPE_KEY: KEY };
// The examples without --store use the default, ./tool-envelope.db.
delete env.TOOL_ENVELOPE_STORE;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function sh(line: string, input = ''): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-o', 'pipefail', '-c', line], { cwd: work, env, stdio: ['pipe', 'pipe', 'pipe'], timeout: 150_000, killSignal: 'SIGKILL' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // A command that reads no stdin may exit before taking it.
    child.stdin.on('error', () => {});
    child.stdin.end(input);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The example lines of a help text: the indented lines after 'Examples:' up to a blank line. */
function examplesOf(help: string): string[] {
  const lines = help.split('\n');
  const at = lines.indexOf('Examples:');
  if (at === -1) return [];
  const out: string[] = [];
  for (const l of lines.slice(at + 1)) {
    if (!l.startsWith('  ')) break;
    out.push(l.trim());
  }
  return out;
}

/** Names listed under a heading ('Verbs:', 'Sub-verbs:'): the first word of each indented line. */
function listed(help: string, heading: string): string[] {
  const lines = help.split('\n');
  const out: string[] = [];
  for (const l of lines.slice(lines.indexOf(heading) + 1)) {
    const m = /^ {2}(\S+)\s/.exec(l);
    if (!m) break;
    out.push(m[1]!);
  }
  return out;
}

let store: Store;
let governed: GovernedRuntime;
let stopWorker: () => Promise<void>;
let anyAuditId = '';
let failingAuditId = '';
let paused = 0;

const write = defineTool({
  name: 'write_file',
  description: 'Writes a file.',
  approvalMode: 'destructive',
  input: z.object({ path: z.string() }),
  handler: async ({ path: p }) => ({ wrote: p }),
});
const lookup = defineTool({
  name: 'fs_write',
  description: 'Looks a file up.',
  approvalMode: 'read_only',
  input: z.object({ path: z.string() }),
  handler: async ({ path: p }) => {
    if (p === '/missing') throw new ToolFailure({ category: 'no-target', code: 'not-found', detail: 'No such file.' });
    return { path: p };
  },
});

/** A fresh pending approval: a destructive call that pauses. */
async function pendingApproval(): Promise<string> {
  const o = await governed.invoke('write_file', { path: `/srv/${++paused}` }, { idempotencyKey: `help-${paused}` });
  await governed.flush();
  return o.metadata!.approvalId as string;
}

async function substitute(line: string): Promise<string> {
  let out = line
    .replace(/postgres:\/\/app@\w+\/agents/g, './tool-envelope.db')
    .replace('TOOL_ENVELOPE_KEY=...', `TOOL_ENVELOPE_KEY=${KEY}`)
    .replace('aud_9c1e...', failingAuditId)
    .replace('aud_5f0c...', anyAuditId)
    .replace('--http 3333', '--http 0');
  while (/\bapr_(?:123|5f0c\.\.\.)/.test(out)) out = out.replace(/\bapr_(?:123|5f0c\.\.\.)/, await pendingApproval());
  return out;
}

beforeAll(async () => {
  mkdirSync(bin);
  mkdirSync(env.HOME!);
  // The command: the built CLI (npm test builds it when the sources changed), as a user runs it;
  // through tsx each of the ~40 examples cost 0.6 s more of start-up.
  writeFileSync(path.join(bin, 'tool-envelope'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(repo, 'dist/src/cli/main.js')}" "$@"\n`, {
    mode: 0o755,
  });
  // npx and my-server.js find the packages of the repository.
  symlinkSync(path.join(repo, 'node_modules'), path.join(work, 'node_modules'));
  writeFileSync(path.join(work, 'envelopes.ndjson'), ndjson(SAMPLES.mcecOk, SAMPLES.contextosResult, SAMPLES.dwOk));
  writeFileSync(path.join(work, 'result.json'), JSON.stringify(SAMPLES.dwOk));
  writeFileSync(path.join(work, 'results.ndjson'), ndjson(SAMPLES.contextosResult, SAMPLES.contextosResult));
  writeFileSync(path.join(work, 'mcec.ndjson'), ndjson(SAMPLES.mcecOk, SAMPLES.mcecError));
  writeFileSync(
    path.join(work, 'my-server.js'),
    `import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
const server = new McpServer({ name: 'my-server', version: '1.0.0' });
server.registerTool('hello', { description: 'Says hello.' }, async () => ({ content: [{ type: 'text', text: 'hello' }] }));
await server.connect(new StdioServerTransport());
`,
  );
  writeFileSync(path.join(work, 'gateway.yaml'), 'upstreams:\n  - name: mine\n    command: node\n    args: [my-server.js]\n');

  process.env.TOOL_ENVELOPE_KEY = KEY;
  store = await openSqliteStore({ path: path.join(work, 'tool-envelope.db') });
  governed = createGovernedRuntime({ runtime: createRuntime({ tools: [write, lookup] }), store, principalChain: [{ kind: 'agent', id: 'a-1' }] });
  const session = createSession({ id: 'sess-42' });
  await governed.invoke('fs_write', { path: '/ok' }, { session, ids: { toolCallId: '3b241101e2bb42558caf4136c566a962' } });
  await governed.invoke('fs_write', { path: '/missing' }, { session });
  await governed.flush();
  const { records } = await store.listAudit({}, { order: 'asc' });
  anyAuditId = records[0]!.id;
  failingAuditId = records.find((r) => r.status === 'error')!.id;
  // The owning process of write_file: runs approved requests.
  stopWorker = governed.watchApprovals({ intervalMs: 50 });
}, 120_000);

afterAll(async () => {
  await stopWorker?.();
  await governed?.close();
  await store?.close();
  rmSync(work, { recursive: true, force: true });
});

/** A gateway over stdio: initialize, list the tools, close stdin; the exit code and the tools. */
function stdioGateway(line: string): Promise<Ran & { tools: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `exec ${line}`], { cwd: work, env, stdio: ['pipe', 'pipe', 'pipe'], timeout: 60_000, killSignal: 'SIGKILL' });
    let stderr = '';
    let tools: string[] = [];
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const send = (m: object) => child.stdin.write(`${JSON.stringify(m)}\n`);
    createInterface({ input: child.stdout }).on('line', (l) => {
      const m = JSON.parse(l) as { id?: number; result?: { tools?: { name: string }[] }; error?: unknown };
      if (m.id === 1) {
        send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      } else if (m.id === 2) {
        tools = (m.result?.tools ?? []).map((t) => t.name);
        child.stdin.end();
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: '', stderr, tools }));
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'help-examples', version: '1' } },
    });
  });
}

/** Runs a serving example until its banner (stdout) names a URL `pattern` captures; then `stop` sends SIGTERM. */
async function serving(line: string, pattern: RegExp): Promise<{ url?: string; stop(): Promise<Ran> }> {
  const child: ChildProcess = spawn('bash', ['-c', `exec ${line}`], {
    cwd: work,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
    killSignal: 'SIGKILL',
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const closed = new Promise<number | null>((r) => child.on('close', r));
  const stop = async (): Promise<Ran> => {
    child.kill('SIGTERM');
    return { code: await closed, stdout, stderr };
  };
  let url: string | undefined;
  while (url === undefined) {
    if (child.exitCode !== null || child.signalCode !== null) return { stop: async () => ({ code: await closed, stdout, stderr }) };
    url = pattern.exec(stdout)?.[1];
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, stop };
}

/**
 * A gateway over HTTP: wait for its endpoint, list the tools with the SDK client, SIGTERM. With
 * --console, its sign-in page too (offering OpenID Connect when given --oidc-issuer): its status.
 */
async function httpGateway(line: string): Promise<Ran & { tools: string[]; signIn?: number }> {
  const s = await serving(line, /MCP endpoint \(Streamable HTTP\): (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
  if (s.url === undefined) return { ...(await s.stop()), tools: [] };
  const client = new Client({ name: 'help-examples', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(s.url)));
  const tools = (await client.listTools()).tools.map((t) => t.name);
  await client.close();
  let signIn: number | undefined;
  if (/ --console\b/.test(line)) {
    const page = await fetch(new URL('/console/sign-in', s.url));
    const offersOidc = (await page.text()).includes('/console/oidc/start');
    signIn = offersOidc === / --oidc-issuer /.test(line) ? page.status : -1;
  }
  return { ...(await s.stop()), tools, ...(signIn !== undefined && { signIn }) };
}

/** A console: wait for its URL, load its sign-in page, SIGTERM. */
async function servedConsole(line: string): Promise<Ran & { status: number }> {
  const s = await serving(line, /Console: (http:\/\/127\.0\.0\.1:\d+\/console\/)/);
  if (s.url === undefined) return { ...(await s.stop()), status: 0 };
  const status = (await fetch(`${s.url}sign-in`)).status;
  return { ...(await s.stop()), status };
}

describe('every --help example runs and exits as its help promises', () => {
  it('each help of each verb and audit sub-verb: every example exits 0', async () => {
    const top = await sh('tool-envelope --help');
    expect(top.code, top.stderr).toBe(0);
    const verbs = listed(top.stdout, 'Verbs:');
    expect(verbs).toEqual(expect.arrayContaining(['validate', 'convert', 'schema', 'gateway', 'audit']));
    const helps: [string, string][] = [];
    for (const verb of verbs) {
      const h = await sh(`tool-envelope ${verb} --help`);
      expect(h.code, `${verb} --help: ${h.stderr}`).toBe(0);
      helps.push([verb, h.stdout]);
      if (verb === 'audit') {
        for (const sub of listed(h.stdout, 'Sub-verbs:')) {
          const s = await sh(`tool-envelope audit ${sub} --help`);
          expect(s.code, `audit ${sub} --help: ${s.stderr}`).toBe(0);
          helps.push([`audit ${sub}`, s.stdout]);
        }
      }
    }
    expect(helps.length).toBeGreaterThanOrEqual(13);
    const failures: string[] = [];
    let ran = 0;
    for (const [name, help] of helps) {
      const examples = examplesOf(help);
      if (examples.length === 0) failures.push(`${name} --help has no examples`);
      for (const example of examples) {
        const line = await substitute(example);
        ran++;
        if (process.env.HELP_EXAMPLES_TRACE) console.error(`running ${line}`);
        if (/^tool-envelope gateway\b/.test(line)) {
          const g: Ran & { tools: string[]; signIn?: number } = / --http /.test(line) ? await httpGateway(line) : await stdioGateway(line);
          if (g.code !== 0 || g.tools.length === 0 || (g.signIn !== undefined && g.signIn !== 200))
            failures.push(`${name}: ${example}\n  exit ${g.code}, tools ${g.tools.join(',')}, console sign-in page ${g.signIn}\n${g.stderr}`);
          continue;
        }
        if (/^tool-envelope console\b/.test(line)) {
          // A port of the example may be taken: the same command on a free one.
          const c = await servedConsole(line.replace(/--listen 127\.0\.0\.1:\d+/, '--listen 127.0.0.1:0'));
          if (c.code !== 0 || c.status !== 200) failures.push(`${name}: ${example}\n  exit ${c.code}, sign-in page ${c.status}\n${c.stderr}`);
          continue;
        }
        const r = await sh(line);
        if (r.code !== 0) failures.push(`${name}: ${example}\n  ran: ${line}\n  exit ${r.code}\n${r.stderr}`);
      }
    }
    expect(failures).toEqual([]);
    expect(ran).toBeGreaterThanOrEqual(30);
  }, 600_000);
});
