// Gateway overhead: the same upstream reached directly and through the tool-envelope gateway,
// in the same run, over stdio and over Streamable HTTP. Measures the throughput ratio (goal
// >= 0.9x), the added median latency per call (goal <= 0.3 ms) and the gateway's heap over
// 10 000 calls. Loaded by bench/run.mjs (`npm run bench`); also runnable alone after
// `npm run build`: `node --expose-gc bench/gateway.bench.mjs [--quick]`.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as V2Client, StreamableHTTPClientTransport as V2StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Gateway, GatewayGovernance, perRequestSignalFetch } from '../dist/src/mcp/index.js';
import { openStore } from '../dist/src/store/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MAIN = path.join(root, 'dist/src/cli/main.js');
const EXAMPLE = path.join(root, 'dist/examples/example-server.js');
const EVERYTHING = path.join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
// A v2 SDK server that serves both eras over Streamable HTTP (createMcpHandler), for the 2026-07-28 rows.
const MODERN_SERVER = path.join(root, 'src/mcp/test-support/modern-server.mjs');
const MODERN = '2026-07-28';

const LATENCY_GOAL_MS = 0.3;
// A process that only copies bytes between the client and the upstream: the cost of one more stdio
// hop on this machine (two pipe writes, two reads, two wake-ups), which no stdio gateway can undercut.
const RELAY = `const { spawn } = require('node:child_process');
const child = spawn(process.argv[1], process.argv.slice(2), { stdio: ['pipe', 'pipe', 'inherit'] });
process.stdin.pipe(child.stdin); child.stdout.pipe(process.stdout); child.on('exit', () => process.exit(0));`;
const THROUGHPUT_GOAL = 0.9;
// The HTTP counterpart: a reverse proxy that streams each request and answer through unchanged
// (keep-alive to the upstream), the cost of one more HTTP hop, which no HTTP gateway can undercut.
const HTTP_RELAY = `const http = require('node:http');
const target = new URL(process.argv[1]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const server = http.createServer((req, res) => {
  const up = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers, agent }, (r) => {
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
  });
  up.on('error', () => res.destroy());
  res.on('close', () => up.destroy());
  req.pipe(up);
});
server.listen(0, '127.0.0.1', () => console.log('listening ' + server.address().port));`;

/**
 * CPU time (user + system, all threads) a process has used so far, in ms, or undefined where
 * /proc is not there. Throughput on a shared 2-core machine moves with everyone else's load; the
 * CPU the middle process spends per call is what decides how much of the machine it takes.
 */
export function cpuMsOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime and stime, in clock ticks (USER_HZ, 100 on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export async function connect(transport) {
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(transport);
  return client;
}

function stdio(command, args) {
  return new StdioClientTransport({ command, args, stderr: 'ignore' });
}

/** Median per-call ms of `calls` sequential calls. */
export async function latency(client, call, calls) {
  const times = [];
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint();
    await client.callTool(call);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(times);
}

/** Calls per second with `concurrency` calls in flight, `total` calls. */
async function throughput(client, call, total, concurrency) {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) await client.callTool(call);
    }),
  );
  return total / (Number(process.hrtime.bigint() - t0) / 1e9);
}

