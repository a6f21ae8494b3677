// Runtime overhead: what invoking a tool through tool-envelope adds over
// awaiting the bare async handler. Loaded by bench/run.mjs (`npm run bench`);
// also runnable alone after `npm run build`: `node --expose-gc bench/runtime.bench.mjs`.
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { createRuntime, createSession, defineTool } from '../dist/src/runtime/index.js';

const GOAL_NS = 1000;

function nowNs() {
  return process.hrtime.bigint();
}

const AsyncFunction = (async () => {}).constructor;

/**
 * A fresh loop "await fn() `calls` times; return [CPU ns, wall ns] per call" for
 * each measured function, compiled from source so that the call site's type
 * feedback is not shared between the bare handler and the runtime (a shared
 * loop goes megamorphic and penalises whichever runs second).
 *
 * CPU time (process.cpuUsage: this process, all threads, GC included) is the
 * reported value: on a shared machine wall-clock time mostly measures the
 * other processes. Wall-clock time is reported beside it.
 */
function loopFor(fn) {
  const loop = new AsyncFunction(
    'process',
    'fn',
    'calls',
    `const c = process.cpuUsage(); const t0 = process.hrtime.bigint();
     for (let i = 0; i < calls; i++) await fn();
     const wall = Number(process.hrtime.bigint() - t0); const d = process.cpuUsage(c);
     return [((d.user + d.system) * 1000) / calls, wall / calls];`,
  );
  return (calls) => loop(process, fn, calls);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Median over rounds of (runtime per-call time - bare per-call time); each round
 * runs both back to back, alternating which goes first, so that drift of the
 * shared machine hits both alike.
 */
async function overhead(bareFn, viaRuntimeFn, { rounds, calls, gc, warmupNs }) {
  const bare = loopFor(bareFn);
  const viaRuntime = loopFor(viaRuntimeFn);
  // Warm up for a fixed time (as bench/run.mjs does), so that both loops are optimised.
  const warmEnd = process.hrtime.bigint() + BigInt(warmupNs);
  while (process.hrtime.bigint() < warmEnd) {
    await bare(calls);
    await viaRuntime(calls);
  }
  const cpu = { diffs: [], bare: [], runtime: [] };
  const wall = { diffs: [], bare: [], runtime: [] };
  // One collection before measuring, as bench/run.mjs does; forcing one per round
  // would measure the recovery from a full GC rather than steady-state calls.
  gc();
  for (let r = 0; r < rounds; r++) {
    let b;
    let v;
    if (r % 2 === 0) {
      b = await bare(calls);
      v = await viaRuntime(calls);
    } else {
      v = await viaRuntime(calls);
      b = await bare(calls);
    }
    for (const [i, m] of [cpu, wall].entries()) {
      m.bare.push(b[i]);
      m.runtime.push(v[i]);
      m.diffs.push(v[i] - b[i]);
    }
  }
  const sum = (m) => ({ added: median(m.diffs), bare: median(m.bare), runtime: median(m.runtime) });
  return { cpu: sum(cpu), wall: sum(wall) };
}

/** @param {{ quick?: boolean, gc?: () => void, log?: (m: string) => void }} [ctx] */
export async function run(ctx = {}) {
  const quick = ctx.quick === true;
  const opts = { rounds: quick ? 9 : 41, calls: quick ? 5_000 : 20_000, gc: ctx.gc ?? (() => globalThis.gc?.()), warmupNs: quick ? 200e6 : 1e9 };
  const log = ctx.log ?? (() => {});
  const handler = async (args) => ({ echoed: args.n });
  const fakeCtx = {};
  const args = { n: 1 };
  const plain = defineTool({ name: 'plain', description: 'no schema', approvalMode: 'read_only', handler });
  const jsonSchema = defineTool({
    name: 'json-schema',
    description: 'JSON Schema args (Ajv)',
    approvalMode: 'read_only',
    input: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
    handler,
  });
  const zodArgs = defineTool({ name: 'zod', description: 'zod args', approvalMode: 'read_only', input: z.object({ n: z.number().int() }), handler });
  const runtime = createRuntime({ tools: [plain, jsonSchema, zodArgs] });
  const observed = createRuntime({ tools: [plain] });
  let ended = 0;
  observed.on('invoke:start', () => {});
  observed.on('invoke:end', () => {
    ended++;
  });
  const session = createSession();
  const bare = () => handler(args, fakeCtx);

  const rows = [];
  const add = (name, m, extra = {}) => {
    const r = m.cpu;
    rows.push({
      group: 'runtime',
      name: `${name} (median; CPU time; wall ${Math.round(m.wall.added)} ns)`,
      value: Math.round(r.added),
      unit: 'ns',
      anchor: 'await bare async handler',
      anchorValue: Math.round(r.bare),
      ratio: Number((r.runtime / r.bare).toFixed(2)),
      ...extra,
    });
    log(`${name}: +${Math.round(r.added)} ns CPU, +${Math.round(m.wall.added)} ns wall`);
  };

  const base = await overhead(bare, () => runtime.invoke('plain', args), opts);
  add('runtime.invoke added cost per call, no schema, no store', base, { goal: `<= ${GOAL_NS} ns`, pass: base.cpu.added <= GOAL_NS });
  add('added cost, JSON Schema args (Ajv, compiled at define time)', await overhead(bare, () => runtime.invoke('json-schema', args), opts));
  add('added cost, zod args (Standard Schema)', await overhead(bare, () => runtime.invoke('zod', args), opts));
  add('added cost, in a session', await overhead(bare, () => runtime.invoke('plain', args, { session }), opts));
  add('added cost, with invoke:start/end listeners', await overhead(bare, () => observed.invoke('plain', args), opts));
  if (ended === 0) throw new Error('listeners did not run');
  await session.close();

  // Throughput of many calls in flight at once.
  const n = 10_000;
  const t0 = nowNs();
  const outcomes = await Promise.all(Array.from({ length: n }, (_, i) => runtime.invoke('plain', { n: i })));
  const ms = Number(nowNs() - t0) / 1e6;
  if (outcomes.some((o) => o.status !== 'ok')) throw new Error('a concurrent call failed');
  rows.push({ group: 'runtime', name: '10 000 concurrent invocations', value: Number(ms.toFixed(1)), unit: 'ms total' });
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rows = await run({ quick: process.argv.includes('--quick') });
  console.table(rows);
}
