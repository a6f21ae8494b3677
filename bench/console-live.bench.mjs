// What the console's live calls stream costs the gateway (#42 Deliver 4): three gateways over
// SQLite with --auth tokens in front of the example server, one with --console and SSE streams of
// /console/live/events open (an admin's, every call), one without the console, and a second
// without (the noise floor), driven in interleaved rounds of calls at 32 in flight. Rows: the
// streaming gateway's CPU per call against the one without (goal <= 1.05x), and how fast calls went
// through it while every stream got every call's two events (goal: >= 1,000 calls/s kept up, the
// last event within 1 s of the round's end). Loaded by bench/run.mjs; also runnable alone after the
// build: `node --expose-gc bench/console-live.bench.mjs [--quick]`. The MCP clients are made like
// gateway.bench.mjs's `http()` (one abort signal per request), with the bearer token.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { perRequestSignalFetch } from '../dist/src/mcp/index.js';
import { cpuMsOf, median, startGatewayHttp, stop } from './gateway.bench.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EXAMPLE = path.join(root, 'dist/examples/example-server.js');
const CPU_GOAL = 1.05;
const RATE_GOAL = 1_000;
const LAG_GOAL_MS = 1_000;
const TOKEN = 'bench-admin-token';
const MAIN = path.join(root, 'dist/src/cli/main.js');

