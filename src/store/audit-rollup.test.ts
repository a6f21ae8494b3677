// The rollup the stats read (audit-rollup.ts) answers what the row scan answers: random records
// (tenants, started records with and without their outcome, latencies, minutes), random windows
// whose edges fall inside minutes, after inserts, after retention, and after a migration's
// backfill of a file written before the rollup existed. The scan is the same store asked with a
// filter the rollup does not key (every record here has session `sess_1`).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { HistogramCell } from './audit-histogram.js';
import { rollupPlan } from './audit-rollup.js';
import { createMemoryStore } from './memory.js';
import { openPostgresStore } from './postgres/index.js';
import { openSqliteStore } from './sqlite/index.js';
import { describePg, freshSchemas } from './test-support/pg.js';
import { makeAudit } from './test-support/store-suite.js';
import type { AuditFilter, AuditRecord, Store } from './types.js';

const T0 = 1_700_000_041_234;
const MIN = 60_000;
const TOOLS = ['fs.read', 'fs.write', 'net.get'];
const CHAINS = [
  [{ kind: 'user', id: 'u' }],
  [{ kind: 'user', id: 'u', tenant_id: 'acme' }],
  [
    { kind: 'user', id: 'u' },
    { kind: 'agent', id: 'a', tenant_id: 'globex' },
  ],
  [
    { kind: 'user', id: 'u', tenant_id: '' },
    { kind: 'agent', id: 'a', tenant_id: 'acme' },
  ],
] as AuditRecord['principalChain'][];
const OUTCOMES = [
  { status: 'ok', category: null },
  { status: 'error', category: 'timeout' },
  { status: 'failed', category: 'internal' },
  { status: 'paused', category: null },
  { status: 'blocked', category: 'focus' },
] as const;

const recordArb = fc.record({
  at: fc.integer({ min: 0, max: 12 * MIN }),
  tool: fc.nat(TOOLS.length - 1),
  chain: fc.nat(CHAINS.length - 1),
  outcome: fc.nat(OUTCOMES.length - 1),
  latency: fc.constantFrom(0, 0.4, 3, 17.5, 250, 4096),
  // 0: an outcome alone; 1: a started record never completed; 2: a started record completed later.
  kind: fc.nat(2),
  replay: fc.boolean(),
});
const filterArb = fc.record({
  since: fc.integer({ min: 0, max: 6 * MIN }),
  span: fc.integer({ min: 3 * MIN, max: 14 * MIN }),
  bucket: fc.constantFrom(MIN, 5 * MIN, 60 * MIN),
  tenant: fc.constantFrom(undefined, null, 'acme', 'globex'),
  tool: fc.constantFrom(undefined, 'fs.read', ['fs.write', 'net.get']),
  status: fc.constantFrom(undefined, 'interrupted', ['ok', 'error'], ['started'], 'paused'),
  category: fc.constantFrom(undefined, 'timeout', ['internal', 'focus']),
});
type Of<A> = A extends fc.Arbitrary<infer T> ? T : never;
type Spec = Of<typeof recordArb>;
type Ask = Of<typeof filterArb>;

/** The batches to append: outcomes and started records first, then the outcomes of the completed ones. */
function batches(specs: Spec[]): AuditRecord[][] {
  const first: AuditRecord[] = [];
  const later: AuditRecord[] = [];
  for (const s of specs) {
    const o = OUTCOMES[s.outcome]!;
    const base = makeAudit({
      tool: TOOLS[s.tool]!,
      startedAt: T0 + s.at,
      latencyMs: s.latency,
      principalChain: CHAINS[s.chain]!,
      replay: s.replay,
      status: o.status,
      category: o.category,
    });
    if (s.kind === 0) first.push(base);
    else {
      first.push({ ...base, status: 'started', category: null, latencyMs: 0 });
      if (s.kind === 2) later.push(base);
    }
  }
  return [first, later];
}

function filterOf(a: Ask): [AuditFilter, number] {
  const f: AuditFilter = { since: T0 + a.since, until: T0 + a.since + a.span };
  if (a.tenant !== undefined) f.tenant = a.tenant;
  if (a.tool !== undefined) f.tool = a.tool;
  if (a.status !== undefined) f.status = a.status as AuditFilter['status'];
  if (a.category !== undefined) f.category = a.category as AuditFilter['category'];
  return [f, a.bucket];
}

const sorted = (cells: HistogramCell[]): string[] => cells.map((c) => JSON.stringify(c)).sort();

/** The rollup's answer equals the row scan's (and, when `memory` is given, the memory store's). */
async function same(store: Store, asks: Ask[], memory?: Store): Promise<void> {
  for (const a of [...asks, { since: 0, span: 14 * MIN, bucket: MIN } as Ask]) {
    const [filter, bucket] = filterOf(a);
    expect(rollupPlan('sqlite', filter, bucket, () => '?')).toBeDefined();
    const got = sorted(await store.auditHistogram(filter, bucket));
    expect(got).toEqual(sorted(await store.auditHistogram({ ...filter, sessionId: 'sess_1' }, bucket)));
    if (memory) expect(got).toEqual(sorted(await memory.auditHistogram(filter, bucket)));
  }
}

