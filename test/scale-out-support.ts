/**
 * Real parts for test/scale-out.test.ts: gateway replicas as processes of the built CLI, a real
 * nginx run from the config in docs/deploy.md, a fresh PostgreSQL database, and MCP sessions made
 * by a client factory (one per protocol era), so a new era's client is one more factory.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer, createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { oracleValidate } from './oracle.js';
import {
  Client as V2Client,
  StreamableHTTPClientTransport as V2StreamableHTTPClientTransport,
  type VersionNegotiationMode,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';

export const repoRoot = new URL('..', import.meta.url).pathname;
export const MAIN = join(repoRoot, 'dist/src/cli/main.js');
const UPSTREAM = join(repoRoot, 'test/fixtures/scale-upstream.mjs');

/** One MCP session through the proxy, whatever the protocol era. */
export interface McpSession {
  /** The `Mcp-Session-Id` (2025 era), undefined for a stateless era. */
  readonly id: string | undefined;
  call(name: string, args: Record<string, unknown>, meta?: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
}

/** Opens a session at `url` with a bearer token. */
export type SessionFactory = (url: string, token: string) => Promise<McpSession>;

/** 2025-11-25 era: `initialize`, then `Mcp-Session-Id` on every request (the SDK v1 client). */
export const sessions2025: SessionFactory = async (url, token) => {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'scale-out-test', version: '1.0.0' });
  await client.connect(transport);
  return {
    get id() {
      return transport.sessionId;
    },
    call: async (name, args, meta) =>
      (await client.callTool({ name, arguments: args, ...(meta && { _meta: meta }) }, undefined, { timeout: 30_000 })) as CallToolResult,
    close: () => client.close().catch(() => {}),
  };
};

/**
 * The SDK v2 client with a version-negotiation mode: `'legacy'` speaks 2025-11-25 (sessions);
 * `{ pin: '2026-07-28' }` the modern, stateless era (its session id is then undefined).
 */
export function sessionsV2(mode: VersionNegotiationMode): SessionFactory {
  return async (url, token) => {
    const transport = new V2StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
    const client = new V2Client({ name: 'scale-out-test', version: '1.0.0' }, { versionNegotiation: { mode } });
    await client.connect(transport);
    return {
      get id() {
        return transport.sessionId;
      },
      call: async (name, args, meta) =>
        (await client.callTool({ name, arguments: args, ...(meta && { _meta: meta }) }, { timeout: 30_000 })) as unknown as CallToolResult,
      close: () => client.close().catch(() => {}),
    };
  };
}

