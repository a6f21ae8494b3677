// The hand-written pieces of src/mcp against their plain references, A/B in one run (the rule for
// speed tricks, bench/README.md): `NodeSessionTransport` (src/mcp/serve/http-session.ts, the gateway's
// 2025-era Streamable HTTP sessions) against the SDK's `NodeStreamableHTTPServerTransport`. The pair
// is two gateway processes started from the built CLI, alike but for the switch that selects the
// reference (`--import` of a module that calls `useReferenceSessionTransport(true)`), in front of the
// same example server, driven by the same SDK client over Streamable HTTP with a 2025-11-25 session,
// measured in alternating rounds (A B, then B A). (Two other pieces were measured the same way and
// removed because they did not pay: `coalesceResponse`, and the fast wire of `ChildProcessTransport`,
// whose pair was a client over stdio in front of the gateway's child-process upstream; see
// bench/README.md.) The figures that decide are CPU per call (user + system from /proc) of the
// gateway process and of this process (the client): on a shared machine they move far less with the
// load than latency does. Runs alone after `npm run build`: `node --expose-gc bench/run.mjs --only seams`.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { perRequestSignalFetch } from '../dist/src/mcp/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MAIN = path.join(root, 'dist/src/cli/main.js');
const EXAMPLE = path.join(root, 'dist/examples/example-server.js');
const GROUP = 'seams: hand-written MCP pieces vs their plain references (A/B)';
const CALL = { name: 'add', arguments: { a: 1, b: 2 } };

/** `--import` of a module that turns one reference on before the CLI runs (the same module instance the CLI then imports). */
function referenceImport(file, fn) {
  const url = pathToFileURL(path.join(root, 'dist/src/mcp', file)).href;
  return `--import=data:text/javascript,${encodeURIComponent(`import { ${fn} } from ${JSON.stringify(url)}; ${fn}(true);`)}`;
}

/** User + system CPU of a process so far, in ms (clock ticks of 10 ms), from /proc. */
function cpuMsOf(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function ownCpuMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

async function connect(transport) {
  const client = new Client({ name: 'bench-seams', version: '1' });
  await client.connect(transport);
  return client;
}

/** Waits until the process has exited and its pipes are closed. */
async function gone(pid) {
  for (let i = 0; i < 250 && alive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  // The pipes' handles close a moment after the process is gone.
  await new Promise((resolve) => setTimeout(resolve, 100));
}

/** The A and B contenders of the HTTP session trick: the gateway over Streamable HTTP, a 2025-11-25 session each. */
async function httpContenders() {
  const open = async (label, nodeArgs) => {
    const child = spawn(process.execPath, [...nodeArgs, MAIN, 'gateway', '--quiet', '--no-store', '--http', '0', '--', process.execPath, EXAMPLE], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d.toString()));
    const deadline = Date.now() + 30_000;
    let url;
    while (!(url = /MCP endpoint.*?(http:\/\/\S+)/.exec(out)?.[1])) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the gateway (${label}) did not start: ${out}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Made like every HTTP client of the bench (gateway.bench.mjs): with the SDK's default fetch, each
    // request adds an abort listener to the transport's one signal, thousands per round.
    const client = await connect(new StreamableHTTPClientTransport(new URL(url), { fetch: perRequestSignalFetch() }));
    const stop = async () => {
      child.kill('SIGTERM');
      await gone(child.pid);
      child.stdout.destroy();
    };
    return { label, client, pid: child.pid, stop };
  };
  return [
    await open('native session transport', []),
    await open("SDK's NodeStreamableHTTPServerTransport", [referenceImport('serve/http.js', 'useReferenceSessionTransport')]),
  ];
}

/** `total` calls, `concurrency` in flight: each call's latency, the CPU of the gateway and of this process. */
async function window(c, total, concurrency) {
  const times = [];
  let next = 0;
  const g0 = cpuMsOf(c.pid);
  const o0 = ownCpuMs();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) {
        const t0 = process.hrtime.bigint();
        await c.client.callTool(CALL);
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  return { times, gatewayMs: cpuMsOf(c.pid) - g0, clientMs: ownCpuMs() - o0 };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Alternating rounds of a sequential and a concurrent window per contender. */
async function measure(pair, { rounds, sequential, concurrent, concurrency }) {
  for (const c of pair) {
    await window(c, 200, 1);
    await window(c, 500, concurrency);
  }
  const stats = pair.map(() => ({ latency: [], conLatency: [], seqGatewayMs: 0, conGatewayMs: 0, conClientMs: 0 }));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) {
      const s = await window(pair[i], sequential, 1);
      stats[i].latency.push(median(s.times));
      stats[i].seqGatewayMs += s.gatewayMs;
      const k = await window(pair[i], concurrent, concurrency);
      stats[i].conLatency.push(median(k.times));
      stats[i].conGatewayMs += k.gatewayMs;
      stats[i].conClientMs += k.clientMs;
    }
  }
  return stats.map((s) => ({
    latencyMs: median(s.latency),
    conLatencyMs: median(s.conLatency),
    seqGatewayUs: (s.seqGatewayMs * 1000) / (rounds * sequential),
    conGatewayUs: (s.conGatewayMs * 1000) / (rounds * concurrent),
    conClientUs: (s.conClientMs * 1000) / (rounds * concurrent),
  }));
}

