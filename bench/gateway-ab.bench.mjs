// The gateway before and after its redesign (issue #36: src/mcp by concept, the pipeline carrying
// the answer, one call shape), A/B in one run: the bench builds the last commit before the redesign
// from git (its own `npm run build` in a temporary copy) and starts both CLIs as gateway processes
// over Streamable HTTP in front of the same example server, driven by the same SDK client, 32 calls
// in flight, interleaved rounds (new old, then old new). The figure that decides is the gateway's
// CPU per call (user + system of every thread, from /proc): latency on a shared machine mostly
// measures the other processes. Why that commit: bench/README.md. Alone after the build:
// `node --expose-gc bench/run.mjs --only gateway-ab`.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { connect, http, stop } from './gateway.bench.mjs';

const execFileAsync = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The parent of d886f12, the redesign's first commit (src/mcp/wire and upstream/ folders, #36 Deliver 1).
const BEFORE = '918405e';
const GOAL = 1.05;
const GROUP = 'gateway: before and after the redesign (#36, A/B)';
const CALL = { name: 'add', arguments: { a: 1, b: 2 } };
const EXAMPLE = path.join(root, 'dist/examples/example-server.js');

/** Why this bench cannot run here, or undefined: it needs the commit in git history and /proc. */
async function missing() {
  if (!existsSync('/proc/self/stat')) return 'no /proc to read a process CPU time from';
  try {
    await execFileAsync('git', ['rev-parse', '--verify', '--quiet', `${BEFORE}^{commit}`], { cwd: root });
    return undefined;
  } catch {
    return `commit ${BEFORE} is not in this checkout's git history (a shallow clone or a tarball)`;
  }
}

