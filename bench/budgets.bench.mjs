// Rate budgets counted in the store (#38 point 3): what a budget check adds to a governed call, on a
// SQLite file and on PostgreSQL (a throwaway local server, or TOOL_ENVELOPE_BENCH_PG_URL), each
// beside the same call without a budget, measured in the same run, interleaved. Goals: <= 50 µs
// added per call on SQLite, <= 1 ms on PostgreSQL (same host). Loaded by bench/run.mjs; alone after
// the build: node --expose-gc bench/budgets.bench.mjs [--quick]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GovernancePipeline } from '../dist/src/governance/pipeline.js';
import { compilePolicy } from '../dist/src/governance/policy-load.js';
import { operatorKeyFromSecret } from '../dist/src/store/operator-key.js';
import { openPostgresStore } from '../dist/src/store/postgres/index.js';
import { openSqliteStore } from '../dist/src/store/sqlite/index.js';
import { benchPostgres, pgNotMeasured } from '../test/pg-server.mjs';

const GROUP = 'Governance: budgets counted in the store';
const SQLITE_GOAL_US = 50;
const PG_GOAL_US = 1000;

const rule = { name: 'reads', match: { tool: 'notes.read' }, effect: 'allow' };
// A budget the calls never exhaust (a window of 1e12 ms: every call is counted, none refused).
const budgeted = { ...rule, rateBudget: { calls: 1_000_000_000, perMs: 1_000_000_000_000, scope: ['principal', 'tool'] } };

let n = 0;
const call = () => {
  n++;
  return {
    tool: 'notes.read',
    ceiling: 'read_only',
    args: { n },
    principalChain: [{ kind: 'user', id: 'alice', tenant_id: 'acme' }],
    toolCallId: `c${n}`,
    runId: `r${n}`,
    traceId: `t${n}`,
  };
};
const execute = async () => ({ status: 'ok', result: { ok: 1 } });

/** Median per-call wall time (µs) of `rounds` interleaved rounds of `per` awaited calls through each pipeline. */
async function interleaved(ctx, a, b, rounds, per) {
  const times = { a: [], b: [] };
  const round = async (p, into) => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < per; i++) {
      const o = await p.run(call(), execute);
      if (o.status !== 'ok') throw new Error(`budgets bench: a call was ${o.status}: ${o.error?.detail}`);
    }
    into.push(Number(process.hrtime.bigint() - t0) / per / 1000);
  };
  await round(a, []);
  await round(b, []);
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      await round(a, times.a);
      await round(b, times.b);
    } else {
      await round(b, times.b);
      await round(a, times.a);
    }
  }
  return { a: ctx.median(times.a), b: ctx.median(times.b) };
}

async function measureOn(ctx, label, store, goalUs, rounds, per, note, floor) {
  const operatorKey = operatorKeyFromSecret(Buffer.alloc(32, 1));
  const plain = new GovernancePipeline({ store, policy: compilePolicy({ version: 1, rules: [rule] }), audit: false, operatorKey });
  const withBudget = new GovernancePipeline({ store, policy: compilePolicy({ version: 1, rules: [budgeted] }), audit: false, operatorKey });
  const { a, b } = await interleaved(ctx, plain, withBudget, rounds, per);
  const added = b - a;
  // The store's own floor in the same run: one statement's round trip, for the note.
  if (floor) {
    const xs = [];
    for (let r = 0; r < rounds; r++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < per; i++) await floor();
      xs.push(Number(process.hrtime.bigint() - t0) / per / 1000);
    }
    note += ` Floor in the same run: ${ctx.median(xs).toFixed(1)} µs per ${floor.what}.`;
  }
  return {
    group: GROUP,
    name: `${label}: a governed call with a rate budget vs without, added per call`,
    value: Number(added.toFixed(2)),
    unit: 'µs',
    anchor: 'the same call without a budget (µs per call)',
    anchorValue: Number(a.toFixed(2)),
    goal: `<= ${goalUs} µs added`,
    pass: added <= goalUs,
    note: `${label}: ${b.toFixed(1)} vs ${a.toFixed(1)} µs per call (median of ${rounds} interleaved rounds of ${per} awaited calls each, no audit log, the call itself a resolved promise); the check is one upsert of the budget's row (its own transaction). ${note}`,
  };
}

export async function run(ctx) {
  const rows = [];
  const rounds = ctx.quick ? 5 : 21;
  const dir = mkdtempSync(path.join(tmpdir(), 'te-bench-budgets-'));
  try {
    const store = await openSqliteStore({ path: path.join(dir, 'budgets.db'), chainKey: false });
    try {
      store.db.exec('CREATE TABLE bench_floor (k INTEGER PRIMARY KEY, n INTEGER NOT NULL)');
      const bump = store.db.prepare('INSERT INTO bench_floor (k, n) VALUES (1, 1) ON CONFLICT (k) DO UPDATE SET n = n + 1');
      rows.push(
        await measureOn(
          ctx,
          'SQLite',
          store,
          SQLITE_GOAL_US,
          rounds,
          ctx.quick ? 200 : 1000,
          'WAL, synchronous=NORMAL (the default).',
          Object.assign(async () => bump.run(), { what: 'plain one-row upsert committed on its own (better-sqlite3, same file)' }),
        ),
      );
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
  const { url, server } = pg;
  const schema = `bench_budgets_${process.pid}`;
  try {
    const store = await openPostgresStore({ connectionString: url, schema, chainKey: false });
    try {
      rows.push(
        await measureOn(
          ctx,
          'PostgreSQL',
          store,
          PG_GOAL_US,
          rounds,
          ctx.quick ? 50 : 200,
          server
            ? 'Throwaway local server, durable defaults (fsync on, synchronous_commit on); the check commits without waiting for its WAL flush (store/postgres/budgets.ts says why).'
            : 'TOOL_ENVELOPE_BENCH_PG_URL.',
          Object.assign(() => store.pool.query('SELECT 1'), { what: "'SELECT 1' round trip through the store's pool" }),
        ),
      );
      await store.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await store.close();
    }
  } finally {
    server?.stop();
  }
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { makeContext } = await import('./run.mjs');
  for (const r of await run(makeContext(process.argv.includes('--quick'))))
    console.log(`${r.name}: ${r.value} ${r.unit ?? ''} ${r.pass ? '(goal met)' : '(GOAL MISSED)'} — ${r.note}`);
}