/** Interleaved rounds so drift of the shared machine hits both sides alike. */
async function compare(direct, viaGateway, call, { rounds, latencyCalls, throughputCalls, concurrency }, middlePid) {
  for (let i = 0; i < 2; i++) {
    await latency(direct, call, 50);
    await latency(viaGateway, call, 50);
  }
  const lat = { direct: [], gateway: [], added: [] };
  const thr = { direct: [], gateway: [] };
  const cpu = { sequentialMs: 0, sequentialCalls: 0, concurrentMs: 0, concurrentCalls: 0 };
  for (let r = 0; r < rounds; r++) {
    const d = await latency(direct, call, latencyCalls);
    const c0 = cpuMsOf(middlePid);
    const g = await latency(viaGateway, call, latencyCalls);
    const c1 = cpuMsOf(middlePid);
    lat.direct.push(d);
    lat.gateway.push(g);
    lat.added.push(g - d);
    thr.direct.push(await throughput(direct, call, throughputCalls, concurrency));
    const c2 = cpuMsOf(middlePid);
    thr.gateway.push(await throughput(viaGateway, call, throughputCalls, concurrency));
    const c3 = cpuMsOf(middlePid);
    if (c0 !== undefined && c3 !== undefined) {
      cpu.sequentialMs += c1 - c0;
      cpu.sequentialCalls += latencyCalls;
      cpu.concurrentMs += c3 - c2;
      cpu.concurrentCalls += throughputCalls;
    }
  }
  return {
    cpuUsSequential: cpu.sequentialCalls > 0 ? (cpu.sequentialMs * 1000) / cpu.sequentialCalls : undefined,
    cpuUsConcurrent: cpu.concurrentCalls > 0 ? (cpu.concurrentMs * 1000) / cpu.concurrentCalls : undefined,
    directMs: median(lat.direct),
    gatewayMs: median(lat.gateway),
    addedMs: median(lat.added),
    directRate: median(thr.direct),
    gatewayRate: median(thr.gateway),
  };
}

function rows(group, label, r, concurrency) {
  const ratio = r.gatewayRate / r.directRate;
  const cpu =
    r.cpuUsConcurrent === undefined
      ? []
      : [
          {
            group,
            name: `${label}: CPU of the middle process per call (all threads), ${concurrency} in flight`,
            value: Math.round(r.cpuUsConcurrent),
            unit: 'µs',
            anchor: 'same, calls one at a time',
            anchorValue: Math.round(r.cpuUsSequential),
            note: 'user + system time from /proc over every measured round; no goal, it says how much of the 2 cores the extra process takes',
          },
        ];
  return [
    {
      group,
      name: `${label}: added median latency per call`,
      value: Number(r.addedMs.toFixed(3)),
      unit: 'ms',
      anchor: 'direct connection, median latency',
      anchorValue: Number(r.directMs.toFixed(3)),
      ratio: Number((r.gatewayMs / r.directMs).toFixed(2)),
      goal: `<= ${LATENCY_GOAL_MS} ms`,
      pass: r.addedMs <= LATENCY_GOAL_MS,
    },
    {
      group,
      name: `${label}: throughput, ${concurrency} calls in flight`,
      value: Math.round(r.gatewayRate),
      unit: 'calls/s',
      anchor: 'direct connection',
      anchorValue: Math.round(r.directRate),
      ratio: Number(ratio.toFixed(2)),
      goal: `>= ${THROUGHPUT_GOAL}x`,
      pass: ratio >= THROUGHPUT_GOAL,
    },
    ...cpu,
  ];
}

/** A reference row: same measurement, but not a goal of the gateway. */
function floor(row) {
  const { goal: _g, pass: _p, ...rest } = row;
  return { ...rest, note: row.note ?? 'byte relay: a process that copies stdin/stdout without parsing; measured in the same run' };
}

/** Stops a child and waits until it is gone, so that no pipe or process handle outlives the bench. */
export async function stop(child) {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
  for (const s of [child.stdin, child.stdout, child.stderr]) s?.destroy();
}

/** An SDK client over Streamable HTTP; every HTTP client of the bench is made the same way. */
export function http(url) {
  return new StreamableHTTPClientTransport(new URL(url), { fetch: perRequestSignalFetch() });
}

/**
 * The SDK v2 client pinned to 2026-07-28 over Streamable HTTP (per-request `_meta`, no session),
 * made like every other HTTP client of the bench; refuses to measure if the era is not the modern one.
 */
async function connectModern(url) {
  const client = new V2Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(new V2StreamableHTTPClientTransport(new URL(url), { fetch: perRequestSignalFetch() }));
  const version = client.getNegotiatedProtocolVersion();
  if (version !== MODERN) throw new Error(`${url}: the v2 client negotiated ${version}, not ${MODERN}`);
  return client;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export async function startEverythingHttp() {
  const port = await freePort();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
      if (/listening/i.test(err)) resolve({ child, url: `http://127.0.0.1:${port}/mcp` });
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${err}`)));
  });
}

function startModernHttp() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MODERN_SERVER, '--http', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /(http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.once('exit', (code) => reject(new Error(`modern test server exited (${code})`)));
  });
}

function startHttpRelay(targetUrl) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', HTTP_RELAY, targetUrl], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (m) resolve({ child, url: `http://127.0.0.1:${m[1]}${new URL(targetUrl).pathname}` });
    });
    child.once('exit', (code) => reject(new Error(`HTTP relay exited (${code})`)));
  });
}