async function randomAgreement(open: () => Promise<Store>, runs: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(recordArb, { minLength: 1, maxLength: 40 }), fc.array(filterArb, { maxLength: 4 }), async (specs, asks) => {
      const store = await open();
      const memory = createMemoryStore();
      try {
        for (const b of batches(specs)) {
          await store.appendAudit(b);
          await memory.appendAudit(b);
        }
        await same(store, asks, memory);
        // Retention deletes rows; the rollup loses exactly theirs (and a started record whose outcome went counts again).
        await store.prune({ maxAgeMs: 1_000_000 - 5 * MIN }, T0 + 1_000_000);
        await same(store, asks);
        await store.prune({ maxRecords: Math.floor(specs.length / 2) });
        await same(store, asks);
      } finally {
        await store.close();
        await memory.close();
      }
    }),
    { numRuns: runs },
  );
}

const total = (cells: HistogramCell[]): number => cells.reduce((n, c) => n + c.count, 0);

describe('audit rollup (SQLite)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'te-rollup-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  it('answers what the row scan and the memory store answer, after inserts and retention', () =>
    randomAgreement(() => openSqliteStore({ path: join(dir, `r${++n}.db`) }), 12));

  it('a file written before the rollup gets it backfilled by the migration', async () => {
    const path = join(dir, 'old.db');
    const [first, later] = batches(fc.sample(recordArb, { numRuns: 300, seed: 42 }));
    let store = await openSqliteStore({ path });
    await store.appendAudit(first!);
    await store.appendAudit(later!);
    await store.close();
    // The file as version 9 left it: no rollup, no triggers.
    const db = new Database(path);
    db.exec(
      'DROP TRIGGER audit_rollup_started; DROP TRIGGER audit_rollup_outcome; DROP TRIGGER audit_rollup_started_gone; DROP TRIGGER audit_rollup_outcome_gone; DROP TABLE audit_rollup; DELETE FROM schema_migrations WHERE version = 10',
    );
    db.close();
    store = await openSqliteStore({ path });
    try {
      const asks = fc.sample(filterArb, { numRuns: 20, seed: 7 });
      await same(store, asks);
      expect(total(await store.auditHistogram({ since: T0, until: T0 + 14 * MIN }, MIN))).toBeGreaterThan(100);
    } finally {
      await store.close();
    }
  });
});

describePg('audit rollup (PostgreSQL)', (url) => {
  const fresh = freshSchemas(url);
  it('answers what the row scan and the memory store answer, after inserts and retention', () =>
    randomAgreement(() => openPostgresStore({ connectionString: url, schema: fresh() }), 6));

  it('two transactions upserting the same keys in different statement orders both commit (no deadlock)', async () => {
    const schema = fresh();
    const store = await openPostgresStore({ connectionString: url, schema });
    await store.appendAudit([makeAudit({ tool: 'seed', startedAt: T0 + MIN })]);
    const client = async (): Promise<pg.Client> => {
      const c = new pg.Client({ connectionString: url, options: `-c search_path="${schema}"` });
      await c.connect();
      return c;
    };
    const [a, b] = [await client(), await client()];
    try {
      const cols = (
        await a.query(
          "SELECT column_name AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'audit' AND column_name NOT IN ('seq', 'id', 'tool')",
          [schema],
        )
      ).rows.map((r) => r.c as string);
      // A copy of the seed record under another id and tool: each tool is its own rollup key.
      const copy = (tool: string): string =>
        `INSERT INTO audit (id, tool, ${cols.join(', ')}) SELECT md5(random()::text), '${tool}', ${cols.join(', ')} FROM audit WHERE tool = 'seed'`;
      const pause = (): Promise<void> => new Promise((r) => setTimeout(r, 200));
      await a.query('BEGIN');
      await b.query('BEGIN');
      await a.query(copy('A'));
      // b's statements go C then A, a's A then C: each would wait for the key the other holds.
      const bDone = b.query(copy('C')).then(() => b.query(copy('A')));
      await pause();
      await a.query(copy('C'));
      await a.query('COMMIT');
      await bDone;
      await b.query('COMMIT');
      expect(total(await store.auditHistogram({ since: T0, until: T0 + 3 * MIN }, MIN))).toBe(5);
    } finally {
      await a.end();
      await b.end();
      await store.close();
    }
  });

  it('a schema written before the rollup gets it backfilled by the migration', async () => {
    const schema = fresh();
    const [first, later] = batches(fc.sample(recordArb, { numRuns: 300, seed: 42 }));
    let store = await openPostgresStore({ connectionString: url, schema });
    await store.appendAudit(first!);
    await store.appendAudit(later!);
    await store.close();
    const c = new pg.Client({ connectionString: url, options: `-c search_path="${schema}"` });
    await c.connect();
    await c.query(
      'DROP TABLE audit_rollup; DROP FUNCTION audit_rollup_added CASCADE; DROP FUNCTION audit_rollup_removed CASCADE; DELETE FROM schema_migrations WHERE version = 11',
    );
    await c.end();
    store = await openPostgresStore({ connectionString: url, schema });
    try {
      await same(store, fc.sample(filterArb, { numRuns: 20, seed: 7 }));
      expect(total(await store.auditHistogram({ since: T0, until: T0 + 14 * MIN }, MIN))).toBeGreaterThan(100);
    } finally {
      await store.close();
    }
  });
});
