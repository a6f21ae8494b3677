// What the console's live calls stream costs and whether it keeps up (#42 Deliver 4). Two parts:
// - The stream at 1,000 calls/s: this process writes a log (SQLite, then PostgreSQL where NOTIFY
//   wakes the reader) at a paced 1,000 calls/s (2,000 rows/s) while a standalone `tool-envelope
//   console` serves it to open streams; per round, every event reaching every stream, the last one's
//   delay after the last write, and the console's CPU per call. The log is written directly because
//   one gateway on a small machine goes slower than that with or without the console.
// - The gateway's cost: three gateways over SQLite with --auth tokens in front of the example server,
//   one with --console and SSE streams of /console/live/events open (an admin's, every call), one
//   without the console, and a second without (the noise floor), driven at the same time in rounds
//   of calls at 32 in flight each. Rows: the streaming gateway's CPU per call against the one without (goal
//   <= 1.05x, the median of the per-round ratios), and whether every stream got each of its calls'
//   two events within 1 s of the round's end.
// Loaded by bench/run.mjs; also runnable alone after the build:
// `node --expose-gc bench/console-live.bench.mjs [--quick]`. The MCP clients are made like
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
import { benchPostgres, pgNotMeasured } from '../test/pg-server.mjs';
import { startContenders, stopContenders } from './contenders.mjs';
import { cpuMsOf, median, stop } from './gateway.bench.mjs';

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
  const rounds = ctx.quick ? 3 : 9;
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
  try {
    await startContenders(contenders, async (url) => {
      const client = new Client({ name: 'bench', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), { fetch: perRequestSignalFetch(), requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }),
      );
      return client;
    });
    for (const c of contenders) {
      c.cpu = [];
      c.rate = [];
      c.lag = [];
      if (c.streaming) c.streams = await Promise.all(Array.from({ length: streamsPerGateway }, () => openStream(`${new URL(c.url).origin}/console/`)));
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
    // The three run each round at the same time, so whatever else loads the machine falls on them alike
    // (back to back, two identical gateways differed by up to 20% a round at load 11-18).
    await Promise.all(contenders.map((c) => round(c, ctx.quick ? 200 : 1_000)));
    const loads = [];
    for (let r = 0; r < rounds; r++) {
      const measured = await Promise.all(contenders.map((c) => round(c, total)));
      measured.forEach((m, i) => {
        contenders[i].cpu.push(m.cpu);
        contenders[i].rate.push(m.rate);
      });
      loads.push(loadavg()[0]);
      ctx.log?.(`console-live: round ${r + 1} of ${rounds}`);
    }
    const [off, , on] = contenders.map((c) => median(c.cpu));
    // The ratio within a round leaves out the load's drift between rounds.
    const ratios = contenders[2].cpu.map((v, r) => v / contenders[0].cpu[r]);
    const floors = contenders[1].cpu.map((v, r) => v / contenders[0].cpu[r]);
    const ratio = median(ratios);
    const streaming = contenders[2];
    const rate = median(streaming.rate);
    const lag = Math.max(...streaming.lag);
    const list = (xs, digits) => xs.map((v) => v.toFixed(digits)).join('/');
    const perRound = contenders.map((c) => `${c.label}: ${list(c.cpu, 3)}`).join('; ');
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
        note: `median of the per-round ratios of ${rounds} rounds of ${total} calls, the three gateways at once (${list(ratios, 3)}); noise floor (a second gateway without the console) ${median(floors).toFixed(3)}x (${list(floors, 3)}); per round ms ${perRound}; load ${list(loads, 1)}`,
      },
      {
        group: 'console: the live calls stream',
        name: `the streaming gateway's own calls: every stream getting each call's 2 events, at the rate the gateway reaches here`,
        value: Math.round(rate),
        unit: 'calls/s',
        goal: `every event, the last <= ${LAG_GOAL_MS} ms after the round (the stream at ${RATE_GOAL} calls/s: the log rows above; one gateway on this machine goes slower with or without the console)`,
        pass: lag <= LAG_GOAL_MS,
        note: `per round calls/s ${streaming.rate.map((v) => Math.round(v)).join('/')}; without the console ${contenders[0].rate.map((v) => Math.round(v)).join('/')}; last event after the round's last call ms (warm-up first) ${streaming.lag.map((v) => (Number.isFinite(v) ? v.toFixed(0) : 'missing')).join('/')}`,
      },
    ];
  } finally {
    for (const c of contenders) for (const s of c.streams ?? []) s.close();
    await stopContenders(contenders);
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
 * Writes `calls` calls (2 rows each) into `store` at `perSecond`: every 10 ms, or as soon as the
 * previous commit ends when it took longer, the calls due by then in one commit (as a busy gateway's
 * audit writer batches what waits while a commit runs). The writing's start and end (performance.now()).
 */
async function writePaced(store, first, calls, perSecond) {
  const t0 = performance.now();
  let written = 0;
  while (written < calls) {
    const due = Math.min(calls, Math.floor(((performance.now() - t0) * perSecond) / 1000));
    if (due > written) {
      const rows = [];
      while (written < due) rows.push(...callRows(first + written++));
      await store.appendAudit(rows);
    } else await new Promise((r) => setTimeout(r, 10 - ((performance.now() - t0) % 10)));
  }
  return { t0, t1: performance.now() };
}

/**
 * The stream alone at a fixed rate, the gateway's speed out of it: this process writes 1 000 calls/s
 * (2 000 rows/s) into a log (SQLite, or PostgreSQL where the console is woken by NOTIFY) that a
 * standalone `tool-envelope console` process serves to open streams, in rounds. Per round: whether
 * every stream got every event, how late the last one came after the last write, and the console
 * process's CPU per call.
 */
async function fixedRate(ctx, target) {
  const dir = mkdtempSync(path.join(tmpdir(), 'te-console-live-bench-'));
  const tokens = path.join(dir, 'tokens.yaml');
  writeFileSync(tokens, `tokens:\n  - { sha256: ${createHash('sha256').update(TOKEN).digest('hex')}, principal: "user:bench", roles: [admin] }\n`);
  let store;
  let consoleProcess;
  const streams = [];
  try {
    const opened = await target.open(dir);
    store = opened.store;
    const consoleArgs = opened.consoleArgs;
    await store.appendAudit(callRows(0));
    const served = await startConsole([...consoleArgs, '--listen', '127.0.0.1:0', '--tokens', tokens]);
    consoleProcess = served.child;
    const n = ctx.quick ? 1 : 3;
    for (let i = 0; i < n; i++) streams.push(await openStream(served.url));
    const rounds = ctx.quick ? 1 : 3;
    const calls = (ctx.quick ? 3 : 10) * RATE_GOAL;
    const per = [];
    for (let r = 0; r < rounds; r++) {
      const want = streams.map((s) => s.calls + 2 * calls);
      const c0 = cpuMsOf(consoleProcess.pid);
      const { t0, t1 } = await writePaced(store, 1 + r * calls, calls, RATE_GOAL);
      while (streams.some((s, i) => s.calls < want[i]) && performance.now() - t1 < 10_000) await new Promise((res) => setTimeout(res, 5));
      per.push({
        rate: calls / ((t1 - t0) / 1000),
        missing: streams.reduce((m, s, i) => m + Math.max(0, want[i] - s.calls), 0),
        lag: Math.max(0, ...streams.map((s) => s.lastAt - t1)),
        cpu: (cpuMsOf(consoleProcess.pid) - c0) / calls,
        load: loadavg()[0],
      });
      ctx.log?.(`console-live: ${target.label} round ${r + 1} of ${rounds}`);
    }
    const rate = median(per.map((p) => p.rate));
    const missing = per.reduce((m, p) => m + p.missing, 0);
    const lag = Math.max(...per.map((p) => p.lag));
    const cpu = median(per.map((p) => p.cpu));
    const list = (f) => per.map(f).join('/');
    return [
      {
        group: 'console: the live calls stream',
        name: `a ${target.label} log written at ${RATE_GOAL.toLocaleString('en')} calls/s (2 rows each) by another process, served by 'tool-envelope console' to ${n} live stream(s)`,
        value: Math.round(rate),
        unit: 'calls/s',
        goal: `>= ${RATE_GOAL} calls/s kept up (every event, the last <= ${LAG_GOAL_MS} ms after the last write)`,
        pass: rate >= RATE_GOAL * 0.95 && missing === 0 && lag <= LAG_GOAL_MS,
        note: `${rounds} round(s) of ${calls} calls; per round calls/s ${list((p) => Math.round(p.rate))}; events missing ${list((p) => p.missing)}; last event after the last write ms ${list((p) => p.lag.toFixed(0))}; the console process's CPU ms per call ${list((p) => p.cpu.toFixed(3))} (median ${((cpu * rate) / 10).toFixed(1)}% of a core); load ${list((p) => p.load.toFixed(1))}; ${target.note}`,
      },
    ];
  } finally {
    for (const s of streams) s.close();
    if (consoleProcess) await stop(consoleProcess);
    await target.close(store);
    rmSync(dir, { recursive: true, force: true });
  }
}

const sqliteTarget = {
  label: 'SQLite',
  note: 'the console polls every 200 ms',
  async open(dir) {
    const { openStore } = await import('../dist/src/store/index.js');
    const file = path.join(dir, 'calls.db');
    return { store: await openStore(file), consoleArgs: ['--store', file] };
  },
  close: (store) => store?.close(),
};

/** PostgreSQL (TOOL_ENVELOPE_BENCH_PG_URL or a throwaway durable server), a schema of this run's; undefined without one. */
async function postgresTarget() {
  const pg = await benchPostgres();
  if (!pg) return undefined;
  const schema = `bench_live_${process.pid}`;
  return {
    label: 'PostgreSQL',
    note: `${pg.server ? 'throwaway local server, durable defaults' : 'TOOL_ENVELOPE_BENCH_PG_URL'}; the console woken by NOTIFY, polling every 1 s`,
    async open() {
      const { openStore } = await import('../dist/src/store/index.js');
      return { store: await openStore(pg.url, { schema }), consoleArgs: ['--store', pg.url, '--pg-schema', schema] };
    },
    async close(store) {
      try {
        await store?.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await store?.close();
      } finally {
        pg.server?.stop();
      }
    },
  };
}

export async function run(ctx = {}) {
  const rows = await fixedRate(ctx, sqliteTarget);
  const pg = await postgresTarget();
  rows.push(...(pg ? await fixedRate(ctx, pg) : [pgNotMeasured('console: the live calls stream')]));
  return [...rows, ...(await run_(ctx))];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.table(await run({ quick: process.argv.includes('--quick'), log: (m) => process.stderr.write(`${m}\n`) }));
}