export function startGatewayHttp(args) {
  return new Promise((resolve, reject) => {
    // stderr is read (and kept for the error) so that a chatty gateway never blocks on a full pipe.
    const child = spawn(process.execPath, [MAIN, 'gateway', '--quiet', '--http', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stderr.on('data', (d) => {
      out = (out + d).slice(-4_000);
    });
    child.stdout.on('data', (d) => {
      out += d;
      const m = /MCP endpoint.*(http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.once('exit', (code) => reject(new Error(`gateway exited (${code}): ${out}`)));
  });
}

// Peer proxies: programs that also put a stdio MCP server on Streamable HTTP, each started as its
// users start it (its bin, by node, so /proc/PID is the middle process itself), in front of the same
// stdio upstream, driven by the same SDK client. They only relay; the gateway also wraps, governs
// and logs. Goals: its CPU per call <= 0.8x the leanest peer's, its median latency <= the fastest's.
const PEER_CPU_GOAL = 0.8;
const SUPERGATEWAY = path.join(root, 'node_modules/supergateway/dist/index.js');
const MCP_PROXY = path.join(root, 'node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs');
const versionOf = (pkg) => JSON.parse(readFileSync(path.join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version;

/** The contenders of the peer block: a label and the command line that serves `upstream` on `port`. */
function peerContenders(upstream, store) {
  const quoted = upstream.map((a) => JSON.stringify(a)).join(' ');
  return [
    {
      label: 'tool-envelope gateway (MCEC envelopes, SQLite audit log)',
      gateway: true,
      args: (port) => [MAIN, 'gateway', '--quiet', '--http', String(port), '--store', store, '--', ...upstream],
    },
    {
      label: `supergateway ${versionOf('supergateway')} (--stateful)`,
      args: (port) => [SUPERGATEWAY, '--stdio', quoted, '--outputTransport', 'streamableHttp', '--stateful', '--port', String(port), '--logLevel', 'none'],
    },
    {
      label: `mcp-proxy ${versionOf('mcp-proxy')} (--server stream)`,
      args: (port) => [MCP_PROXY, '--port', String(port), '--host', '127.0.0.1', '--server', 'stream', '--', ...upstream],
    },
  ];
}

/** Starts a middle process on a free port and connects the bench's HTTP client once it answers. */
async function startPeer(contender) {
  const port = await freePort();
  const child = spawn(process.execPath, contender.args(port), { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => {
    err = (err + d).slice(-4_000);
  });
  const url = `http://127.0.0.1:${port}/mcp`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return { ...contender, child, client: await connect(http(url)) };
    } catch (e) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${contender.label} did not start (${e}): ${err}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * CPU time (user + system) of a process's main thread (the one whose id is the pid) so far, in ms, or
 * undefined where /proc is not there: what the rest of the process's time is not (worker threads such as
 * an audit writer, V8's GC and compiler threads).
 */
function mainThreadCpuMsOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** `total` calls with `concurrency` in flight through a contender: each call's latency, and the CPU `pid` (and its main thread) spent over the window. */
async function underLoad({ client, label }, call, total, concurrency, pid) {
  const times = [];
  let next = 0;
  const m0 = pid === undefined ? undefined : mainThreadCpuMsOf(pid);
  const c0 = pid === undefined ? undefined : cpuMsOf(pid);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) {
        const t0 = process.hrtime.bigint();
        await client.callTool(call).catch((e) => {
          throw new Error(`${label}: call ${times.length + 1} of ${total} failed: ${e.message}${e.cause ? ` (${e.cause.message ?? e.cause})` : ''}`, {
            cause: e,
          });
        });
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  const c1 = pid === undefined ? undefined : cpuMsOf(pid);
  const m1 = pid === undefined ? undefined : mainThreadCpuMsOf(pid);
  return { times, cpuMs: c0 === undefined || c1 === undefined ? undefined : c1 - c0, mainMs: m0 === undefined || m1 === undefined ? undefined : m1 - m0 };
}

async function peerRows({ rounds, throughputCalls, concurrency }, store) {
  const group = 'gateway (peer proxies, http)';
  const call = { name: 'add', arguments: { a: 1, b: 2 } };
  const upstream = [process.execPath, EXAMPLE];
  const loadBefore = loadavg()[0];
  const started = await Promise.allSettled(peerContenders(upstream, store).map(startPeer));
  const contenders = started.filter((s) => s.status === 'fulfilled').map((s) => s.value);
  const failed = started.find((s) => s.status === 'rejected');
  if (failed !== undefined) {
    await Promise.allSettled(contenders.map((c) => c.client.close().finally(() => stop(c.child))));
    throw failed.reason;
  }
  // The floor: the same client and calls on a direct stdio connection, no middle process.
  const direct = { label: 'direct stdio connection (no middle process)', client: await connect(stdio(upstream[0], upstream.slice(1))) };
  const all = [direct, ...contenders];
  try {
    for (const c of all) await underLoad(c, call, throughputCalls, concurrency);
    const stats = new Map(all.map((c) => [c, { medians: [], cpuMs: 0, mainMs: 0, calls: 0 }]));
    for (let r = 0; r < rounds; r++) {
      // A different order each round, so the machine's drift does not favour whoever goes first.
      for (let i = 0; i < all.length; i++) {
        const c = all[(i + r) % all.length];
        const m = await underLoad(c, call, throughputCalls, concurrency, c.child?.pid);
        const s = stats.get(c);
        s.medians.push(median(m.times));
        if (m.cpuMs !== undefined && m.mainMs !== undefined) {
          s.cpuMs += m.cpuMs;
          s.mainMs += m.mainMs;
          s.calls += throughputCalls;
        }
      }
    }
    const result = (c) => {
      const s = stats.get(c);
      return {
        latencyMs: median(s.medians),
        cpuUs: s.calls > 0 ? (s.cpuMs * 1000) / s.calls : undefined,
        mainUs: s.calls > 0 ? (s.mainMs * 1000) / s.calls : undefined,
      };
    };
    const peers = contenders.filter((c) => !c.gateway);
    const leanest = peers.reduce((a, b) => ((result(b).cpuUs ?? Infinity) < (result(a).cpuUs ?? Infinity) ? b : a));
    const fastest = peers.reduce((a, b) => (result(b).latencyMs < result(a).latencyMs ? b : a));
    const load = `load average ${loadBefore.toFixed(1)} before the block, ${loadavg()[0].toFixed(1)} after, on ${cpus().length} cores`;
    const out = [];
    for (const c of all) {
      const { latencyMs, cpuUs, mainUs } = result(c);
      const reference = c.gateway
        ? { note: `${rounds} rounds of ${throughputCalls} calls per contender, in a rotating order; CPU is user + system time from /proc; ${load}` }
        : { note: 'reference: measured in the same run, no goal' };
      if (c.child !== undefined && cpuUs !== undefined) {
        // Where the process's time went: its main thread, and every other thread (audit writer, checkpointer, V8's GC and compiler threads).
        const split = `main thread ${Math.round(mainUs)} µs per call, other threads ${Math.round(cpuUs - mainUs)} µs`;
        const ratio = cpuUs / result(leanest).cpuUs;
        out.push({
          group,
          name: `${c.label}: CPU of the middle process per call, ${concurrency} in flight`,
          value: Math.round(cpuUs),
          unit: 'µs',
          ...(c.gateway ? { anchor: `leanest peer: ${leanest.label}`, anchorValue: Math.round(result(leanest).cpuUs), ratio: Number(ratio.toFixed(2)) } : {}),
          ...(c.gateway ? { goal: `<= ${PEER_CPU_GOAL}x`, pass: ratio <= PEER_CPU_GOAL } : {}),
          note: `${reference.note}; ${split}`,
        });
      }
      out.push({
        group,
        name: `${c.label}: median latency per call, ${concurrency} in flight`,
        value: Number(latencyMs.toFixed(3)),
        unit: 'ms',
        ...(c.gateway
          ? {
              anchor: `fastest peer: ${fastest.label}`,
              anchorValue: Number(result(fastest).latencyMs.toFixed(3)),
              ratio: Number((latencyMs / result(fastest).latencyMs).toFixed(2)),
              goal: '<= 1.00x',
              pass: latencyMs <= result(fastest).latencyMs,
              ...reference,
            }
          : c === direct
            ? { note: 'floor: the same client and calls over stdio straight to the upstream; measured in the same run' }
            : reference),
      });
    }
    return out;
  } finally {
    await Promise.allSettled(all.map((c) => c.client.close()));
    await Promise.allSettled(contenders.map((c) => stop(c.child)));
  }
}

/** @param {{ quick?: boolean }} [ctx] */
export async function run(ctx = {}) {
  const quick = ctx.quick === true;
  const opts = { rounds: quick ? 3 : 7, latencyCalls: quick ? 200 : 1_000, throughputCalls: quick ? 500 : 2_000, concurrency: 32 };
  const out = [];
  const dir = mkdtempSync(path.join(tmpdir(), 'te-bench-'));

  // stdio: client -> example server, vs client -> gateway process -> example server.
  const addCall = { name: 'add', arguments: { a: 1, b: 2 } };
  {
    const direct = await connect(stdio(process.execPath, [EXAMPLE]));
    const relayTransport = stdio(process.execPath, ['-e', RELAY, process.execPath, EXAMPLE]);
    const viaRelay = await connect(relayTransport);
    const gatewayTransport = stdio(process.execPath, [MAIN, 'gateway', '--quiet', '--no-store', '--', process.execPath, EXAMPLE]);
    const viaGateway = await connect(gatewayTransport);
    const storeTransport = stdio(process.execPath, [MAIN, 'gateway', '--quiet', '--store', path.join(dir, 'stdio.db'), '--', process.execPath, EXAMPLE]);
    const viaGatewayStore = await connect(storeTransport);
    try {
      out.push(
        ...rows(
          'gateway (stdio)',
          'stdio, byte relay (floor of any extra stdio hop, no goal)',
          await compare(direct, viaRelay, addCall, opts, relayTransport.pid),
          opts.concurrency,
        ).map(floor),
      );
      out.push(
        ...rows(
          'gateway (stdio)',
          'stdio, no store (policy, idempotency in memory)',
          await compare(direct, viaGateway, addCall, opts, gatewayTransport.pid),
          opts.concurrency,
        ),
      );
      out.push(
        ...rows('gateway (stdio)', 'stdio, SQLite audit log', await compare(direct, viaGatewayStore, addCall, opts, storeTransport.pid), opts.concurrency),
      );
    } finally {
      await Promise.allSettled([direct.close(), viaRelay.close(), viaGateway.close(), viaGatewayStore.close()]);
    }
  }

  // Streamable HTTP: client -> server-everything over HTTP, vs client -> gateway (HTTP) -> server-everything (HTTP).
  {
    const upstream = await startEverythingHttp();
    const relay = await startHttpRelay(upstream.url);
    const gateway = await startGatewayHttp(['--no-store', '--url', upstream.url]);
    const echo = { name: 'echo', arguments: { message: 'bench' } };
    const direct = await connect(http(upstream.url));
    const viaRelay = await connect(http(relay.url));
    const viaGateway = await connect(http(gateway.url));
    try {
      const floorNote = 'HTTP relay: a reverse proxy that streams requests and answers through unchanged; measured in the same run';
      out.push(
        ...rows(
          'gateway (http)',
          'HTTP, relay (floor of any extra HTTP hop, no goal)',
          await compare(direct, viaRelay, echo, opts, relay.child.pid),
          opts.concurrency,
        ).map((r) => floor({ ...r, note: r.note ?? floorNote })),
      );
      out.push(...rows('gateway (http)', 'HTTP, no store', await compare(direct, viaGateway, echo, opts, gateway.child.pid), opts.concurrency));
    } finally {
      await Promise.allSettled([direct.close(), viaRelay.close(), viaGateway.close()]);
      await Promise.allSettled([stop(gateway.child), stop(relay.child), stop(upstream.child)]);
    }
  }

  // The same rows for the modern era, beside the 2025-era ones above (a v1 client with 2025-11-25
  // sessions): the SDK v2 client pinned to 2026-07-28 -> a v2 server serving both eras
  // (createMcpHandler: a fresh server per request), directly, through the HTTP relay, and through the
  // gateway (modern on both hops: it serves the request on createMcpHandler and negotiates 2026-07-28
  // with the upstream).
  {
    const upstream = await startModernHttp();
    const relay = await startHttpRelay(upstream.url);
    const gateway = await startGatewayHttp(['--no-store', '--url', upstream.url]);
    const echo = { name: 'echo', arguments: { text: 'bench' } };
    const direct = await connectModern(upstream.url);
    const viaRelay = await connectModern(relay.url);
    const viaGateway = await connectModern(gateway.url);
    try {
      const era = `${MODERN} client`;
      const note = `SDK v2 client pinned to ${MODERN} (no session) in front of a v2 createMcpHandler server; the 2025-era rows are "HTTP, relay" and "HTTP, no store"`;
      out.push(
        ...rows(
          'gateway (http)',
          `HTTP, ${era}, relay (floor of any extra HTTP hop, no goal)`,
          await compare(direct, viaRelay, echo, opts, relay.child.pid),
          opts.concurrency,
        ).map((r) => floor({ ...r, note: r.note ?? `HTTP relay, ${note}` })),
      );
      out.push(
        ...rows('gateway (http)', `HTTP, ${era}, no store`, await compare(direct, viaGateway, echo, opts, gateway.child.pid), opts.concurrency).map((r) => ({
          ...r,
          note: r.note ?? note,
        })),
      );
    } finally {
      await Promise.allSettled([direct.close(), viaRelay.close(), viaGateway.close()]);
      await Promise.allSettled([stop(gateway.child), stop(relay.child), stop(upstream.child)]);
    }
  }

  out.push(...(await peerRows(opts, path.join(dir, 'peers.db'))));

  // Memory: the gateway in this process (SQLite audit log on), heap before and after 10 000 calls.
  {
    const store = await openStore(path.join(dir, 'memory.db'));
    const governance = new GatewayGovernance({ store });
    const gw = await Gateway.start({ upstreams: [{ name: 'example', command: process.execPath, args: [EXAMPLE] }], governance, log: () => {} });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await gw.createServer().connect(b);
    const client = await connect(a);
    const calls = 10_000;
    const batch = async (n) => {
      for (let i = 0; i < n; i += 50) await Promise.all(Array.from({ length: 50 }, () => client.callTool(addCall)));
    };
    await batch(1_000);
    await governance.flush();
    globalThis.gc?.();
    const before = process.memoryUsage().heapUsed;
    await batch(calls);
    await governance.flush();
    globalThis.gc?.();
    const after = process.memoryUsage().heapUsed;
    const grownMb = (after - before) / 1024 / 1024;
    out.push({
      group: 'gateway (memory)',
      name: `heap growth over ${calls} calls (gateway + client in process, governance, SQLite audit log${globalThis.gc ? '' : ', no --expose-gc'})`,
      value: Number(grownMb.toFixed(2)),
      unit: 'MB',
      anchor: 'heap before',
      anchorValue: Number((before / 1024 / 1024).toFixed(1)),
      goal: '<= 2 MB (flat)',
      pass: grownMb <= 2,
    });
    const written = await store.countAudit();
    if (written < calls + 1_000) throw new Error(`only ${written} audit records written`);
    await client.close();
    await gw.close();
    await store.close();
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.table(await run({ quick: process.argv.includes('--quick') }));
}
