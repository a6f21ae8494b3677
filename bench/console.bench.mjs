// Console benchmarks (#42, performance): with 1,000,000 audit records in SQLite and in PostgreSQL,
// the time to answer the first page of the audit list and of the approvals inbox (goal < 300 ms)
// and the stats page with its charts over its default window, the last hour (goal < 1 s; over 24 h
// without a goal: the grouped scan grows with the records in the window), over HTTP from a console on loopback, as an
// admin (every tenant) and as a viewer of one tenant (the tenant in the store's query). The records
// are written through the store's own batch path (appendAudit, 5,000 a transaction), spread evenly
// over the last 23 hours. --quick: 20,000 records.
// The stats read the audit rollup (src/store/audit-rollup.ts), which the console's catch-up keeps
// current off the write path: after the fill the bench runs that catch-up to the end, as a console
// serving the store would have while the records came, and reports its time as a row of its own;
// then the histogram with a backlog above the rollup's mark (records the catch-up has not folded yet).
// TOOL_ENVELOPE_BENCH_CONSOLE_PAGES=stats measures the stats rows only.
// Also runnable alone after the incremental build: `node bench/console.bench.mjs [--quick]`.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:http';
import { createConsole } from '../dist/src/console/console.js';
import { isAuthFailure, tokenAuthenticator, tokenDigest } from '../dist/src/mcp/serve/auth.js';
import { newAuditId } from '../dist/src/store/index.js';
import { openPostgresStore } from '../dist/src/store/postgres/index.js';
import { openSqliteStore } from '../dist/src/store/sqlite/index.js';
import { benchPostgres, pgNotMeasured } from '../test/pg-server.mjs';

const GROUP = 'console: pages over 1,000,000 audit records';
const TOOLS = Array.from({ length: 24 }, (_, i) => `svc${i % 6}.${['read', 'write', 'list', 'delete'][i % 4]}_${i}`);
const TENANTS = ['acme', 'globex', 'initech'];
const CATEGORIES = ['timeout', 'internal', 'invalid-argument', 'no-target'];

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The n-th record: ~1 KB of JSON, as a governed call writes it (the chain in the call envelope). */
function record(n, t0, span, total) {
  const startedAt = t0 + Math.floor((n / total) * span) + (n % 1000);
  const fail = n % 12 === 0;
  const tool = TOOLS[(n * 7) % TOOLS.length];
  const id = randomUUID();
  const chain = [
    { kind: 'user', id: `u-${n % 300}`, tenant_id: TENANTS[n % 3] },
    { kind: 'agent', id: 'planner-7', tenant_id: TENANTS[n % 3] },
  ];
  const latencyMs = 1 + ((n * 2654435761) % 997) / (n % 50 === 0 ? 1 : 20);
  return {
    id: newAuditId(),
    tool,
    status: fail ? 'error' : 'ok',
    category: fail ? CATEGORIES[((n / 12) % 4) | 0] : null,
    errorCode: fail ? 'deadline-exceeded' : null,
    toolCallId: id,
    runId: `run-${n % 1000}`,
    traceId: '0af7651916cd43dd8448eb211c80319c',
    sessionId: `sess-${n % 5000}`,
    startedAt,
    endedAt: startedAt + Math.round(latencyMs),
    latencyMs,
    callEnvelope: {
      envelope_version: 'contextos.tool_call.v1',
      tool_call_id: id,
      run_id: `run-${n % 1000}`,
      capability_id: tool,
      args: { path: `/srv/data/file-${n}.txt`, text: 'hello world '.repeat(8) },
      principal_chain: chain,
      approval_mode_requested: 'local_write',
      approval_mode_effective: 'local_write',
      policy_decision_id: `pd_${n}`,
    },
    resultEnvelope: {
      envelope_version: 'contextos.tool_result.v1',
      tool_call_id: id,
      capability_id: tool,
      status: fail ? 'error' : 'ok',
      output: { bytes: 96 },
    },
    outcome: fail
      ? { status: 'error', error: { category: 'timeout', code: 'deadline-exceeded', message: 'took too long' } }
      : { status: 'ok', result: { bytes: 96 } },
    principalChain: chain,
    policyDecision: { id: `pd_${n}`, effect: 'allow', effectiveMode: 'local_write', reason: 'local_write: allow with audit' },
    idempotencyKey: null,
    replay: false,
    approvalId: null,
  };
}

