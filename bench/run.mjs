#!/usr/bin/env node
// Benchmark harness (`npm run bench` = build, then `node --expose-gc bench/run.mjs`).
// Loads every bench/*.bench.mjs module, runs them one after another, and writes
// BENCHMARKS.md: the machine, then one table per group with each measurement,
// the anchor measured in the same run, the ratio, the goal and whether it is met.
// The module interface is documented in bench/README.md.
//
// Usage: node --expose-gc bench/run.mjs [--quick] [--only NAME[,NAME]] [--out FILE]
import { readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';

// Optimise on the main thread: on a loaded machine the background compiler can
// lag for seconds, and whichever function happens to have its optimised code
// installed would look fast. The steady-state code is the same either way.
v8.setFlagsFromString('--no-concurrent-recompilation');

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(benchDir, '..');

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

function summarize(perOpNs) {
  const medianNs = median(perOpNs);
  return { medianNs, p95Ns: percentile(perOpNs, 95), opsPerSec: 1e9 / medianNs, samples: perOpNs.length };
}

const TIME_BATCH_SOURCE = (aw) => `
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) ${aw} fn(arg);
  return Number(process.hrtime.bigint() - t0);`;
const AsyncFunction = (async () => {}).constructor;

/**
 * A fresh "run \`fn\` \`n\` times, return the elapsed nanoseconds" loop. Each
 * measured function gets its own copy, compiled from source, so that V8's
 * type feedback at the call site \`fn()\` is not shared between measurements
 * (a shared loop goes megamorphic and penalises whatever is measured second).
 */
let timers = 0;

function batchTimer() {
  // The unique comment defeats V8's compilation cache, which would otherwise share one function (and its feedback).
  return new Function('process', 'fn', 'n', 'arg', `// timer ${++timers}${TIME_BATCH_SOURCE('')}`).bind(null, process);
}

function asyncBatchTimer() {
  return new AsyncFunction('process', 'fn', 'n', 'arg', `// timer ${++timers}${TIME_BATCH_SOURCE('await')}`).bind(null, process);
}

/**
 * Warms `time` up for `warmupNs` in batches that grow from one call, then
 * returns how many calls make one batch last about `targetNs` (at least 1).
 * Calibrating only after the warm-up matters: a first, unoptimised call can
 * take longer than a whole batch should.
 */
async function warmAndCalibrate(time, warmupNs, targetNs) {
  const end = process.hrtime.bigint() + BigInt(Math.round(warmupNs));
  let n = 1;
  while (process.hrtime.bigint() < end) {
    const ns = await time(n);
    if (ns < targetNs) n *= 2;
  }
  for (let tries = 0; ; tries++) {
    const ns = await time(n);
    if ((ns >= targetNs / 2 && ns > 0) || n >= 1 << 26 || tries > 40) return Math.max(1, Math.round((n * targetNs) / Math.max(ns, 1)));
    n *= ns < targetNs / 16 ? 8 : 2;
  }
}

/** The `ctx` given to every bench module (exported so a module can be run alone). */
export function makeContext(quick) {
  // Short batches: on a shared machine a batch that is preempted is an outlier
  // the median ignores, and short ones are rarely preempted (p95 shows the rest).
  const settings = {
    warmupNs: quick ? 100e6 : 300e6,
    batchNs: 0.5e6,
    batches: quick ? 61 : 201,
  };
  const gc = () => globalThis.gc?.();

  async function sample(time, options) {
    const warmupNs = options?.warmupNs ?? settings.warmupNs;
    const batches = options?.batches ?? settings.batches;
    const calibrated = await warmAndCalibrate(time, warmupNs, options?.batchNs ?? settings.batchNs);
    const n = options?.batchSize ?? calibrated;
    gc();
    const perOp = [];
    for (let b = 0; b < batches; b++) perOp.push((await time(n)) / n);
    return { ...summarize(perOp), batchSize: n };
  }

  return {
    /** True for a short smoke run (`--quick`): fewer batches, shorter warm-up. */
    quick,
    /** The repository root (bench code imports `${root}/dist/...`). */
    root,
    /** The contracts the anchors compile from: the vendored copies of the published files (`schemas/`). */
    contractsDir: path.join(root, 'schemas'),
    /** Forces a garbage collection when node runs with --expose-gc. */
    gc,
    /** Progress line on stderr. */
    log: (msg) => process.stderr.write(`  ${msg}\n`),
    /**
     * Measures a synchronous function: warm-up, then many batches of calls
     * `fn(options.arg)`; returns per-call { medianNs, p95Ns, opsPerSec, samples, batchSize }.
     */
    measure: (fn, options) => {
      const timeBatch = batchTimer();
      return sample((n) => timeBatch(fn, n, options?.arg), options);
    },
    /** The same for an async function (each call awaited in turn). */
    measureAsync: (fn, options) => {
      const timeBatch = asyncBatchTimer();
      return sample((n) => timeBatch(fn, n, options?.arg), options);
    },
    /**
     * Measures two synchronous functions, `fnA(options.argA)` and `fnB(options.argB)`,
     * in interleaved batches (A, B, B, A, ...), so drift of a shared machine hits
     * both alike. Returns { a, b } summaries.
     */
    async compare(fnA, fnB, options) {
      const batches = options?.batches ?? settings.batches;
      const timeA = batchTimer();
      const timeB = batchTimer();
      const timeBatch = (fn, n) => (fn === fnA ? timeA(fn, n, options?.argA) : timeB(fn, n, options?.argB));
      const warmupNs = (options?.warmupNs ?? settings.warmupNs) / 2;
      const nA = await warmAndCalibrate((n) => timeBatch(fnA, n), warmupNs, settings.batchNs);
      const nB = await warmAndCalibrate((n) => timeBatch(fnB, n), warmupNs, settings.batchNs);
      gc();
      const a = [];
      const b = [];
      for (let i = 0; i < batches; i++) {
        // Alternate which goes first so neither always runs right after a GC pause.
        if (i % 2 === 0) {
          a.push(timeBatch(fnA, nA) / nA);
          b.push(timeBatch(fnB, nB) / nB);
        } else {
          b.push(timeBatch(fnB, nB) / nB);
          a.push(timeBatch(fnA, nA) / nA);
        }
      }
      return { a: { ...summarize(a), batchSize: nA }, b: { ...summarize(b), batchSize: nB } };
    },
    median,
    percentile,
  };
}

function machine() {
  const cpus = os.cpus();
  return [
    `- CPU: ${cpus[0]?.model?.trim() ?? 'unknown'} (${cpus.length} logical cores)`,
    `- Memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `- OS: ${os.type()} ${os.release()} (${os.arch()})`,
    `- Node.js: ${process.version}`,
    `- Date: ${new Date().toISOString()}`,
  ].join('\n');
}

const UNIT_DIGITS = { 'ops/s': 0, ns: 0, µs: 2, ms: 3, x: 2 };

function fmt(value, unit) {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'number') return String(value);
  if (!Number.isFinite(value)) return String(value);
  const digits = UNIT_DIGITS[unit] ?? (Math.abs(value) >= 100 ? 0 : 2);
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

function table(rows) {
  const head = '| Measurement | Value | Anchor | Anchor value | Ratio | Goal | Met |\n| --- | ---: | --- | ---: | ---: | --- | :---: |';
  const lines = rows.map((r) => {
    const value = `${fmt(r.value, r.unit)} ${r.unit ?? ''}`.trim();
    const anchorValue = r.anchorValue === undefined ? '' : `${fmt(r.anchorValue, r.unit)} ${r.unit ?? ''}`.trim();
    const ratio = r.ratio === undefined ? '' : `${fmt(r.ratio, 'x')}x`;
    const met = r.pass === undefined ? '' : r.pass ? 'yes' : '**no**';
    return `| ${r.name} | ${value} | ${r.anchor ?? ''} | ${anchorValue} | ${ratio} | ${r.goal ?? ''} | ${met} |`;
  });
  return [head, ...lines].join('\n');
}

// Node opens the stdout and stderr handles on first use: opened here, they are counted as the process's own.
void process.stdout.fd;
void process.stderr.fd;
/** What the process holds before any module runs (stdio pipes, ...), so only what modules leave is reported. */
const RESOURCES_AT_START = process.getActiveResourcesInfo();

async function main() {
  const { values } = parseArgs({
    options: { quick: { type: 'boolean' }, only: { type: 'string' }, out: { type: 'string' } },
  });
  const only = values.only?.split(',').map((s) => s.trim());
  const files = readdirSync(benchDir)
    .filter((f) => f.endsWith('.bench.mjs'))
    .filter((f) => !only || only.includes(f.replace(/\.bench\.mjs$/, '')))
    .sort();
  if (globalThis.gc === undefined) process.stderr.write('note: run with node --expose-gc for steadier numbers\n');
  const ctx = makeContext(values.quick === true);
  const rows = [];
  const failures = [];
  for (const f of files) {
    process.stderr.write(`bench ${f}\n`);
    const t0 = Date.now();
    try {
      const mod = await import(pathToFileURL(path.join(benchDir, f)).href);
      const got = await mod.run(ctx);
      for (const r of got ?? []) rows.push({ module: f, ...r });
    } catch (e) {
      failures.push({ module: f, error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
      process.stderr.write(`  failed: ${e instanceof Error ? e.message : String(e)}\n`);
    }
    process.stderr.write(`  done in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  }

  const groups = new Map();
  for (const r of rows) {
    if (!groups.has(r.group)) groups.set(r.group, []);
    groups.get(r.group).push(r);
  }
  const withGoal = rows.filter((r) => r.pass !== undefined);
  const missed = withGoal.filter((r) => !r.pass);
  let md = '# Benchmarks\n\n';
  md += 'Generated by `npm run bench` (`bench/run.mjs`); do not edit by hand. Each anchor is measured in the same run, on the same machine,\n';
  md += 'interleaved with the measurement where the module says so. Times are medians of many batches; see bench/README.md.\n\n';
  md += `## Machine\n\n${machine()}\n`;
  if (values.quick) md += '\nThis was a `--quick` run: fewer batches, numbers are rough.\n';
  md += `\n## Summary\n\n${withGoal.length - missed.length} of ${withGoal.length} goals met.`;
  if (missed.length > 0) md += ` Not met: ${missed.map((r) => `${r.group} / ${r.name}`).join('; ')}.`;
  md += '\n';
  for (const [group, list] of groups) {
    md += `\n## ${group}\n\n${table(list)}\n`;
    const notes = list.filter((r) => r.note).map((r) => `- ${r.name}: ${r.note}`);
    if (notes.length > 0) md += `\n${notes.join('\n')}\n`;
  }
  if (failures.length > 0) {
    md += '\n## Modules that failed\n\n';
    for (const f of failures) md += `- \`${f.module}\`:\n\n\`\`\`\n${f.error}\n\`\`\`\n`;
  }
  const out = path.resolve(root, values.out ?? 'BENCHMARKS.md');
  writeFileSync(out, md);
  process.stderr.write(`wrote ${path.relative(process.cwd(), out) || out}: ${withGoal.length - missed.length}/${withGoal.length} goals met\n`);
  if (failures.length > 0) process.exitCode = 1;
  // A module that leaves a server, socket or child process behind would keep the
  // process alive after the report is written: name what is left, then exit. A closed
  // PostgreSQL pool's sockets finish closing a moment after pool.end() resolves: what is
  // still open after a short settle is what was left behind.
  await new Promise((r) => setTimeout(r, 200));
  const left = [...process.getActiveResourcesInfo()];
  for (const r of RESOURCES_AT_START) left.splice(left.indexOf(r), left.includes(r) ? 1 : 0);
  if (left.length > 0) process.stderr.write(`warning: bench modules left resources open: ${left.join(', ')}\n`);
  process.exit();
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await main();