/** User + system CPU of every thread of a process so far, in ms (clock ticks of 10 ms). */
function cpuMsOf(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The old commit's files in a temporary directory, built by its own build script; returns its CLI. */
async function buildBefore(dir, log) {
  log(`gateway-ab: building ${BEFORE} in ${dir}`);
  mkdirSync(dir);
  const archive = spawn('git', ['archive', BEFORE], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const untar = spawn('tar', ['-x', '-C', dir], { stdio: ['pipe', 'ignore', 'inherit'] });
  archive.stdout.pipe(untar.stdin);
  const [a, t] = await Promise.all([archive, untar].map((p) => new Promise((resolve) => p.once('close', resolve))));
  if (a !== 0 || t !== 0) throw new Error(`git archive ${BEFORE} | tar -x exited ${a}/${t}`);
  // Same dependencies on both sides: the redesign is what differs.
  symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
  try {
    await execFileAsync('npm', ['run', 'build'], { cwd: dir, maxBuffer: 64 << 20 });
  } catch (e) {
    throw new Error(`npm run build of ${BEFORE} failed: ${e.stdout ?? ''}${e.stderr ?? e.message}`);
  }
  return path.join(dir, 'dist/src/cli/main.js');
}

/** A gateway process from `main` over HTTP in front of the example server, and an SDK client on it. */
async function startGateway(label, main, storeArgs) {
  const child = spawn(process.execPath, [main, 'gateway', '--quiet', '--http', '0', ...storeArgs, '--', process.execPath, EXAMPLE], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d) => {
    out = (out + d).slice(-4_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const deadline = Date.now() + 60_000;
  let url;
  while (!(url = /MCP endpoint.*?(http:\/\/\S+)/.exec(out)?.[1])) {
    if (Date.now() > deadline || child.exitCode !== null) {
      await stop(child);
      throw new Error(`the gateway (${label}) did not start: ${out}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  try {
    const client = await connect(http(url));
    const probe = await client.callTool(CALL);
    if (probe.isError) throw new Error(`the gateway (${label}) answered an error: ${JSON.stringify(probe.content)}`);
    return { label, child, client };
  } catch (e) {
    await stop(child);
    throw e;
  }
}

/** `total` calls, `concurrency` in flight: the gateway's CPU per call over them, in µs. */
async function window(g, total, concurrency) {
  let next = 0;
  const c0 = cpuMsOf(g.child.pid);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) await g.client.callTool(CALL);
    }),
  );
  return ((cpuMsOf(g.child.pid) - c0) * 1000) / total;
}

/** Interleaved rounds (new old, old new, ...): each round's CPU per call of both and the load average. */
async function rounds(pair, { rounds: n, calls, concurrency }, log) {
  // A whole round's calls each first: the first rounds of run 1 still favoured whichever side was warmer.
  for (const g of pair) await window(g, calls, concurrency);
  const perRound = [];
  for (let r = 0; r < n; r++) {
    const us = [0, 0];
    for (const i of r % 2 === 0 ? [0, 1] : [1, 0]) us[i] = await window(pair[i], calls, concurrency);
    perRound.push({ newUs: us[0], oldUs: us[1], ratio: us[0] / us[1], load: loadavg()[0] });
    log(`gateway-ab: round ${r + 1}: ${us[0].toFixed(0)} / ${us[1].toFixed(0)} µs, ${(us[0] / us[1]).toFixed(3)}x, load ${loadavg()[0].toFixed(1)}`);
  }
  return perRound;
}

function row(ctx, label, perRound, opts) {
  const ratio = ctx.median(perRound.map((p) => p.ratio));
  const newUs = ctx.median(perRound.map((p) => p.newUs));
  const oldUs = ctx.median(perRound.map((p) => p.oldUs));
  const loads = perRound.map((p) => p.load);
  return {
    group: GROUP,
    name: `HTTP, ${label}: gateway CPU per call, ${opts.concurrency} in flight`,
    value: Math.round(newUs),
    unit: 'µs',
    anchor: `the build before the redesign (${BEFORE}), same run`,
    anchorValue: Math.round(oldUs),
    ratio: Number(ratio.toFixed(3)),
    goal: `<= ${GOAL}x (median of the per-round ratios)`,
    pass: ratio <= GOAL,
    note:
      `${perRound.length} interleaved rounds of ${opts.calls} calls a side (values are the medians of the rounds); per-round ratios ` +
      `${perRound.map((p) => p.ratio.toFixed(3)).join(' / ')}; load average per round ${loads.map((l) => l.toFixed(1)).join(' / ')} ` +
      `on ${cpus().length} cores; CPU is user + system time of every thread from /proc; an SDK v1 client over Streamable HTTP (2025-11-25 session), ` +
      'the upstream the example server over stdio, `add` calls',
  };
}

/** @param {{ quick: boolean, log: (msg: string) => void, median: (xs: number[]) => number }} ctx */
export async function run(ctx) {
  const { log } = ctx;
  const why = await missing();
  if (why !== undefined) {
    log(`gateway-ab skipped: ${why}`);
    return [];
  }
  const opts = { rounds: ctx.quick ? 2 : 10, calls: ctx.quick ? 500 : 2_000, concurrency: 32 };
  const dir = mkdtempSync(path.join(tmpdir(), 'te-bench-ab-'));
  const out = [];
  try {
    const oldMain = await buildBefore(path.join(dir, 'before'), log);
    const newMain = path.join(root, 'dist/src/cli/main.js');
    const configs = [
      ['no store', () => ['--no-store']],
      ['SQLite audit log', (side) => ['--store', path.join(dir, `${side}.db`)]],
    ];
    for (const [label, storeArgs] of configs) {
      const started = await Promise.allSettled([startGateway('new', newMain, storeArgs('new')), startGateway('old', oldMain, storeArgs('old'))]);
      const pair = started.filter((s) => s.status === 'fulfilled').map((s) => s.value);
      try {
        const failed = started.find((s) => s.status === 'rejected');
        if (failed !== undefined) throw failed.reason;
        log(`gateway-ab: ${label}, ${opts.rounds} rounds`);
        out.push(row(ctx, label, await rounds(pair, opts, log), opts));
      } finally {
        await Promise.allSettled(pair.map((g) => g.client.close()));
        await Promise.allSettled(pair.map((g) => stop(g.child)));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}