function approval(n, now) {
  const chain = [{ kind: 'user', id: `u-${n}`, tenant_id: TENANTS[n % 3] }];
  return {
    id: `apr_bench_${n}_${randomUUID()}`,
    state: 'pending',
    tool: 'warehouse_purge',
    toolCallId: randomUUID(),
    runId: 'run-bench',
    sessionId: `sess-${n}`,
    callEnvelope: { envelope_version: 'contextos.tool_call.v1', capability_id: 'warehouse_purge', args: { warehouse: `w-${n}` }, principal_chain: chain },
    principalChain: chain,
    policyDecision: { id: `pd_a${n}`, effect: 'require_approval', effectiveMode: 'destructive', reason: 'destructive: require approval' },
    reason: 'destructive: require approval',
    createdAt: now - n * 1000,
    expiresAt: now + 3_600_000,
    decidedAt: null,
    decidedBy: null,
    decisionReason: null,
    outcome: null,
  };
}

/** Fills a store: `total` records in batches through appendAudit, and 200 pending approvals. */
async function fill(store, total) {
  const now = Date.now();
  const span = 23 * 3_600_000;
  const t0 = now - span - 60_000;
  const started = performance.now();
  const BATCH = 5000;
  for (let n = 0; n < total; n += BATCH) {
    const batch = [];
    for (let k = n; k < Math.min(total, n + BATCH); k++) batch.push(record(k, t0, span, total));
    await store.appendAudit(batch);
  }
  for (let i = 0; i < 200; i++) await store.createApproval(approval(i, now));
  return (performance.now() - started) / 1000;
}

async function serve(store) {
  const auth = tokenAuthenticator({
    tokens: [
      { sha256: tokenDigest('bench-admin'), principal: 'user:ada', roles: ['admin'] },
      { sha256: tokenDigest('bench-viewer'), principal: 'user:vic', tenant: 'acme', roles: ['viewer'] },
    ],
  });
  const handler = createConsole({
    store,
    verifyToken: async (t) => {
      const who = await auth.authenticate(`Bearer ${t}`);
      return isAuthFailure(who) ? undefined : who;
    },
  });
  const server = createServer((req, res) => void handler.handle(req, res, (req.url ?? '/').split('?')[0]));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}/console`;
  const session = async (token) => {
    const form = await fetch(`${base}/sign-in`);
    const pre = /name="pre" value="([^"]+)"/.exec(await form.text())[1];
    const preCookie = form.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const r = await fetch(`${base}/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: preCookie },
      body: new URLSearchParams({ pre, token }).toString(),
      redirect: 'manual',
    });
    return r.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
  };
  return {
    admin: await session('bench-admin'),
    viewer: await session('bench-viewer'),
    get: async (cookie, p) => {
      const t = performance.now();
      const r = await fetch(`${base}${p}`, { headers: { cookie }, redirect: 'manual' });
      const body = await r.text();
      if (r.status !== 200) throw new Error(`${p}: ${r.status} ${body.slice(0, 200)}`);
      return { ms: performance.now() - t, body };
    },
    close: () => new Promise((r) => (server.close(() => r()), server.closeAllConnections())),
  };
}

/** Runs the rollup's catch-up to the end in the console's chunks; returns its rows. */
async function catchUp(store, label, total, note) {
  const started = performance.now();
  const cpu = process.cpuUsage();
  let folded = 0;
  let chunks = 0;
  for (let step = await store.rollUpAudit(CATCH_UP_CHUNK); ; step = await store.rollUpAudit(CATCH_UP_CHUNK)) {
    folded += step.folded;
    chunks++;
    if (!step.more) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    group: GROUP,
    name: `${label}: rollup catch-up of ${total.toLocaleString('en-US')} records (off the write path)`,
    value: Number(seconds.toFixed(1)),
    unit: 's',
    note: `${label}, ${folded.toLocaleString('en-US')} records folded in ${chunks} transactions of ${CATCH_UP_CHUNK.toLocaleString('en-US')} (the console's chunk), ${((seconds * 1e6) / Math.max(1, folded)).toFixed(1)} µs a record, this process's CPU ${((used.user + used.system) / Math.max(1, folded)).toFixed(1)} µs a record; ${note}; load average ${os.loadavg()[0].toFixed(1)}.`,
  };
}

