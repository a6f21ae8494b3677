// The built gateway as a real process over HTTP, signalled as an operator's tools signal it: SIGHUP
// (logrotate, `systemctl reload`) without a policy, SIGTERM with a call in flight (a real SDK client
// over HTTP, a slow upstream tool), SIGTERM with spans waiting for a collector that never answers.
// (What it loads when no OTEL_* variable asks for traces: observe.test, 'loads no SDK ...'.)
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpClient, repoRoot } from '../../mcp/test-support/harness.js';

const MAIN = join(repoRoot, 'dist/src/cli/main.js');
const SLOW = join(repoRoot, 'test/fixtures/scale-upstream.mjs');

beforeAll(() => {
  if (!existsSync(MAIN)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
});

interface Running {
  child: ChildProcess;
  url: string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const started: ChildProcess[] = [];
afterAll(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** The built CLI's gateway over HTTP in front of scale-upstream.mjs, once its banner is out. */
async function gateway(args: string[], env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<Running> {
  const child = spawn(
    process.execPath,
    [...nodeArgs, MAIN, 'gateway', '--http', '0', '--store', 'memory', ...args, '--', process.execPath, SLOW, '/dev/null'],
    {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  started.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
  const t0 = Date.now();
  while (!/MCP endpoint.*(http:\/\/\S+)/.test(out)) {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode}): ${err}`);
    if (Date.now() - t0 > 15_000) throw new Error(`the gateway did not start: ${err}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { child, url: /MCP endpoint.*(http:\/\/\S+)/.exec(out)![1]!, stderr: () => err, exited };
}

async function until(check: () => boolean, ms: number): Promise<void> {
  const t0 = Date.now();
  while (!check() && Date.now() - t0 < ms) await new Promise((r) => setTimeout(r, 10));
}

describe('gateway signals', () => {
  it('SIGHUP without --policy is logged as nothing to reload, and the gateway keeps serving', async () => {
    const g = await gateway([]);
    g.child.kill('SIGHUP');
    await until(() => /nothing to reload/.test(g.stderr()) || g.child.exitCode !== null || g.child.signalCode !== null, 3_000);
    expect(g.child.signalCode).toBeNull();
    expect(g.stderr().match(/SIGHUP: no --policy to reload/g)).toHaveLength(1);
    const { client } = await httpClient(g.url);
    const r = await client.callTool({ name: 'record', arguments: { id: 'after-hup' } });
    expect((r.structuredContent as { ok: boolean }).ok).toBe(true);
    await client.close();
    g.child.kill('SIGTERM');
    expect((await g.exited).code).toBe(0);
  });

  it('SIGTERM with spans pending for a collector that never answers exits within 1.5 s, saying what it dropped; a failed export is logged', async () => {
    // The first export is refused (400: not retried), every later one is held open and never answered.
    let posts = 0;
    const collector = createServer((req, res) => {
      req.resume();
      if (++posts === 1) res.writeHead(400).end('no');
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    const port = (collector.address() as AddressInfo).port;
    try {
      const g = await gateway(['--no-store'], { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://ops:hunter2@127.0.0.1:${port}/v1/traces?token=abc123secret` });
      const { client } = await httpClient(g.url);
      await client.callTool({ name: 'record', arguments: { id: 'one' } });
      // The batch leaves after 1 s: its refusal is one log line, with the endpoint's secrets hidden.
      await until(() => /traces: export to/.test(g.stderr()), 4_000);
      expect(g.stderr()).toMatch(/traces: export to http:\/\/\*\*\*@127\.0\.0\.1:\d+\/v1\/traces\?token=\[REDACTED\] failed \(.*\); 1 span\(s\) dropped/);
      await client.callTool({ name: 'record', arguments: { id: 'two' } });
      await client.close();
      const t0 = performance.now();
      g.child.kill('SIGTERM');
      expect((await g.exited).code).toBe(0);
      expect(performance.now() - t0).toBeLessThan(1_500);
      expect(g.stderr()).toMatch(
        /traces: 1 span\(s\) not exported at shutdown: http:\/\/\*\*\*@127\.0\.0\.1:\d+\/v1\/traces\?token=\[REDACTED\] did not answer within \d+ ms; dropped/,
      );
      expect(g.stderr()).not.toMatch(/hunter2|abc123secret/);
    } finally {
      collector.closeAllConnections();
      collector.close();
    }
  });

  it('SIGTERM with a call in flight answers it (cancelled) before the connection closes: the client does not wait for its own timeout', async () => {
    const g = await gateway([]);
    const { client } = await httpClient(g.url);
    const t0 = performance.now();
    const call = client.callTool({ name: 'record', arguments: { id: 'slow', delayMs: 5_000 } }).then(
      (r) => ({ answered: r.structuredContent as { ok: boolean; error?: { code?: string } } }),
      (err: Error) => ({ failed: err.message }),
    );
    // The call is with the upstream (it waits 5 s there) when the gateway is told to stop.
    await new Promise((r) => setTimeout(r, 300));
    g.child.kill('SIGTERM');
    const got = await call;
    expect(performance.now() - t0).toBeLessThan(2_500);
    expect(got).toMatchObject({ answered: { ok: false, error: { code: 'cancelled' } } });
    expect((await g.exited).code).toBe(0);
    await client.close().catch(() => {});
  }, 15_000);
});
