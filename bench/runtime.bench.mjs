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
 * For each variant, the median over rounds of (runtime per-call time - bare
 * per-call time). Each round measures every variant, in an order rotated from
 * round to round, and each variant's bare handler and runtime back to back,
 * alternating which goes first: the speed of this shared machine drifts by tens
 * of percent over seconds, and measuring the variants one after another would
 * give each a different stretch of it (an absolute goal in ns then passes or
 * fails with the stretch); interleaved, every variant sees the same mix.
 */
async function overheads(bareFn, variants, { rounds, calls, gc, warmupNs }) {
  const loops = variants.map((viaRuntimeFn) => ({ bare: loopFor(bareFn), viaRuntime: loopFor(viaRuntimeFn) }));
  // Warm up for a fixed time (as bench/run.mjs does), so that every loop is optimised.
  const warmEnd = process.hrtime.bigint() + BigInt(warmupNs);
  while (process.hrtime.bigint() < warmEnd) {
    for (const l of loops) {
      await l.bare(calls);
      await l.viaRuntime(calls);
    }
  }
  const results = loops.map(() => ({ cpu: { diffs: [], bare: [], runtime: [] }, wall: { diffs: [], bare: [], runtime: [] } }));
  // One collection before measuring, as bench/run.mjs does; forcing one per round
  // would measure the recovery from a full GC rather than steady-state calls.
  gc();
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < loops.length; k++) {
      const i = (k + r) % loops.length;
      const l = loops[i];
      let b;
      let v;
      if (r % 2 === 0) {
        b = await l.bare(calls);
        v = await l.viaRuntime(calls);
      } else {
        v = await l.viaRuntime(calls);
        b = await l.bare(calls);
      }
      for (const [j, m] of [results[i].cpu, results[i].wall].entries()) {
        m.bare.push(b[j]);
        m.runtime.push(v[j]);
        m.diffs.push(v[j] - b[j]);
      }
    }
  }
  const sum = (m) => ({ added: median(m.diffs), bare: median(m.bare), runtime: median(m.runtime) });
  return results.map((x) => ({ cpu: sum(x.cpu), wall: sum(x.wall) }));
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

  const [base, withJsonSchema, withZod, inSession, withListeners] = await overheads(
    bare,
    [
      () => runtime.invoke('plain', args),
      () => runtime.invoke('json-schema', args),
      () => runtime.invoke('zod', args),
      () => runtime.invoke('plain', args, { session }),
      () => observed.invoke('plain', args),
    ],
    opts,
  );
  add('runtime.invoke added cost per call, no schema, no store', base, { goal: `<= ${GOAL_NS} ns`, pass: base.cpu.added <= GOAL_NS });
  add('added cost, JSON Schema args (Ajv, compiled at define time)', withJsonSchema);
  add('added cost, zod args (Standard Schema)', withZod);
  add('added cost, in a session', inSession);
  add('added cost, with invoke:start/end listeners', withListeners);
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