/** A free loopback TCP port (bound and released: the caller binds it next). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const accepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const c = createConnection({ port, host: '127.0.0.1' });
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });

/** A fresh database on the test server, and its removal. */
export async function freshDatabase(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `te_scale_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A gateway replica: the built CLI as a process, in front of its own scale-upstream. */
export interface Replica {
  name: string;
  port: number;
  process: ChildProcess;
  /** Everything it wrote to stderr (for a failing test's message). */
  stderr(): string;
  /** The pid of its upstream process (a child of the gateway). */
  upstreamPid(): number | undefined;
}

/** Process ids whose parent is `pid` (Linux /proc). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/**
 * Starts replica `name` on a free port: `gateway --http 0 --replica-id NAME` on `storeUrl`, with
 * `--auth tokens tokensFile`, the ContextOS dialect (its envelopes carry the call id) and a fast
 * approval poll. Resolves once it prints its endpoint.
 */
export async function startReplica(opts: {
  name: string;
  storeUrl: string;
  tokensFile: string;
  countFile: string;
  env: Record<string, string>;
  /** More gateway options (`--policy FILE`, ...). */
  args?: string[];
}): Promise<Replica> {
  const args = [
    MAIN,
    'gateway',
    '--http',
    '0',
    '--replica-id',
    opts.name,
    '--dialect',
    'contextos',
    '--auth',
    'tokens',
    opts.tokensFile,
    '--store',
    opts.storeUrl,
    '--approval-poll',
    '50',
    '--health-interval',
    '0',
    ...(opts.args ?? []),
    '--',
    process.execPath,
    UPSTREAM,
    opts.countFile,
  ];
  const child = spawn(process.execPath, args, { env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  let exited = false;
  child.once('exit', () => (exited = true));
  await until(() => exited || /MCP endpoint \(Streamable HTTP\): http:\/\/127\.0\.0\.1:\d+\/mcp/.test(out), 30_000, `replica ${opts.name} to listen`).catch(
    (e: Error) => {
      throw new Error(`${e.message}\n${err}`);
    },
  );
  if (exited) throw new Error(`replica ${opts.name} exited at start:\n${err}`);
  const port = Number(/http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(out)![1]);
  return {
    name: opts.name,
    port,
    process: child,
    stderr: () => err,
    upstreamPid: () => childrenOf(child.pid!)[0],
  };
}

/** Stops a process this test started (by its pid) and waits for it to exit. */
export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}

/**
 * The nginx config of docs/deploy.md (the fenced block after the `scale-out-nginx` marker), with
 * its example ports replaced by the replicas' and the listen port: the test runs what the doc says.
 */
export function nginxSiteFromDoc(replicaPorts: number[], listenPort: number): string {
  const doc = readFileSync(join(repoRoot, 'docs/deploy.md'), 'utf8');
  const m = /<!-- scale-out-nginx:[^>]*-->\s*```nginx\n([\s\S]*?)```/.exec(doc);
  if (!m) throw new Error('docs/deploy.md has no nginx block after the scale-out-nginx marker');
  let site = m[1]!;
  const examples = new Set([...site.matchAll(/127\.0\.0\.1:(400\d)/g)].map((x) => x[1]!));
  if (examples.size !== replicaPorts.length) throw new Error(`the doc's config names ${examples.size} replicas, the test runs ${replicaPorts.length}`);
  site = site.replace(/127\.0\.0\.1:400(\d)/g, (_, i: string) => `127.0.0.1:${replicaPorts[Number(i) - 1]}`);
  if (!/listen 127\.0\.0\.1:8080;/.test(site)) throw new Error("the doc's config does not listen on 127.0.0.1:8080");
  return site.replace('listen 127.0.0.1:8080;', `listen 127.0.0.1:${listenPort};`);
}

/** One access-log line. */
export interface NginxLogLine {
  method: string;
  upstream: string;
  status: number;
  session: string;
}

/** A running nginx with its access log (`$upstream_addr` per request). */
export interface Nginx {
  url: string;
  port: number;
  /** Access-log lines written so far: `METHOD UPSTREAM_ADDR STATUS SESSION_ID`. */
  log(): NginxLogLine[];
  /**
   * The lines written after the first `before`, once `enough` says they are all there, or as they
   * are after `ms`: nginx writes a request's line when it has finished with the request, which can
   * be a moment after the client has read its answer.
   */
  logSince(before: number, enough: (lines: NginxLogLine[]) => boolean, ms?: number): Promise<NginxLogLine[]>;
  stop(): Promise<void>;
}

/**
 * Runs nginx in the foreground (`daemon off;`) with its own prefix, pid file, logs and temp paths
 * under `dir`, serving `site` (an http-context snippet) on `port`.
 */
