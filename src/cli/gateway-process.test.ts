// The built gateway as a real process in front of a real server-everything, driven by the real SDK
// stdio client: what the upstream's environment holds, and how fast the gateway goes away (with its
// upstream) when its stdin closes or it gets SIGTERM.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../test/oracle.js';
import { PassThrough } from 'node:stream';
import { toolOutputSchema } from '../mcp/gateway/output-schema.js';
import { EVERYTHING, repoRoot } from '../mcp/test-support/harness.js';
import { run } from './gateway.js';
import { childrenOf } from './test-support/processes.js';

const MAIN = join(repoRoot, 'dist/src/cli/main.js');

beforeAll(() => {
  if (!existsSync(MAIN)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
});

const open: StdioClientTransport[] = [];
afterAll(async () => {
  for (const t of open) await t.close().catch(() => {});
});

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function gateway(args: string[], env: Record<string, string> = {}): Promise<{ client: Client; transport: StdioClientTransport; pid: number }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, 'gateway', '--no-store', '--quiet', ...args, '--', process.execPath, EVERYTHING, 'stdio'],
    env: { PATH: process.env.PATH ?? '', ...env },
    stderr: 'ignore',
  });
  open.push(transport);
  const client = new Client({ name: 'process-test', version: '1' });
  await client.connect(transport);
  return { client, transport, pid: transport.pid! };
}

async function until(check: () => boolean, ms: number): Promise<number> {
  const started = performance.now();
  while (!check()) {
    if (performance.now() - started > ms) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  return performance.now() - started;
}

describe('the upstream environment', () => {
  it('inherits the gateway environment minus its secrets, with --env on top', async () => {
    const { client } = await gateway(['--env', 'EXTRA=from-flag', '--env', 'SHARED=flag-wins'], {
      MEMORY_FILE_PATH: '/tmp/memory.jsonl',
      SHARED: 'from-env',
      TOOL_ENVELOPE_KEY: 'operator-secret',
      TOOL_ENVELOPE_TOKEN: 'cli-token',
      TOOL_ENVELOPE_STORE: 'postgres://app:pw@db/agents',
    });
    const r = (await client.callTool({ name: 'get-env', arguments: {} })) as CallToolResult;
    expect(oracleValidate('mcec', r.structuredContent).errors).toEqual([]);
    const env = JSON.parse((r.content[0] as { text: string }).text) as Record<string, string>;
    expect(env).toMatchObject({ MEMORY_FILE_PATH: '/tmp/memory.jsonl', EXTRA: 'from-flag', SHARED: 'flag-wins' });
    for (const secret of ['TOOL_ENVELOPE_KEY', 'TOOL_ENVELOPE_TOKEN', 'TOOL_ENVELOPE_STORE']) expect(env).not.toHaveProperty(secret);
    await client.close();
  });

  it('--env-clear keeps only the minimal set and --env', async () => {
    const { client } = await gateway(['--env-clear', '--env', 'ONLY=this'], { MEMORY_FILE_PATH: '/tmp/m.jsonl', HOME: '/tmp' });
    const r = (await client.callTool({ name: 'get-env', arguments: {} })) as CallToolResult;
    const env = JSON.parse((r.content[0] as { text: string }).text) as Record<string, string>;
    expect(env.ONLY).toBe('this');
    expect(env.HOME).toBe('/tmp');
    expect(env).not.toHaveProperty('MEMORY_FILE_PATH');
    await client.close();
  });
});

describe('payload flags', () => {
  it('--output-schema full and --max-result-bytes reach the gateway', async () => {
    const { client } = await gateway(['--output-schema', 'full', '--max-result-bytes', '65536']);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('echo');
    for (const t of tools) expect(t.outputSchema).toEqual(toolOutputSchema('mcec', 'full'));
    const small = (await client.callTool({ name: 'echo', arguments: { message: 'hi' } })) as CallToolResult;
    expect(small.isError).toBe(false);
    const large = (await client.callTool({ name: 'echo', arguments: { message: 'x'.repeat(70_000) } })) as CallToolResult;
    expect(oracleValidate('mcec', large.structuredContent).errors).toEqual([]);
    expect(large.structuredContent).toMatchObject({ ok: false, error: { category: 'internal', code: 'result-too-large' } });
    expect((await client.callTool({ name: 'echo', arguments: { message: 'still here' } })).isError).toBe(false);
    await client.close();
  });

  it.each([
    [['--env', 'NOEQUALS'], /--env expects KEY=VALUE/],
    [['--output-schema', 'tiny'], /--output-schema must be compact or full/],
    [['--max-result-bytes', '1024'], /--max-result-bytes must be an integer of at least 65536/],
    [['--max-calls-in-flight', '0'], /--max-calls-in-flight must be a positive integer/],
  ])('usage error %j', async (flags, message) => {
    const stderr = new PassThrough();
    let err = '';
    stderr.on('data', (d: Buffer) => (err += d.toString()));
    const io = { stdin: new PassThrough(), stdout: new PassThrough(), stderr, cwd: repoRoot, env: {}, signal: new AbortController().signal };
    expect(await run([...flags, '--no-store', '--', 'node', 'x.js'], io)).toBe(2);
    expect(err).toMatch(message);
  });
});

describe('shutdown', () => {
  it('exits within 500 ms of its stdin closing, and its upstream with it', async () => {
    const { client, transport, pid } = await gateway([]);
    await client.listTools();
    const upstreams = childrenOf(pid);
    expect(upstreams).toHaveLength(1);
    // The SDK client ends the gateway's stdin and waits up to 2 s for it to exit before signalling it.
    const started = performance.now();
    await transport.close();
    expect(performance.now() - started).toBeLessThan(500);
    expect(alive(pid)).toBe(false);
    expect(await until(() => !alive(upstreams[0]!), 500)).toBeLessThan(500);
  });

  it('exits within 500 ms of SIGTERM, and its upstream with it', async () => {
    const { client, pid } = await gateway([]);
    await client.listTools();
    const upstreams = childrenOf(pid);
    expect(upstreams).toHaveLength(1);
    process.kill(pid, 'SIGTERM');
    const took = await until(() => !alive(pid) && !alive(upstreams[0]!), 2_000);
    expect(took).toBeLessThan(500);
  });
});
