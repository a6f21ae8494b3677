// Tracing cost: runtime.invoke with instrumentRuntime() and no OpenTelemetry SDK
// registered (the API's no-op tracer) against the same runtime uninstrumented,
// and, for scale, with an SDK recording every span. Loaded by bench/run.mjs
// (`npm run bench`); also runnable alone after `npm run build`:
// `node --expose-gc bench/otel.bench.mjs`.
import { fileURLToPath } from 'node:url';
import { trace } from '@opentelemetry/api';
import { instrumentRuntime } from '../dist/src/otel/index.js';
import { createRuntime, defineTool } from '../dist/src/runtime/index.js';

const AsyncFunction = (async () => {}).constructor;

/** A per-target compiled loop (its own call-site feedback): CPU ns per call over `calls` awaited invocations. */
function cpuPerCall(invoke) {
  const body = `const before = process.cpuUsage();
    for (let k = 0; k < calls; k++) await invoke();
    const used = process.cpuUsage(before);
    return ((used.user + used.system) * 1000) / calls;`;
  const loop = new AsyncFunction('process', 'invoke', 'calls', body);
  return (calls) => loop(process, invoke, calls);
}

function mid(values) {
  const sorted = [...values].sort((x, y) => x - y);
  const h = sorted.length >> 1;
  return sorted.length % 2 ? sorted[h] : (sorted[h - 1] + sorted[h]) / 2;
}

/**
 * Alternates A and B for `rounds` rounds (A first on even rounds) and returns the
 * median of B - A and the medians of A and B, in CPU ns per call.
 */
async function paired(a, b, rounds, calls) {
  const la = cpuPerCall(a);
  const lb = cpuPerCall(b);
  for (let w = 0; w < 5; w++) {
    await la(calls);
    await lb(calls);
  }
  globalThis.gc?.();
  const as = [];
  const bs = [];
  const deltas = [];
  for (let r = 0; r < rounds; r++) {
    const first = r % 2 === 0 ? la : lb;
    const second = r % 2 === 0 ? lb : la;
    const x = await first(calls);
    const y = await second(calls);
    const [va, vb] = r % 2 === 0 ? [x, y] : [y, x];
    as.push(va);
    bs.push(vb);
    deltas.push(vb - va);
  }
  return { delta: mid(deltas), a: mid(as), b: mid(bs), spread: mid(deltas.map((d) => Math.abs(d - mid(deltas)))) };
}

/** @param {{ quick?: boolean, log?: (m: string) => void }} [ctx] */
export async function run(ctx = {}) {
  const rounds = ctx.quick ? 9 : 31;
  const calls = ctx.quick ? 5_000 : 20_000;
  const log = ctx.log ?? (() => {});
  const handler = async (args) => ({ echoed: args.n });
  const tool = () => defineTool({ name: 'plain', description: 'no schema', approvalMode: 'read_only', handler });
  const args = { n: 1 };
  const plain = createRuntime({ tools: [tool()] });
  const control = createRuntime({ tools: [tool()] });
  const traced = createRuntime({ tools: [tool()] });
  instrumentRuntime(traced);
  if (trace.getTracer('tool-envelope').startSpan('probe').isRecording()) throw new Error('an SDK is registered; this row measures the no-SDK case');

  // The noise floor: two identical uninstrumented runtimes measured the same way.
  const noise = await paired(
    () => plain.invoke('plain', args),
    () => control.invoke('plain', args),
    rounds,
    calls,
  );
  const off = await paired(
    () => plain.invoke('plain', args),
    () => traced.invoke('plain', args),
    rounds,
    calls,
  );
  // "No measurable cost": the added time is within the run-to-run noise of identical runtimes,
  // or under 5% of the call itself, whichever is larger.
  const bound = Math.max(Math.abs(noise.delta) + 2 * noise.spread, 0.05 * off.a);
  log(
    `noise ${noise.delta.toFixed(0)} ± ${noise.spread.toFixed(0)} ns; instrumented (no SDK) ${off.delta >= 0 ? '+' : ''}${off.delta.toFixed(0)} ns (bound ${bound.toFixed(0)})`,
  );
  const rows = [
    {
      group: 'otel',
      name: 'noise floor: uninstrumented vs an identical uninstrumented runtime (median difference; CPU time)',
      value: Math.round(noise.delta),
      unit: 'ns',
      anchor: 'runtime.invoke, uninstrumented',
      anchorValue: Math.round(noise.a),
      ratio: Number((noise.b / noise.a).toFixed(3)),
    },
    {
      group: 'otel',
      name: 'instrumentRuntime, no SDK registered (API no-op tracer): added cost per call (median; CPU time)',
      value: Math.round(off.delta),
      unit: 'ns',
      anchor: 'runtime.invoke, uninstrumented',
      anchorValue: Math.round(off.a),
      ratio: Number((off.b / off.a).toFixed(3)),
      goal: `no measurable cost: <= ${Math.round(bound)} ns (noise floor + 2 x its spread, or 5% of the call)`,
      pass: off.delta <= bound,
    },
  ];

  // For scale: an SDK recording every span (in memory), when it is installed.
  try {
    const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const recorded = createRuntime({ tools: [tool()] });
    instrumentRuntime(recorded, { tracerProvider: provider });
    const on = await paired(
      () => plain.invoke('plain', args),
      async () => {
        const o = await recorded.invoke('plain', args);
        // Keep memory flat: the exporter would otherwise hold every span.
        if (exporter.getFinishedSpans().length > 10_000) exporter.reset();
        return o;
      },
      ctx.quick ? 5 : 11,
      calls,
    );
    log(`instrumented with the SDK: +${on.delta.toFixed(0)} ns`);
    rows.push({
      group: 'otel',
      name: 'instrumentRuntime with the SDK recording every span (BasicTracerProvider, in-memory exporter): added cost per call',
      value: Math.round(on.delta),
      unit: 'ns',
      anchor: 'runtime.invoke, uninstrumented',
      anchorValue: Math.round(on.a),
      ratio: Number((on.b / on.a).toFixed(2)),
    });
  } catch (e) {
    log(`SDK row skipped: ${e instanceof Error ? e.message : String(e)}`);
  }
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.table(await run({ quick: process.argv.includes('--quick'), log: console.log }));
}