export async function startNginx(bin: string, dir: string, site: string, port: number): Promise<Nginx> {
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const conf = join(dir, 'nginx.conf');
  const access = join(dir, 'logs/access.log');
  writeFileSync(
    conf,
    [
      'daemon off;',
      'worker_processes 1;',
      // As root, nginx would switch its worker to `nobody`, who cannot enter the test's private temp dir.
      ...(process.getuid?.() === 0 ? ['user root;'] : []),
      `pid ${join(dir, 'nginx.pid')};`,
      `error_log ${join(dir, 'logs/error.log')} warn;`,
      'events { worker_connections 1024; }',
      'http {',
      `  log_format scale '$request_method $upstream_addr $status $http_mcp_session_id';`,
      `  access_log ${access} scale;`,
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(dir, `${t}_temp`)};`),
      site,
      '}',
      '',
    ].join('\n'),
  );
  const child = spawn(bin, ['-p', dir, '-c', conf, '-e', join(dir, 'logs/error.log')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  let exited = false;
  child.once('exit', () => (exited = true));
  // nginx writes its pid file once its sockets are bound: a port that accepts before then is someone else's.
  await until(async () => exited || (existsSync(join(dir, 'nginx.pid')) && (await accepts(port))), 15_000, 'nginx to listen');
  if (exited) {
    const log = existsSync(join(dir, 'logs/error.log')) ? readFileSync(join(dir, 'logs/error.log'), 'utf8') : '';
    throw new Error(`nginx exited at start:\n${err}\n${log}`);
  }
  const log = (): NginxLogLine[] =>
    (existsSync(access) ? readFileSync(access, 'utf8') : '')
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [method = '', upstream = '', status = '0', session = '-'] = line.split(' ');
        return { method, upstream, status: Number(status), session };
      });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    log,
    async logSince(before, enough, ms = 5_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const lines = log().slice(before);
        if (enough(lines) || Date.now() > deadline) return lines;
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    // SIGTERM: nginx's fast shutdown, master and worker together (a graceful SIGQUIT would wait for open streams).
    stop: () => stopProcess(child, 'SIGTERM'),
  };
}

/**
 * The files and helpers a replica test shares: a bearer token for `user:alice` (its digest in the
 * tokens file), a policy file, the upstream's executions log, one operator key for the replicas and
 * the CLI (each verifies what the others signed), and stateless (2026-07-28) clients, so that any
 * call may go to any replica, as behind a round-robin balancer.
 */
export function replicaFiles<E>(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const countFile = join(dir, 'executions.log');
  const tokensFile = join(dir, 'tokens.yaml');
  const policyFile = join(dir, 'policy.yaml');
  const token = randomBytes(24).toString('base64url');
  return {
    dir,
    countFile,
    tokensFile,
    policyFile,
    token,
    env: { TOOL_ENVELOPE_KEY: randomBytes(32).toString('hex'), XDG_CONFIG_HOME: join(dir, 'config') },
    connect: sessionsV2({ pin: '2026-07-28' }),
    /** The package built if it is not, an empty executions log, the tokens file and `policy`. */
    write(policy: string): void {
      if (!existsSync(MAIN)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
      writeFileSync(countFile, '');
      writeFileSync(tokensFile, `tokens:\n  - sha256: ${createHash('sha256').update(token).digest('hex')}\n    principal: user:alice\n`);
      writeFileSync(policyFile, policy);
    },
    /** A call's envelope, valid in the ContextOS contract. */
    envelope(r: { structuredContent?: unknown }): E {
      expect(oracleValidate('contextos', r.structuredContent).errors).toEqual([]);
      return r.structuredContent as E;
    },
    /** The upstream's `record` executions whose id starts with `prefix`. */
    ran(idPrefix: string): string[] {
      return readFileSync(countFile, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith(`record ${idPrefix}`));
    },
  };
}

/** One request from the local address `from` (a loopback address: 127.0.0.N) to 127.0.0.1:`port`. */
function sendFrom(from: string, port: number, path: string, init: { form?: string; headers?: Record<string, string> } = {}) {
  return new Promise<{ status: number; body: string; cookies: string[] }>((resolve, reject) => {
    const headers: Record<string, string> = { ...init.headers, ...(init.form && { 'content-type': 'application/x-www-form-urlencoded' }) };
    const req = request({ host: '127.0.0.1', port, path, localAddress: from, method: init.form ? 'POST' : 'GET', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body, cookies: res.headers['set-cookie'] ?? [] }));
    });
    req.once('error', reject);
    req.end(init.form);
  });
}

/**
 * A console sign-in as a browser's form, from the local address `from` to the console (or the nginx
 * in front of it) on `port`, with `token`, the POST claiming `X-Forwarded-For: claimed`: its status.
 * Clients on other loopback addresses than nginx's own are, to a console trusting only nginx, clients
 * from elsewhere.
 */
export async function consoleSignInFrom(from: string, port: number, token: string, claimed: string): Promise<number> {
  const page = await sendFrom(from, port, '/console/sign-in');
  const pre = /name="pre" value="([^"]+)"/.exec(page.body)?.[1];
  if (pre === undefined) throw new Error(`no sign-in form at port ${port}: ${page.status} ${page.body.slice(0, 200)}`);
  const cookie = page.cookies.map((c) => c.split(';')[0]).join('; ');
  const form = new URLSearchParams({ pre, token }).toString();
  return (await sendFrom(from, port, '/console/sign-in', { form, headers: { cookie, 'x-forwarded-for': claimed } })).status;
}
