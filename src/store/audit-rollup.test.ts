// The rollup the stats read (audit-rollup.ts, audit-rollup-read.ts) answers what the scan answers:
// random records (tenants, started records with and without their outcome, latencies, minutes),
// random windows whose edges fall inside minutes, with the catch-up's mark anywhere (before, between
// or after a started record and its outcome), after inserts, after retention, on a file written
// before the rollup existed, and on PostgreSQL with a late commit and a rolled-back insert. The
// reference is the same store's scan (`{ scan: true }`) and the memory store.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { HistogramCell } from './audit-histogram.js';
import { rollupReadSql } from './audit-rollup-read.js';
import { createMemoryStore } from './memory.js';
import { openPostgresStore } from './postgres/index.js';
import { openSqliteStore } from './sqlite/index.js';
import { describePg, freshSchemas } from './test-support/pg.js';
import { makeAudit } from './test-support/store-suite.js';
import type { AuditFilter, AuditRecord, AuditRollupStep, Store } from './types.js';

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
  // A completing outcome's startedAt this much earlier than its started record's: retention by age can then take the outcome and keep the started record.
  shift: fc.constantFrom(0, 0, 4 * MIN),
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
      if (s.kind === 2) later.push({ ...base, startedAt: base.startedAt - s.shift });
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
const WHOLE = { since: 0, span: 14 * MIN, bucket: MIN } as Ask;

/** The rollup's answer equals the scan's (and, when `memory` is given, the memory store's). */
async function same(store: Store, asks: Ask[], memory?: Store): Promise<void> {
  for (const a of [...asks, WHOLE]) {
    const [filter, bucket] = filterOf(a);
    expect(rollupReadSql('sqlite', filter, bucket, () => '?')).toBeDefined();
    const got = sorted(await store.auditHistogram(filter, bucket));
    expect(got).toEqual(sorted(await store.auditHistogram(filter, bucket, { scan: true })));
    if (memory) expect(got).toEqual(sorted(await memory.auditHistogram(filter, bucket)));
  }
}

/** Steps the catch-up until it has nothing more (or `steps` times). */
async function catchUp(store: Store, chunk: number, steps = Number.POSITIVE_INFINITY): Promise<AuditRollupStep> {
  let step: AuditRollupStep;
  let n = 0;
  do step = await store.rollUpAudit!(chunk);
  while (step.more && ++n < steps);
  return step;
}

const plan = fc.record({ chunk: fc.integer({ min: 1, max: 30 }), steps: fc.integer({ min: 0, max: 3 }) });