/** The histogram of the last hour read with `backlog` records above the rollup's mark, without the console (nothing folds them meanwhile). */
async function backlogRow(store, label, backlog, rounds, note) {
  const now = Date.now();
  const batch = [];
  for (let k = 0; k < backlog; k++) batch.push(record(k, now - 3_600_000, 3_540_000, backlog));
  for (let k = 0; k < backlog; k += 5000) await store.appendAudit(batch.slice(k, k + 5000));
  const times = [];
  for (let i = 0; i <= rounds; i++) {
    const t = performance.now();
    await store.auditHistogram({ since: now - 3_600_000, until: now }, 60_000);
    if (i > 0) times.push(performance.now() - t);
  }
  return {
    group: GROUP,
    name: `${label}: the last hour's histogram with ${backlog.toLocaleString('en-US')} records not yet rolled up, admin`,
    value: Number(median(times).toFixed(1)),
    unit: 'ms',
    note: `${label}, the store's auditHistogram alone (no page, no HTTP), median of ${rounds} after one; the records above the mark are counted from the table by the same statement; ${note}.`,
  };
}

const CATCH_UP_CHUNK = 5000;
const STATS_ONLY = process.env.TOOL_ENVELOPE_BENCH_CONSOLE_PAGES === 'stats';

async function measure(ctx, label, store, total, note) {
  const seconds = await fill(store, total);
  const rows = [await catchUp(store, label, total, note)];
  // Before any page: the stats page starts the console's catch-up, which would fold the backlog.
  rows.push(await backlogRow(store, label, ctx.quick ? 2000 : 20_000, ctx.quick ? 3 : 7, note));
  await catchUp(store, label, total, note);
  const c = await serve(store);
  try {
    const all = [
      ['first page of the audit list, admin', c.admin, '/audit', 300],
      ['first page of the audit list, viewer of one tenant', c.viewer, '/audit', 300],
      ['first page of the approvals inbox, admin', c.admin, '/inbox', 300],
      ['stats page with its charts (default window: the last hour), admin', c.admin, '/stats', 1000],
      ['stats page with its charts (the last hour), viewer of one tenant', c.viewer, '/stats', 1000],
      ['stats page with its charts over 24 h (every record), admin', c.admin, '/stats?since=24h', undefined],
    ];
    const pages = STATS_ONLY ? all.filter(([, , p]) => p.startsWith('/stats')) : all;
    const rounds = ctx.quick ? 3 : 7;
    for (const [name, cookie, p, goal] of pages) {
      const first = await c.get(cookie, p);
      if (p === '/stats' && !first.body.includes('<svg')) throw new Error(`the stats page drew no chart: ${first.body.slice(0, 600)}`);
      const times = [];
      for (let i = 0; i < rounds; i++) times.push((await c.get(cookie, p)).ms);
      const ms = median(times);
      rows.push({
        group: GROUP,
        name: `${label}: ${name}`,
        value: Number(ms.toFixed(1)),
        unit: 'ms',
        ...(goal !== undefined && { goal: `< ${goal} ms`, pass: ms < goal }),
        note: `${label}, ${total.toLocaleString('en-US')} records written in ${seconds.toFixed(1)} s (${Math.round(total / seconds).toLocaleString('en-US')} records/s through appendAudit, 5,000 a batch); median of ${rounds} GETs over HTTP after one (first ${first.ms.toFixed(0)} ms); ${note}; load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores.`,
      });
    }
  } finally {
    await c.close();
  }
  return rows;
}

/** @param {any} ctx */
export async function run(ctx) {
  const total = ctx.quick ? 20_000 : 1_000_000;
  const rows = [];
  const dir = mkdtempSync(path.join(tmpdir(), 'te-bench-console-'));
  try {
    const store = await openSqliteStore({ path: path.join(dir, 'bench.db'), chainKey: false });
    try {
      rows.push(...(await measure(ctx, 'SQLite', store, total, 'WAL, synchronous=NORMAL, no hash chain')));
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const pg = await benchPostgres();
  if (!pg) {
    rows.push(pgNotMeasured(GROUP));
    return rows;
  }
  const schema = `bench_console_${process.pid}`;
  const store = await openPostgresStore({ connectionString: pg.url, schema, chainKey: false });
  try {
    rows.push(
      ...(await measure(
        ctx,
        'PostgreSQL',
        store,
        total,
        `${pg.server ? 'throwaway local server, durable defaults' : 'TOOL_ENVELOPE_BENCH_PG_URL'}, no hash chain`,
      )),
    );
  } finally {
    await store.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await store.close();
    pg.server?.stop();
  }
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const r of await run({ quick: process.argv.includes('--quick') })) {
    console.log(`${r.name}: ${r.value} ${r.unit ?? ''} ${r.pass === undefined ? '' : r.pass ? '(goal met)' : '(GOAL MISSED)'}`);
  }
}
