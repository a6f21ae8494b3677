// What watching the gateway costs (#39): the gateway's CPU per call at 32 calls in flight with
// --metrics and --log-format json on (no --log-calls) against the same gateway with them off, in
// interleaved rounds beside a second gateway with them off (the noise floor); and the time of one
// scrape of /metrics once 100 tools have seen 1 000 000 calls. Loaded by bench/run.mjs; also
// runnable alone after the build: `node --expose-gc bench/observe.bench.mjs [--quick]`.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startContenders, stopContenders } from './contenders.mjs';
import { connect, http } from './gateway.bench.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EXAMPLE = path.join(root, 'dist/examples/example-server.js');
const CPU_GOAL = 1.03;
const SCRAPE_GOAL_MS = 50;

/** CPU (user + system, all threads) of a process so far, in ms (Linux /proc). */
async function cpuMsOf(pid) {
  const { readFileSync } = await import('node:fs');
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** CPU ms per call of the gateway process over `total` calls with `concurrency` in flight. */
async function cpuPerCall({ client, child }, call, total, concurrency) {
  let next = 0;
  const c0 = await cpuMsOf(child.pid);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) await client.callTool(call);
    }),
  );
  return ((await cpuMsOf(child.pid)) - c0) / total;
}

async function cpuRows(ctx) {
  const rounds = ctx.quick ? 3 : 5;
  const total = ctx.quick ? 500 : 2_000;
  const concurrency = 32;
  const dir = mkdtempSync(path.join(tmpdir(), 'te-observe-bench-'));
  const upstream = ['--', process.execPath, EXAMPLE];
  const common = (name) => ['--store', path.join(dir, `${name}.db`), ...upstream];
  const contenders = [
    { label: 'off', args: common('off') },
    { label: 'off (again)', args: common('off2') },
    // --log-level info overrides the --quiet the bench's launcher adds: the JSON logger is live.
    { label: 'on', args: ['--metrics', '--log-format', 'json', '--log-level', 'info', ...common('on')] },
  ];
  try {
    await startContenders(contenders, (url) => connect(http(url)));
    for (const c of contenders) c.cpu = [];
    const call = { name: 'add', arguments: { a: 1, b: 2 } };
    for (const c of contenders) await cpuPerCall(c, call, ctx.quick ? 200 : 1_000, concurrency);
    const load = loadavg()[0];
    for (let r = 0; r < rounds; r++) {
      // Rotated order, so no contender always runs first or last in a round.
      for (let i = 0; i < contenders.length; i++) {
        const c = contenders[(r + i) % contenders.length];
        c.cpu.push(await cpuPerCall(c, call, total, concurrency));
      }
      ctx.log?.(`observe: round ${r + 1} of ${rounds}`);
    }
    const [off, again, on] = contenders.map((c) => median(c.cpu));
    const ratio = on / off;
    const floor = again / off;
    const perRound = contenders.map((c) => `${c.label}: ${c.cpu.map((v) => v.toFixed(3)).join('/')}`).join('; ');
    return [
      {
        group: 'observe: the cost of watching the gateway',
        name: `--metrics and --log-format json (no --log-calls): gateway CPU per call, ${concurrency} in flight (HTTP, SQLite store)`,
        value: on,
        unit: 'ms',
        anchor: 'the same gateway with them off',
        anchorValue: off,
        ratio,
        goal: `<= ${CPU_GOAL.toFixed(2)}x`,
        pass: ratio <= CPU_GOAL,
        note: `median of ${rounds} interleaved rounds of ${total} calls; noise floor (a second gateway with them off) ${floor.toFixed(3)}x; per round ms ${perRound}; load ${load.toFixed(1)}`,
      },
    ];
  } finally {
    await stopContenders(contenders);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function scrapeRows(ctx) {
  const { GatewayMetrics } = await import('../dist/src/observe/metrics.js');
  const { listenRoutes, metricsRoute } = await import('../dist/src/observe/listener.js');
  const metrics = new GatewayMetrics();
  metrics.watch({ upstreams: [1, 2, 3].map((i) => ({ spec: { name: `upstream${i}` }, state: 'ready', generation: 1, exits: 0 })) }, { auditQueue: () => 0 });
  const tools = Array.from({ length: 100 }, (_, i) => `tool_${i}`);
  const categories = ['timeout', 'invalid-argument', 'no-target', 'internal'];
  const calls = ctx.quick ? 100_000 : 1_000_000;
  const ok = { status: 'ok' };
  const failures = categories.map((category) => ({ status: 'error', error: { category, code: 'x' } }));
  for (let i = 0; i < calls; i++) {
    const call = { tool: tools[i % 100], upstream: `upstream${(i % 3) + 1}` };
    metrics.observeCall(call, i % 10 === 0 ? failures[(i / 10) % 4] : ok, (i % 1000) / 1000);
  }
  // The CPU the gateway's thread spends rendering one exposition (what a loaded machine stretches the wall time of).
  const cpu = [];
  for (let i = 0; i < (ctx.quick ? 5 : 20); i++) {
    const c0 = process.cpuUsage();
    await metrics.exposition();
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  const listener = await listenRoutes([metricsRoute(metrics)], { host: '127.0.0.1', port: 0 });
  try {
    const times = [];
    let bytes = 0;
    for (let i = 0; i < (ctx.quick ? 10 : 50); i++) {
      const t0 = process.hrtime.bigint();
      const text = await (await fetch(`${listener.url}/metrics`)).text();
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      bytes = text.length;
    }
    const ms = median(times);
    return [
      {
        group: 'observe: the cost of watching the gateway',
        name: `one scrape of /metrics (HTTP) after 100 tools saw ${calls.toLocaleString('en')} calls`,
        value: ms,
        unit: 'ms',
        goal: `< ${SCRAPE_GOAL_MS} ms`,
        pass: ms < SCRAPE_GOAL_MS,
        note: `median of ${times.length} scrapes, p95 ${ctx.percentile(times, 95).toFixed(2)} ms; CPU of rendering it ${median(cpu).toFixed(1)} ms (median of ${cpu.length}); load ${loadavg()[0].toFixed(1)}; exposition ${(bytes / 1024).toFixed(0)} KiB (100 tools x ok and 4 error categories, 2 histograms of 15 buckets)`,
      },
    ];
  } finally {
    await listener.close();
  }
}

export async function run(ctx) {
  return [...(await scrapeRows(ctx)), ...(await cpuRows(ctx))];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { makeContext } = await import('./run.mjs');
  const ctx = makeContext(process.argv.includes('--quick'));
  console.log(await run(ctx));
}