async function randomAgreement(open: () => Promise<Store>, runs: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(recordArb, { minLength: 1, maxLength: 40 }), fc.array(filterArb, { maxLength: 4 }), plan, plan, async (specs, asks, p1, p2) => {
      const store = await open();
      const memory = createMemoryStore();
      try {
        const [first, later] = batches(specs);
        await store.appendAudit(first!);
        await memory.appendAudit(first!);
        await same(store, asks, memory);
        // The mark anywhere in the first batch; the later outcomes complete started records on both sides of it.
        if (p1.steps > 0) await catchUp(store, p1.chunk, p1.steps);
        await same(store, asks, memory);
        if (later!.length) {
          await store.appendAudit(later!);
          await memory.appendAudit(later!);
        }
        await same(store, asks, memory);
        if (p2.steps > 0) await catchUp(store, p2.chunk, p2.steps);
        await same(store, asks, memory);
        // Retention deletes rows below and above the mark; a started record whose outcome went counts again.
        await store.prune({ maxAgeMs: 1_000_000 - 5 * MIN }, T0 + 1_000_000);
        await same(store, asks);
        await catchUp(store, p2.chunk, 2);
        await store.prune({ maxRecords: Math.floor(specs.length / 2) });
        await same(store, asks);
        const done = await catchUp(store, 7);
        expect(done.more).toBe(false);
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
  it('answers what the scan and the memory store answer, wherever the mark is, after inserts and retention', () =>
    randomAgreement(() => openSqliteStore({ path: join(dir, `r${++n}.db`) }), 15));

  it('a file written before the rollup is exact at once and folded by the catch-up', async () => {
    const path = join(dir, 'old.db');
    const [first, later] = batches(fc.sample(recordArb, { numRuns: 300, seed: 42 }));
    let store = await openSqliteStore({ path });
    await store.appendAudit(first!);
    await store.appendAudit(later!);
    await store.close();
    // The file as version 9 left it: no rollup.
    const db = new Database(path);
    db.exec('DROP TABLE audit_rollup; DROP TABLE audit_rollup_state; DELETE FROM schema_migrations WHERE version = 10');
    db.close();
    store = await openSqliteStore({ path });
    try {
      const asks = fc.sample(filterArb, { numRuns: 20, seed: 7 });
      await same(store, asks);
      const step = await catchUp(store, 100);
      expect(step.rolledUpTo).toBe(first!.length + later!.length);
      await same(store, asks);
      expect(total(await store.auditHistogram({ since: T0, until: T0 + 14 * MIN }, MIN))).toBeGreaterThan(100);
    } finally {
      await store.close();
    }
  });
});

describePg('audit rollup (PostgreSQL)', (url) => {
  const fresh = freshSchemas(url);
  it('answers what the scan and the memory store answer, wherever the mark is, after inserts and retention', () =>
    randomAgreement(() => openPostgresStore({ connectionString: url, schema: fresh() }), 6));

  const client = async (schema: string): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString: url, options: `-c search_path="${schema}"` });
    await c.connect();
    return c;
  };
  /** A copy of the record of `tool` 'seed' under a new id and `tool` (what a raw transaction inserts). */
  const copySql = async (c: pg.Client, schema: string, tool: string): Promise<string> => {
    const cols = (
      await c.query(
        "SELECT column_name AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'audit' AND column_name NOT IN ('seq', 'id', 'tool')",
        [schema],
      )
    ).rows.map((r) => r.c as string);
    return `INSERT INTO audit (id, tool, ${cols.join(', ')}) SELECT md5(random()::text), '${tool}', ${cols.join(', ')} FROM audit WHERE tool = 'seed' RETURNING seq`;
  };

  it('a late commit (a lower seq visible after a higher one) is neither missed nor counted twice', async () => {
    const schema = fresh();
    const store = await openPostgresStore({ connectionString: url, schema, rollupSettleMs: 300 });
    await store.appendAudit([makeAudit({ tool: 'seed', startedAt: T0 + MIN })]);
    const [a, b] = [await client(schema), await client(schema)];
    const window = { since: T0, until: T0 + 3 * MIN };
    try {
      const copy = await copySql(a, schema, 'late');
      await a.query('BEGIN');
      const late = Number((await a.query(copy)).rows[0].seq);
      const early = Number((await b.query(copy.replace("'late'", "'early'"))).rows[0].seq);
      expect(early).toBeGreaterThan(late);
      // The catch-up stops below the missing seq however often it runs.
      await catchUp(store, 10);
      expect((await catchUp(store, 10)).rolledUpTo).toBe(late - 1);
      expect(total(await store.auditHistogram(window, MIN))).toBe(2);
      await a.query('COMMIT');
      expect(sorted(await store.auditHistogram(window, MIN))).toEqual(sorted(await store.auditHistogram(window, MIN, { scan: true })));
      expect(total(await store.auditHistogram(window, MIN))).toBe(3);
      expect((await catchUp(store, 10)).rolledUpTo).toBe(early);
      expect(total(await store.auditHistogram(window, MIN))).toBe(3);
      // A rolled-back insert leaves a seq that never comes: passed once it has settled.
      await a.query('BEGIN');
      const lost = Number((await a.query(copy)).rows[0].seq);
      await a.query('ROLLBACK');
      const after = Number((await b.query(copy.replace("'late'", "'after'"))).rows[0].seq);
      expect((await catchUp(store, 10)).rolledUpTo).toBe(lost - 1);
      await new Promise((r) => setTimeout(r, 400));
      await catchUp(store, 10);
      await new Promise((r) => setTimeout(r, 400));
      expect((await catchUp(store, 10)).rolledUpTo).toBe(after);
      expect(total(await store.auditHistogram(window, MIN))).toBe(4);
      expect(sorted(await store.auditHistogram(window, MIN))).toEqual(sorted(await store.auditHistogram(window, MIN, { scan: true })));
    } finally {
      await a.query('ROLLBACK').catch(() => {});
      await a.end();
      await b.end();
      await store.close();
    }
  });

  it('audit commits never wait for the catch-up; a second replica stepping meanwhile leaves it', async () => {
    const schema = fresh();
    const store = await openPostgresStore({ connectionString: url, schema });
    const replica = await openPostgresStore({ connectionString: url, schema });
    const c = await client(schema);
    try {
      await store.appendAudit([makeAudit({ tool: 'seed', startedAt: T0 + MIN })]);
      // The catch-up's lock, held by another transaction as a running catch-up holds it.
      await c.query('BEGIN');
      await c.query("SELECT pg_advisory_xact_lock(hashtext($1), hashtext('audit_rollup'))", [schema]);
      await replica.appendAudit([makeAudit({ tool: 'seed', startedAt: T0 + MIN })]);
      expect(await replica.rollUpAudit!(10)).toEqual({ folded: 0, rolledUpTo: 0, more: false });
      expect(total(await replica.auditHistogram({ since: T0, until: T0 + 3 * MIN }, MIN))).toBe(2);
      await c.query('COMMIT');
      expect((await catchUp(replica, 10)).rolledUpTo).toBe(2);
      expect(total(await store.auditHistogram({ since: T0, until: T0 + 3 * MIN }, MIN))).toBe(2);
    } finally {
      await c.query('ROLLBACK').catch(() => {});
      await c.end();
      await replica.close();
      await store.close();
    }
  });
});
