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

/** Per-call nanoseconds of `calls` sequential awaits of `fn()`. */
async function perCall(fn, calls) {
  const t0 = nowNs();
  for (let i = 0; i < calls; i++) await fn();
  return Number(nowNs() - t0) / calls;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Median over rounds of (runtime per-call time - bare per-call time); each round
 * runs both back to back so that drift of the shared machine hits both alike.
 */
async function overhead(bare, viaRuntime, { rounds, calls }) {
  for (let i = 0; i < 3; i++) {
    await perCall(bare, calls);
    await perCall(viaRuntime, calls);
  }
  const diffs = [];
  const bares = [];
  const runs = [];
  for (let r = 0; r < rounds; r++) {
    globalThis.gc?.();
    const b = await perCall(bare, calls);
    const v = await perCall(viaRuntime, calls);
    bares.push(b);
    runs.push(v);
    diffs.push(v - b);
  }
  return { added: median(diffs), bare: median(bares), runtime: median(runs) };
}

/** @param {{ quick?: boolean }} [ctx] */
export async function run(ctx = {}) {
  const quick = ctx.quick === true;
  const opts = { rounds: quick ? 7 : 31, calls: quick ? 5_000 : 20_000 };
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
  const add = (name, r, extra = {}) =>
    rows.push({
      group: 'runtime',
      name,
      value: Math.round(r.added),
      unit: 'ns/call added',
      anchor: 'await bare async handler',
      anchorValue: Math.round(r.bare),
      ratio: Number((r.runtime / r.bare).toFixed(2)),
      ...extra,
    });

  add('invoke, no schema, no store (median added cost)', await overhead(bare, () => runtime.invoke('plain', args), opts), {
    goal: `<= ${GOAL_NS} ns`,
    pass: undefined,
  });
  rows[0].pass = rows[0].value <= GOAL_NS;
  add('invoke, JSON Schema args (Ajv, compiled at define time)', await overhead(bare, () => runtime.invoke('json-schema', args), opts));
  add('invoke, zod args (Standard Schema)', await overhead(bare, () => runtime.invoke('zod', args), opts));
  add('invoke in a session', await overhead(bare, () => runtime.invoke('plain', args, { session }), opts));
  add('invoke with start/end listeners', await overhead(bare, () => observed.invoke('plain', args), opts));
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