function rowsFor(trick, transport, pair, [a, b], opts, load) {
  const note = `${opts.rounds} rounds per side, alternating; ${transport}; CPU is user + system time from /proc; ${load}`;
  // The goal is on the row the trick is named for; the others show where else it does or does not move.
  const row = (what, unit, va, vb, digits, decides) => ({
    group: GROUP,
    name: `${trick}: ${pair[0].label}, ${what}`,
    value: Number(va.toFixed(digits)),
    unit,
    anchor: `${pair[1].label} (the reference), same run`,
    anchorValue: Number(vb.toFixed(digits)),
    ratio: Number((va / vb).toFixed(2)),
    ...(decides ? { goal: '< 1.00x (the trick pays)', pass: va < vb } : {}),
    note: decides ? note : `no goal: ${note}`,
  });
  return [
    row(`gateway CPU per call, ${opts.concurrency} in flight`, 'µs', a.conGatewayUs, b.conGatewayUs, 0, true),
    row('gateway CPU per call, one at a time', 'µs', a.seqGatewayUs, b.seqGatewayUs, 0, false),
    row(`client CPU per call, ${opts.concurrency} in flight`, 'µs', a.conClientUs, b.conClientUs, 0, false),
    row('median latency per call, one at a time', 'ms', a.latencyMs, b.latencyMs, 3, false),
    row(`median latency per call, ${opts.concurrency} in flight`, 'ms', a.conLatencyMs, b.conLatencyMs, 3, false),
  ];
}

/** @param {{ quick?: boolean, log?: (msg: string) => void }} [ctx] */
export async function run(ctx = {}) {
  const quick = ctx.quick === true;
  const opts = { rounds: quick ? 2 : 8, sequential: quick ? 200 : 600, concurrent: quick ? 500 : 2_000, concurrency: 32 };
  const out = [];
  const tricks = [['NodeSessionTransport', 'an SDK v1 client over Streamable HTTP (a 2025-11-25 session), the upstream a child process', httpContenders]];
  for (const [trick, transport, contenders] of tricks) {
    const pair = await contenders();
    try {
      const before = loadavg()[0];
      ctx.log?.(`seams: ${trick} A/B`);
      const result = await measure(pair, opts);
      const load = `load average ${before.toFixed(1)} before, ${loadavg()[0].toFixed(1)} after, on ${cpus().length} cores`;
      out.push(...rowsFor(trick, transport, pair, result, opts, load));
    } finally {
      await Promise.allSettled(pair.map((c) => c.client.close()));
      await Promise.allSettled(pair.map((c) => c.stop()));
    }
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.table(await run({ quick: process.argv.includes('--quick'), log: console.error }));
}
