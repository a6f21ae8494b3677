/**
 * The one store test suite: registers the same tests for any store factory, so the memory,
 * SQLite and PostgreSQL stores are held to identical behaviour.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isToolEnvelopeError } from '../../core/index.js';
import type { JsonObject, JsonValue } from '../../core/index.js';
import { AuditWriter } from '../audit-writer.js';
import { startedAuditRecord } from '../started-record.js';
import type { ApprovalRequest, AuditRecord, Store } from '../types.js';

/** What a factory gives the suite: a fresh, empty store, and how to reopen it (durable stores) and clean up. */
export interface StoreHarness {
  store: Store;
  /** Closes nothing; opens a second handle on the same data (undefined for the memory store). */
  reopen?: () => Promise<Store>;
  cleanup: () => Promise<void>;
}

let counter = 0;

/** A complete audit record with distinct values. */
export function makeAudit(over: Partial<AuditRecord> = {}): AuditRecord {
  const n = ++counter;
  const startedAt = over.startedAt ?? 1_700_000_000_000 + n;
  return {
    id: `aud_${process.pid}_${n}_${Math.random().toString(36).slice(2)}`,
    tool: 'fs.read',
    status: 'ok',
    category: null,
    errorCode: null,
    toolCallId: `call_${n}`,
    runId: 'run_1',
    traceId: '0af7651916cd43dd8448eb211c80319c',
    sessionId: 'sess_1',
    startedAt,
    endedAt: startedAt + 3,
    latencyMs: 3,
    callEnvelope: { schema: 'contextos.tool_call.v1', tool_call_id: `call_${n}`, args: { path: 'a.txt' } },
    resultEnvelope: { schema: 'contextos.tool_result.v1', tool_call_id: `call_${n}`, status: 'ok' },
    outcome: { status: 'ok', result: { n } },
    principalChain: [
      { kind: 'user', id: 'u1' },
      { kind: 'agent', id: 'a1' },
    ],
    policyDecision: { id: `pd_${n}`, effect: 'allow', effectiveMode: 'read_only', reason: 'read_only: allow with audit' },
    idempotencyKey: null,
    replay: false,
    approvalId: null,
    ...over,
  };
}

/** A pending approval request with distinct ids, overridable. */
export function makeApproval(over: Partial<ApprovalRequest> = {}): ApprovalRequest {
  const n = ++counter;
  return {
    id: `apr_${n}_${Math.random().toString(36).slice(2)}`,
    state: 'pending',
    tool: 'fs.delete',
    toolCallId: `call_${n}`,
    runId: 'run_1',
    sessionId: 'sess_1',
    callEnvelope: { tool_call_id: `call_${n}`, args: { path: '/tmp/x' } },
    principalChain: [{ kind: 'user', id: 'u1' }],
    policyDecision: { id: `pd_${n}`, effect: 'require-approval', effectiveMode: 'destructive', reason: 'destructive: approval gate' },
    reason: 'destructive: approval gate',
    createdAt: 1_700_000_000_000 + n,
    expiresAt: null,
    decidedAt: null,
    decidedBy: null,
    decisionReason: null,
    outcome: null,
    ...over,
  };
}

async function expectCode(p: Promise<unknown>, code: string): Promise<void> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isToolEnvelopeError(e), `expected ToolEnvelopeError(${code}), got ${String(e)}`).toBe(true);
  expect((e as { code: string }).code).toBe(code);
}