/** Signs in to a console with the token (as its sign-in form does) and opens a live stream; counts its call events. */
async function openStream(consoleUrl) {
  const form = await fetch(`${consoleUrl}sign-in`);
  const cookies = new Map(form.headers.getSetCookie().map((c) => c.split(';')[0].split('=')));
  const pre = /name="pre" value="([^"]+)"/.exec(await form.text())[1];
  const jar = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const signed = await fetch(`${consoleUrl}sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar() },
    body: new URLSearchParams({ pre, token: TOKEN }),
    redirect: 'manual',
  });
  for (const c of signed.headers.getSetCookie()) {
    const [k, v] = c.split(';')[0].split('=');
    cookies.set(k, v);
  }
  const ac = new AbortController();
  const res = await fetch(`${consoleUrl}live/events`, { headers: { cookie: jar() }, signal: ac.signal });
  if (res.status !== 200) throw new Error(`live stream: HTTP ${res.status}`);
  const s = { calls: 0, lastAt: 0, ready: false, close: () => ac.abort() };
  void (async () => {
    const decoder = new TextDecoder();
    let carry = '';
    try {
      for await (const chunk of res.body) {
        const text = carry + decoder.decode(chunk, { stream: true });
        const parts = text.split('\n\n');
        carry = parts.pop();
        for (const p of parts) {
          if (p.startsWith('id: ')) {
            s.calls++;
            s.lastAt = performance.now();
          } else if (p.startsWith('event: ready')) s.ready = true;
        }
      }
    } catch {
      // Closed by the bench.
    }
  })();
  while (!s.ready) await new Promise((r) => setTimeout(r, 10));
  return s;
}

async function run_(ctx) {
  const rounds = ctx.quick ? 3 : 5;
  const total = ctx.quick ? 600 : 3_000;
  const concurrency = 32;
  const streamsPerGateway = ctx.quick ? 1 : 3;
  const dir = mkdtempSync(path.join(tmpdir(), 'te-console-live-bench-'));
  const tokens = path.join(dir, 'tokens.yaml');
  writeFileSync(tokens, `tokens:\n  - { sha256: ${createHash('sha256').update(TOKEN).digest('hex')}, principal: "user:bench", roles: [admin] }\n`);
  const common = (name) => ['--auth', 'tokens', tokens, '--store', path.join(dir, `${name}.db`), '--', process.execPath, EXAMPLE];
  const contenders = [
    { label: 'no console', args: common('off') },
    { label: 'no console (again)', args: common('off2') },
    { label: 'console, streaming', args: ['--console', ...common('on')], streaming: true },
  ];
  const started = [];
  try {
    for (const c of contenders) {
      const g = await startGatewayHttp(c.args);
      started.push(g.child);
      c.child = g.child;
      c.client = new Client({ name: 'bench', version: '1' });
      await c.client.connect(
        new StreamableHTTPClientTransport(new URL(g.url), { fetch: perRequestSignalFetch(), requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }),
      );
      c.cpu = [];
      c.rate = [];
      c.lag = [];
      if (c.streaming) c.streams = await Promise.all(Array.from({ length: streamsPerGateway }, () => openStream(`${new URL(g.url).origin}/console/`)));
    }
    const call = { name: 'add', arguments: { a: 1, b: 2 } };
    const round = async (c, n) => {
      let next = 0;
      const before = c.streams?.map((s) => s.calls);
      const c0 = cpuMsOf(c.child.pid);
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next++ < n) await c.client.callTool(call);
        }),
      );
      const t1 = performance.now();
      const cpu = (cpuMsOf(c.child.pid) - c0) / n;
      if (c.streams) {
        // Each call is two rows (started, then its outcome); wait (up to 10 s) for every stream to have them all.
        const want = before.map((b) => b + 2 * n);
        while (c.streams.some((s, i) => s.calls < want[i]) && performance.now() - t1 < 10_000) await new Promise((r) => setTimeout(r, 5));
        const missing = c.streams.reduce((m, s, i) => m + Math.max(0, want[i] - s.calls), 0);
        c.lag.push(missing > 0 ? Number.POSITIVE_INFINITY : Math.max(0, ...c.streams.map((s) => s.lastAt - t1)));
      }
      return { cpu, rate: n / ((t1 - t0) / 1000) };
    };
    for (const c of contenders) await round(c, ctx.quick ? 200 : 1_000);
    const load = loadavg()[0];
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < contenders.length; i++) {
        const c = contenders[(r + i) % contenders.length];
        const m = await round(c, total);
        c.cpu.push(m.cpu);
        c.rate.push(m.rate);
      }
      ctx.log?.(`console-live: round ${r + 1} of ${rounds}`);
    }
    const [off, again, on] = contenders.map((c) => median(c.cpu));
    const ratio = on / off;
    const streaming = contenders[2];
    const rate = median(streaming.rate);
    const lag = Math.max(...streaming.lag);
    const perRound = contenders.map((c) => `${c.label}: ${c.cpu.map((v) => v.toFixed(3)).join('/')}`).join('; ');
    return [
      {
        group: 'console: the live calls stream',
        name: `gateway CPU per call with ${streamsPerGateway} live stream(s) open, ${concurrency} in flight (HTTP, SQLite store, --auth tokens)`,
        value: on,
        unit: 'ms',
        anchor: 'the same gateway without --console',
        anchorValue: off,
        ratio,
        goal: `<= ${CPU_GOAL.toFixed(2)}x`,
        pass: ratio <= CPU_GOAL,
        note: `median of ${rounds} interleaved rounds of ${total} calls; noise floor (a second gateway without the console) ${(again / off).toFixed(3)}x; per round ms ${perRound}; load ${load.toFixed(1)}`,
      },
      {
        group: 'console: the live calls stream',
        name: `calls per second through the streaming gateway, every stream getting each call's 2 events`,
        value: Math.round(rate),
        unit: 'calls/s',
        goal: `>= ${RATE_GOAL} calls/s kept up (last event <= ${LAG_GOAL_MS} ms after the round)`,
        pass: rate >= RATE_GOAL && lag <= LAG_GOAL_MS,
        note: `per round calls/s ${streaming.rate.map((v) => Math.round(v)).join('/')}; last event after the round's last call ms ${streaming.lag.map((v) => (Number.isFinite(v) ? v.toFixed(0) : 'missing')).join('/')}; without the console calls/s ${contenders[0].rate.map((v) => Math.round(v)).join('/')}`,
      },
    ];
  } finally {
    for (const c of contenders) {
      for (const s of c.streams ?? []) s.close();
      await c.client?.close().catch(() => {});
    }
    for (const child of started) await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts `tool-envelope console` over a store; its console URL. */
function startConsole(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, 'console', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stderr.on('data', (d) => {
      out = (out + d).slice(-4_000);
    });
    child.stdout.on('data', (d) => {
      out += d;
      const m = /Console: (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.once('exit', (code) => reject(new Error(`console exited (${code}): ${out}`)));
  });
}

/** A call's two rows as the gateway writes them. */
function callRows(i) {
  const base = {
    id: `aud_bench_${i}`,
    tool: 'add',
    errorCode: null,
    toolCallId: `call-${i}`,
    runId: 'run-bench',
    traceId: `trace-${i}`,
    sessionId: null,
    startedAt: Date.now(),
    callEnvelope: { tool: 'add', args: { a: 1, b: 2 } },
    principalChain: [{ kind: 'user', id: 'bench', tenant_id: 'acme' }],
    policyDecision: null,
  };
  return [
    { ...base, status: 'started', category: null, endedAt: base.startedAt, latencyMs: 0, resultEnvelope: {}, outcome: { status: 'started' } },
    { ...base, status: 'ok', category: null, endedAt: base.startedAt + 1, latencyMs: 1, resultEnvelope: { output: 3 }, outcome: { status: 'ok', result: 3 } },
  ];
}

/**
 * The stream alone at a fixed rate: this process writes 1 000 calls/s (2 000 rows/s, a batch every
 * 10 ms, as a busy gateway's audit writer commits) into a SQLite log that a standalone console
 * process serves to open streams. Whether every stream gets every event, how late the last one is,
 * and the console's CPU per call.
 */
async function fixedRate(ctx) {
  const { openStore } = await import('../dist/src/store/index.js');
  const dir = mkdtempSync(path.join(tmpdir(), 'te-console-live-bench-'));
  const tokens = path.join(dir, 'tokens.yaml');
  writeFileSync(tokens, `tokens:\n  - { sha256: ${createHash('sha256').update(TOKEN).digest('hex')}, principal: "user:bench", roles: [admin] }\n`);
  const file = path.join(dir, 'calls.db');
  const store = await openStore(file);
  let consoleProcess;
  const streams = [];
  try {
    await store.appendAudit(callRows(0));
    const served = await startConsole(['--store', file, '--listen', '127.0.0.1:0', '--tokens', tokens]);
    consoleProcess = served.child;
    const n = ctx.quick ? 1 : 3;
    for (let i = 0; i < n; i++) streams.push(await openStream(served.url));
    const seconds = ctx.quick ? 3 : 10;
    const perTick = 10;
    const calls = seconds * 1_000;
    const c0 = cpuMsOf(consoleProcess.pid);
    const t0 = performance.now();
    let written = 0;
    for (let tick = 1; written < calls; tick++) {
      const rows = [];
      for (let k = 0; k < perTick; k++) rows.push(...callRows(++written));
      await store.appendAudit(rows);
      const wait = t0 + tick * 10 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const t1 = performance.now();
    while (streams.some((s) => s.calls < 2 * calls) && performance.now() - t1 < 10_000) await new Promise((r) => setTimeout(r, 5));
    const cpu = (cpuMsOf(consoleProcess.pid) - c0) / calls;
    const rate = calls / ((t1 - t0) / 1000);
    const missing = streams.reduce((m, s) => m + Math.max(0, 2 * calls - s.calls), 0);
    const lag = Math.max(0, ...streams.map((s) => s.lastAt - t1));
    return [
      {
        group: 'console: the live calls stream',
        name: `a SQLite log written at ${RATE_GOAL.toLocaleString('en')} calls/s (2 rows each), served by 'tool-envelope console' to ${n} live stream(s)`,
        value: Math.round(rate),
        unit: 'calls/s',
        goal: `>= ${RATE_GOAL} calls/s kept up (every event, the last <= ${LAG_GOAL_MS} ms after the last write)`,
        pass: rate >= RATE_GOAL * 0.95 && missing === 0 && lag <= LAG_GOAL_MS,
        note: `${calls} calls in ${((t1 - t0) / 1000).toFixed(1)} s; events missing ${missing}; last event ${lag.toFixed(0)} ms after the last write; the console process's CPU ${cpu.toFixed(3)} ms per call (${((cpu * rate) / 10).toFixed(1)}% of a core); load ${loadavg()[0].toFixed(1)}`,
      },
    ];
  } finally {
    for (const s of streams) s.close();
    if (consoleProcess) await stop(consoleProcess);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(ctx = {}) {
  return [...(await fixedRate(ctx)), ...(await run_(ctx))];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.table(await run({ quick: process.argv.includes('--quick'), log: (m) => process.stderr.write(`${m}\n`) }));
}