/** Registers the store suite for one implementation. */
export function defineStoreSuite(name: string, factory: () => Promise<StoreHarness>): void {
  describe(`store suite: ${name}`, () => {
    let h: StoreHarness;
    let store: Store;
    beforeEach(async () => {
      h = await factory();
      store = h.store;
    });
    afterEach(async () => {
      await store.close().catch(() => {});
      await h.cleanup();
    });

    it('reads a started record as interrupted until a record of the same id completes it', async () => {
      const done = makeAudit({ tool: 'started.tool', startedAt: 1_800_000_000_000 });
      const started = startedAuditRecord({ ...done });
      const other = startedAuditRecord({ ...makeAudit({ tool: 'started.tool', startedAt: 1_800_000_000_001 }) });
      await store.appendAudit([started, other]);
      expect((await store.listAudit({ tool: 'started.tool' })).records.map((r) => [r.id, r.status])).toEqual([
        [other.id, 'interrupted'],
        [started.id, 'interrupted'],
      ]);
      expect((await store.getAudit(started.id))?.status).toBe('interrupted');
      await store.appendAudit([done]);
      const listed = (await store.listAudit({ tool: 'started.tool' }, { order: 'asc' })).records;
      expect(listed.map((r) => [r.id, r.status])).toEqual([
        [other.id, 'interrupted'],
        [done.id, 'ok'],
      ]);
      expect((await store.getAudit(done.id))?.status).toBe('ok');
      expect(await store.countAudit({ tool: 'started.tool' })).toBe(2);
      expect((await store.listAudit({ status: 'interrupted' })).records.map((r) => r.id)).toEqual([other.id]);
      expect(await store.countAudit({ status: ['ok', 'interrupted'], tool: 'started.tool' })).toBe(2);
      const [stats] = await store.auditStats({ tool: 'started.tool' });
      expect(stats?.byStatus).toEqual({ ok: 1, interrupted: 1 });
      const exported: string[] = [];
      for await (const r of store.iterateAudit({ tool: 'started.tool' })) exported.push(`${r.id}:${r.status}`);
      expect(exported).toEqual([`${other.id}:interrupted`, `${done.id}:ok`]);
      // Completed once, started once.
      await expect(store.appendAudit([{ ...done }])).rejects.toThrow();
      await expect(store.appendAudit([startedAuditRecord({ ...done })])).rejects.toThrow();
    });

    it('runs migrations on open and reports the schema version', async () => {
      expect(await store.schemaVersion()).toBeGreaterThanOrEqual(1);
      if (h.reopen) {
        const again = await h.reopen();
        expect(await again.schemaVersion()).toBe(await store.schemaVersion());
        await again.close();
      }
    });

    it('stores and returns audit records exactly, hostile keys and all', async () => {
      const hostile = JSON.parse('{"__proto__": {"polluted": true}, "constructor": "x", "emoji": "héllo 😀", "nested": {"a": [1, null, 2.5]}}') as JsonObject;
      const r = makeAudit({ outcome: hostile, sessionId: null, approvalId: 'apr_x', idempotencyKey: 'k', replay: true });
      await store.appendAudit([r]);
      const got = await store.getAudit(r.id);
      expect(got).toBeDefined();
      const { seq, ...rest } = got as AuditRecord;
      expect(typeof seq).toBe('number');
      expect(rest).toEqual(r);
      expect(JSON.stringify(got?.outcome)).toBe(JSON.stringify(hostile));
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(await store.getAudit('nope')).toBeUndefined();
      if (h.reopen) {
        const again = await h.reopen();
        expect((await again.getAudit(r.id))?.outcome).toEqual(hostile);
        await again.close();
      }
    });

    it('returns records whose call envelope shares the principal chain and whose result envelope shares the result', async () => {
      // As the governed runtime builds them: one chain and one result object, referenced twice.
      const chain: AuditRecord['principalChain'] = [
        { kind: 'user', id: 'u1', tenant_id: 'acme' },
        { kind: 'agent', id: 'a1' },
      ];
      const result = { rows: [{ id: 1, name: 'héllo 😀' }], total: 1 };
      const shared = makeAudit({
        callEnvelope: { envelope_version: 'contextos.tool_call.v1', principal_chain: chain as unknown as JsonValue, args: { q: 'x' } },
        resultEnvelope: { envelope_version: 'contextos.tool_result.v1', status: 'ok', output: result },
        outcome: { status: 'ok', result, latencyMs: 2 },
        principalChain: chain,
      });
      // Equal documents that are not the same objects, and a result that is not an object.
      const apart = makeAudit({
        callEnvelope: { principal_chain: structuredClone(chain) as unknown as JsonValue },
        resultEnvelope: { output: structuredClone(result) },
        outcome: { status: 'ok', result: structuredClone(result) },
        principalChain: structuredClone(chain),
      });
      const scalar = makeAudit({ resultEnvelope: { output: 7 }, outcome: { status: 'ok', result: 7 } });
      await store.appendAudit([shared, apart, scalar]);
      for (const r of [shared, apart, scalar]) {
        const { seq: _seq, ...got } = (await store.getAudit(r.id)) as AuditRecord;
        expect(got).toEqual(r);
        // Key order too: the outcome's result keeps its place.
        expect(JSON.stringify(got.outcome)).toBe(JSON.stringify(r.outcome));
      }
    });

    it('appends a batch atomically: a duplicate id fails the whole batch', async () => {
      const a = makeAudit();
      await store.appendAudit([a]);
      const b = makeAudit();
      await expectCode(store.appendAudit([b, { ...a }]), 'store-failure');
      expect(await store.getAudit(b.id)).toBeUndefined();
      expect(await store.countAudit()).toBe(1);
    });

    it('appends a large batch in order (several insert statements in one transaction)', async () => {
      const batch = Array.from({ length: 613 }, (_, i) => makeAudit({ tool: `bulk.${i % 3}`, outcome: { i } }));
      await store.appendAudit(batch);
      const ids: string[] = [];
      for await (const r of store.iterateAudit({}, 200)) ids.push(r.id);
      expect(ids).toEqual(batch.map((r) => r.id));
      expect((await store.getAudit(batch[612]!.id))?.outcome).toEqual({ i: 612 });
    });

    it('refuses records that are not JSON-serialisable', async () => {
      const bad = makeAudit({ outcome: { big: 10n } as unknown as JsonObject });
      await expectCode(store.appendAudit([bad]), 'not-json-safe');
      expect(await store.countAudit()).toBe(0);
    });

    it('lists with filters, newest first, and pages with a cursor', async () => {
      const recs = [
        makeAudit({ tool: 'a', status: 'ok', sessionId: 's1', startedAt: 1000 }),
        makeAudit({ tool: 'b', status: 'error', category: 'timeout', errorCode: 'wait-timeout', sessionId: 's1', startedAt: 2000 }),
        makeAudit({ tool: 'a', status: 'blocked', category: 'elevation', errorCode: 'policy-denied', sessionId: 's2', startedAt: 3000 }),
        makeAudit({ tool: 'c', status: 'paused', sessionId: null, startedAt: 4000 }),
        makeAudit({ tool: 'a', status: 'ok', sessionId: 's2', startedAt: 5000, runId: 'run_2' }),
      ];
      await store.appendAudit(recs.slice(0, 2));
      await store.appendAudit(recs.slice(2));
      const ids = (rs: AuditRecord[]): string[] => rs.map((r) => r.id);

      expect(ids((await store.listAudit()).records)).toEqual(ids([...recs].reverse()));
      expect(ids((await store.listAudit({}, { order: 'asc' })).records)).toEqual(ids(recs));
      expect(ids((await store.listAudit({ tool: 'a' })).records)).toEqual(ids([recs[4]!, recs[2]!, recs[0]!]));
      expect(ids((await store.listAudit({ tool: ['b', 'c'] })).records)).toEqual(ids([recs[3]!, recs[1]!]));
      expect(ids((await store.listAudit({ status: ['error', 'blocked'] })).records)).toEqual(ids([recs[2]!, recs[1]!]));
      expect(ids((await store.listAudit({ category: 'timeout' })).records)).toEqual(ids([recs[1]!]));
      expect(ids((await store.listAudit({ sessionId: 's2' })).records)).toEqual(ids([recs[4]!, recs[2]!]));
      expect(ids((await store.listAudit({ since: 2000, until: 4000 })).records)).toEqual(ids([recs[2]!, recs[1]!]));
      expect(ids((await store.listAudit({ runId: 'run_2' })).records)).toEqual(ids([recs[4]!]));
      expect(ids((await store.listAudit({ toolCallId: recs[3]!.toolCallId })).records)).toEqual(ids([recs[3]!]));
      expect((await store.listAudit({ tool: [] })).records).toEqual([]);
      expect(await store.countAudit({ tool: 'a' })).toBe(3);
      expect(await store.countAudit()).toBe(5);

      // Paging both ways visits every record once.
      for (const order of ['asc', 'desc'] as const) {
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page: Awaited<ReturnType<Store['listAudit']>> = await store.listAudit({}, { limit: 2, cursor, order });
          seen.push(...ids(page.records));
          cursor = page.nextCursor;
          pages++;
        } while (cursor);
        expect(pages).toBe(3);
        expect(seen).toEqual(order === 'asc' ? ids(recs) : ids([...recs].reverse()));
      }
      await expectCode(store.listAudit({}, { cursor: 'garbage!' }), 'invalid-option');
      await expectCode(store.listAudit({}, { limit: 0 }), 'invalid-option');
    });

    it('iterates everything oldest first for export', async () => {
      const recs = Array.from({ length: 23 }, () => makeAudit());
      await store.appendAudit(recs);
      const out: string[] = [];
      for await (const r of store.iterateAudit({}, 5)) out.push(r.id);
      expect(out).toEqual(recs.map((r) => r.id));
      const onlyA: string[] = [];
      for await (const r of store.iterateAudit({ tool: 'none' })) onlyA.push(r.id);
      expect(onlyA).toEqual([]);
    });

    it('summarises per tool', async () => {
      await store.appendAudit([
        makeAudit({ tool: 'x', latencyMs: 1 }),
        makeAudit({ tool: 'x', latencyMs: 3, replay: true }),
        makeAudit({ tool: 'x', latencyMs: 10, status: 'error', category: 'timeout' }),
        makeAudit({ tool: 'w', latencyMs: 7, status: 'blocked', category: 'elevation' }),
      ]);
      const stats = await store.auditStats();
      expect(stats.map((s) => s.tool)).toEqual(['w', 'x']);
      const x = stats[1]!;
      expect(x.count).toBe(3);
      expect(x.byStatus).toEqual({ ok: 2, error: 1 });
      expect(x.byCategory).toEqual({ timeout: 1 });
      expect(x.replays).toBe(1);
      expect(x.latencyMs).toMatchObject({ min: 1, max: 10, p50: 3, p99: 10 });
      expect(x.latencyMs.mean).toBeCloseTo(14 / 3);
      expect((await store.auditStats({ status: 'blocked' })).map((s) => s.tool)).toEqual(['w']);
    });

    it('filters replays in or out (list and stats)', async () => {
      const ran = makeAudit({ tool: 'r', latencyMs: 5 });
      const replayed = makeAudit({ tool: 'r', latencyMs: 1, replay: true });
      await store.appendAudit([ran, replayed]);
      const ids = async (replay: boolean) => (await store.listAudit({ tool: 'r', replay })).records.map((r) => r.id);
      expect(await ids(true)).toEqual([replayed.id]);
      expect(await ids(false)).toEqual([ran.id]);
      expect((await store.listAudit({ tool: 'r' })).records).toHaveLength(2);
      const [executed] = await store.auditStats({ tool: 'r', replay: false });
      expect(executed).toMatchObject({ count: 1, replays: 0, latencyMs: { max: 5 } });
      const [replays] = await store.auditStats({ tool: 'r', replay: true });
      expect(replays).toMatchObject({ count: 1, replays: 1 });
    });

    it('claims an idempotency key once, completes it only with the claim token, and releases', async () => {
      const claim = { key: 'k1', fingerprint: 'f1', tool: 't', toolCallId: 'c1', claimToken: 'tok1', createdAt: 1 };
      expect(await store.claimIdempotency(claim)).toEqual({ claimed: true });
      const second = await store.claimIdempotency({ ...claim, toolCallId: 'c2', claimToken: 'tok2' });
      expect(second.claimed).toBe(false);
      if (!second.claimed) expect(second.existing).toMatchObject({ key: 'k1', state: 'pending', toolCallId: 'c1', fingerprint: 'f1' });
      expect(await store.completeIdempotency('k1', 'tok2', { status: 'ok' }, 5)).toBe(false);
      expect(await store.completeIdempotency('k1', 'tok1', { status: 'ok', result: { a: 1 } }, 5)).toBe(true);
      expect(await store.completeIdempotency('k1', 'tok1', { status: 'ok' }, 6)).toBe(false);
      expect(await store.getIdempotency('k1')).toEqual({
        key: 'k1',
        fingerprint: 'f1',
        tool: 't',
        toolCallId: 'c1',
        state: 'done',
        claimToken: 'tok1',
        createdAt: 1,
        completedAt: 5,
        outcome: { status: 'ok', result: { a: 1 } },
      });
      expect(await store.releaseIdempotency('k1', 'tok1')).toBe(false);

      await store.claimIdempotency({ ...claim, key: 'k2' });
      expect(await store.releaseIdempotency('k2', 'wrong')).toBe(false);
      expect(await store.releaseIdempotency('k2', 'tok1')).toBe(true);
      expect(await store.getIdempotency('k2')).toBeUndefined();
      expect(await store.getIdempotency('missing')).toBeUndefined();
    });

    it('grants one claim among 100 concurrent claimants', async () => {
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          store.claimIdempotency({ key: 'hot', fingerprint: 'f', tool: 't', toolCallId: `c${i}`, claimToken: `tok${i}`, createdAt: i }),
        ),
      );
      expect(results.filter((r) => r.claimed)).toHaveLength(1);
    });

    it('persists approvals and lets exactly one decision win', async () => {
      const a = makeApproval({ expiresAt: 9_999_999_999_999 });
      await store.createApproval(a);
      expect(await store.getApproval(a.id)).toEqual(a);
      await expectCode(store.createApproval(a), 'store-failure');
      const b = makeApproval({ tool: 'other' });
      await store.createApproval(b);

      expect((await store.listApprovals({ state: 'pending' })).approvals.map((x) => x.id)).toEqual([b.id, a.id]);
      expect((await store.listApprovals({ tool: 'other' })).approvals.map((x) => x.id)).toEqual([b.id]);
      const p1 = await store.listApprovals({ limit: 1 });
      expect(p1.approvals.map((x) => x.id)).toEqual([b.id]);
      const p2 = await store.listApprovals({ limit: 1, cursor: p1.nextCursor });
      expect(p2.approvals.map((x) => x.id)).toEqual([a.id]);
      expect(p2.nextCursor).toBeNull();

      const decisions = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.transitionApproval(a.id, 'pending', 'approved', { at: 100 + i, by: `op${i}` })),
      );
      const winners = decisions.filter((d) => d !== undefined);
      expect(winners).toHaveLength(1);
      expect(winners[0]).toMatchObject({ state: 'approved', decidedBy: expect.stringMatching(/^op\d$/) });
      const done = await store.transitionApproval(a.id, 'approved', 'completed', { at: 200, outcome: { status: 'completed', result: 1 } });
      expect(done).toMatchObject({
        state: 'completed',
        decidedBy: winners[0]!.decidedBy,
        decidedAt: winners[0]!.decidedAt,
        outcome: { status: 'completed', result: 1 },
      });
      expect(await store.transitionApproval(a.id, 'pending', 'rejected', { at: 300 })).toBeUndefined();
      expect(await store.transitionApproval('missing', 'pending', 'rejected', { at: 300 })).toBeUndefined();

      const r = await store.transitionApproval(b.id, 'pending', 'rejected', { at: 400, by: 'op', reason: 'too risky' });
      expect(r).toMatchObject({ state: 'rejected', decidedAt: 400, decidedBy: 'op', decisionReason: 'too risky', outcome: null });
      expect((await store.listApprovals({ state: ['completed', 'rejected'] })).approvals).toHaveLength(2);
    });

    it('keeps the signatures of an approval: the request one from creation, the decision one from its transition', async () => {
      const a = makeApproval({ requestSignature: 'k1.req-sig' });
      await store.createApproval(a);
      expect(await store.getApproval(a.id)).toEqual(a);
      const approved = await store.transitionApproval(a.id, 'pending', 'approved', { at: 100, by: 'user:alice', signature: 'k1.dec-sig' });
      expect(approved).toMatchObject({ requestSignature: 'k1.req-sig', decisionSignature: 'k1.dec-sig', decidedBy: 'user:alice' });
      // Later transitions that say nothing of the signature keep it.
      const done = await store.transitionApproval(a.id, 'approved', 'completed', { at: 200, outcome: { status: 'completed' } });
      expect(done).toMatchObject({ requestSignature: 'k1.req-sig', decisionSignature: 'k1.dec-sig' });
      const unsigned = makeApproval();
      await store.createApproval(unsigned);
      const got = await store.getApproval(unsigned.id);
      expect(got?.requestSignature ?? null).toBeNull();
      expect(got?.decisionSignature ?? null).toBeNull();
    });

    it('prunes by count and by age, keeping pending work', async () => {
      const now = 1_800_000_000_000;
      const recs = Array.from({ length: 10 }, (_, i) => makeAudit({ startedAt: now - (10 - i) * 1000 }));
      await store.appendAudit(recs);
      expect((await store.prune({ maxRecords: 6 }, now)).audit).toBe(4);
      expect((await store.listAudit({}, { order: 'asc' })).records.map((r) => r.id)).toEqual(recs.slice(4).map((r) => r.id));
      expect((await store.prune({ maxAgeMs: 3500 }, now)).audit).toBe(3);
      expect(await store.countAudit()).toBe(3);

      await store.claimIdempotency({ key: 'old-done', fingerprint: 'f', tool: 't', toolCallId: 'c', claimToken: 'x', createdAt: now - 10_000 });
      await store.completeIdempotency('old-done', 'x', { status: 'ok' }, now - 9_000);
      await store.claimIdempotency({ key: 'old-pending', fingerprint: 'f', tool: 't', toolCallId: 'c', claimToken: 'x', createdAt: now - 10_000 });
      const oldPending = makeApproval({ createdAt: now - 10_000 });
      const oldRejected = makeApproval({ createdAt: now - 10_000 });
      await store.createApproval(oldPending);
      await store.createApproval(oldRejected);
      await store.transitionApproval(oldRejected.id, 'pending', 'rejected', { at: now - 9000 });
      const res = await store.prune({ maxAgeMs: 5000 }, now);
      expect(res).toMatchObject({ idempotency: 1, approvals: 1 });
      expect(await store.getIdempotency('old-done')).toBeUndefined();
      expect(await store.getIdempotency('old-pending')).toBeDefined();
      expect(await store.getApproval(oldPending.id)).toBeDefined();
      expect(await store.getApproval(oldRejected.id)).toBeUndefined();
    });

    it('writes through the audit writer in batches with a bounded queue', async () => {
      let maxPending = 0;
      const writer = new AuditWriter(store, { maxQueue: 50, maxBatch: 20 });
      const recs = Array.from({ length: 500 }, () => makeAudit());
      await Promise.all(
        recs.map(async (r) => {
          const { committed } = await writer.submit(r);
          maxPending = Math.max(maxPending, writer.pending);
          await committed;
        }),
      );
      expect(maxPending).toBeLessThanOrEqual(50);
      expect(writer.written).toBe(500);
      expect(await store.countAudit()).toBe(500);
      await writer.close();
      await expectCode(writer.submit(makeAudit()), 'closed');
    });

    it('isolates a bad record in a batch: its neighbours are still written', async () => {
      const errors: string[] = [];
      const writer = new AuditWriter(store, { onError: (_e, r) => errors.push(r.id) });
      const good = [makeAudit(), makeAudit()];
      const bad = makeAudit({ outcome: { n: 1n } as unknown as JsonObject });
      const acks = await Promise.allSettled([writer.record(good[0]!), writer.record(bad), writer.record(good[1]!)]);
      expect(acks.map((a) => a.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(errors).toEqual([bad.id]);
      expect(await store.countAudit()).toBe(2);
      await writer.close();
    });

    it('commits records queued while batches are in flight, in order; a refused one fails alone', async () => {
      const first = makeAudit();
      await store.appendAudit([first]);
      const failed: string[] = [];
      const writer = new AuditWriter(store, { maxBatch: 5, onError: (_e, r) => failed.push(r.id) });
      const recs = Array.from({ length: 60 }, (_, i) => (i === 27 ? makeAudit({ id: first.id }) : makeAudit()));
      const acks: Promise<void>[] = [];
      // A few records per event-loop turn: later ones are queued while earlier batches commit.
      for (let i = 0; i < recs.length; i += 3) {
        for (const r of recs.slice(i, i + 3)) acks.push((await writer.submit(r)).committed);
        await new Promise((r) => setImmediate(r));
      }
      const settled = await Promise.allSettled(acks);
      expect(settled.map((a) => a.status)).toEqual(recs.map((_, i) => (i === 27 ? 'rejected' : 'fulfilled')));
      expect(failed).toEqual([first.id]);
      const { records } = await store.listAudit({}, { order: 'asc', limit: 100 });
      // The refused one's batch is retried record by record after the batches behind it: a set.
      expect(records.map((r) => r.id).sort()).toEqual([first.id, ...recs.filter((_, i) => i !== 27).map((r) => r.id)].sort());
      // Without a refusal, in the order submitted.
      const more = Array.from({ length: 60 }, () => makeAudit({ tool: 'in.order' }));
      const moreAcks: Promise<void>[] = [];
      for (let i = 0; i < more.length; i += 3) {
        for (const r of more.slice(i, i + 3)) moreAcks.push((await writer.submit(r)).committed);
        await new Promise((r) => setImmediate(r));
      }
      await Promise.all(moreAcks);
      const listed = await store.listAudit({ tool: 'in.order' }, { order: 'asc', limit: 100 });
      expect(listed.records.map((r) => r.id)).toEqual(more.map((r) => r.id));
      await writer.close();
    });

    it('hands a record the database refuses to onError with its content as submitted', async () => {
      const first = makeAudit();
      await store.appendAudit([first]);
      const failed: AuditRecord[] = [];
      const writer = new AuditWriter(store, { onError: (_e, r) => failed.push(r) });
      const dup = makeAudit({ id: first.id, outcome: { changed: 'later' } });
      const submitted = structuredClone(dup);
      const { committed } = await writer.submit(dup);
      (dup.outcome as { changed: string }).changed = 'after submit';
      await expect(committed).rejects.toMatchObject({ code: 'store-failure' });
      expect(failed).toHaveLength(1);
      expect(failed[0]).toEqual(submitted);
      await writer.close();
    });

    it('refuses use after close', async () => {
      await store.close();
      await expectCode(store.countAudit(), 'closed');
      await expectCode(store.getIdempotency('k'), 'closed');
      await expectCode(store.appendAudit([makeAudit()]), 'closed');
    });
  });
}
