import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../test/oracle.js';
import { APPROVAL_MODES, type ApprovalMode, compareApprovalModes, encodeMcec, isToolEnvelopeError, type JsonObject, type Principal } from '../core/index.js';
import { createMemoryStore } from '../store/memory.js';
import type { AuditRecord, Store } from '../store/types.js';
import { defineTool } from './define.js';
import { type GovernedRuntime, createGovernedRuntime } from './governed.js';
import type { PolicyFunction } from '../governance/policy.js';
import { createRuntime } from './runtime.js';

const user: Principal = { kind: 'user', id: 'u1' };
const agent: Principal = { kind: 'agent', id: 'a1' };

function tools(counters: Record<string, number>) {
  const bump = (n: string) => (counters[n] = (counters[n] ?? 0) + 1);
  return [
    defineTool({
      name: 'fs.read',
      description: 'r',
      approvalMode: 'read_only',
      handler: async (a: Record<string, unknown>) => (bump('fs.read'), { read: a.path ?? null }),
    }),
    defineTool({
      name: 'fs.write',
      description: 'w',
      approvalMode: 'local_write',
      handler: async (a: Record<string, unknown>) => {
        bump('fs.write');
        await new Promise((r) => setTimeout(r, 5));
        return { wrote: a.path ?? null, n: counters['fs.write'] ?? 0 };
      },
    }),
    defineTool({ name: 'http.get', description: 'n', approvalMode: 'network', handler: async () => (bump('http.get'), { status: 200 }) }),
    defineTool({
      name: 'repo.delete',
      description: 'd',
      approvalMode: 'destructive',
      handler: async (a: Record<string, unknown>) => (bump('repo.delete'), { deleted: a.name ?? null }),
    }),
    defineTool({
      name: 'repo.explode',
      description: 'd',
      approvalMode: 'destructive',
      handler: async () => {
        bump('repo.explode');
        throw new Error('disk on fire');
      },
    }),
  ];
}

async function auditOf(g: GovernedRuntime, store: Store): Promise<AuditRecord[]> {
  await g.flush();
  return (await store.listAudit({}, { order: 'asc', limit: 10_000 })).records;
}

function expectConformant(records: AuditRecord[]): void {
  for (const r of records) {
    expect(oracleValidate('contextos-call', r.callEnvelope).errors).toEqual([]);
    expect(oracleValidate('contextos-result', r.resultEnvelope).errors).toEqual([]);
    expect(r.resultEnvelope.tool_call_id).toBe(r.callEnvelope.tool_call_id);
  }
}

describe('governed runtime', () => {
  let store: Store;
  let counters: Record<string, number>;
  let g: GovernedRuntime;
  beforeEach(() => {
    store = createMemoryStore();
    counters = {};
    g = createGovernedRuntime({ runtime: createRuntime({ tools: tools(counters) }), store, principalChain: [user, agent] });
  });
  afterEach(async () => {
    await g.close();
    await store.close();
  });

  it('runs an allowed read and audits call, result, principal chain and decision', async () => {
    const o = await g.invoke('fs.read', { path: 'a.txt' }, { evidenceRefs: ['doc:1'] });
    expect(o).toMatchObject({ status: 'ok', result: { read: 'a.txt' }, policyDecisionId: expect.stringMatching(/^pd_/) });
    const [r] = await auditOf(g, store);
    expect(r).toMatchObject({
      tool: 'fs.read',
      status: 'ok',
      category: null,
      toolCallId: o.toolCallId,
      principalChain: [user, agent],
      policyDecision: { id: o.policyDecisionId, effect: 'allow', effectiveMode: 'read_only' },
      callEnvelope: {
        approval_mode_requested: 'read_only',
        approval_mode_effective: 'read_only',
        approval_mode_highest: 'read_only',
        evidence_refs: ['doc:1'],
        policy_decision_id: o.policyDecisionId,
      },
      resultEnvelope: { status: 'ok', output: { read: 'a.txt' }, policy_decision_id: o.policyDecisionId },
    });
    expect(r!.endedAt).toBeGreaterThanOrEqual(r!.startedAt);
    expectConformant([r!]);
  });

  it('logs the outcome as returned: later changes by the caller do not reach the log', async () => {
    const o = await g.invoke('fs.read', { path: 'orig' });
    (o.result as JsonObject).read = 'tampered';
    const [r] = await auditOf(g, store);
    expect(r!.outcome).toMatchObject({ result: { read: 'orig' } });
    expect(r!.resultEnvelope).toMatchObject({ output: { read: 'orig' } });
  });

  it('blocks above the ceiling, on denial, on a throwing or invalid policy — without running the tool', async () => {
    const above = await g.invoke('fs.read', {}, { requestedMode: 'network' });
    expect(above).toMatchObject({
      status: 'blocked',
      error: { category: 'elevation', code: 'policy-denied', detail: expect.stringContaining("exceeds the tool's ceiling") },
    });
    const policies: PolicyFunction[] = [
      () => ({ effect: 'deny', reason: 'nope' }),
      () => {
        throw new Error('policy db down');
      },
      () => ({ effect: 'sure' }) as never,
    ];
    for (const policy of policies) {
      const gp = createGovernedRuntime({ runtime: createRuntime({ tools: tools(counters) }), store, policy });
      const o = await gp.invoke('fs.read', {});
      expect(o.status).toBe('blocked');
      expect(o.error?.category).toBe('elevation');
      await gp.close();
    }
    expect(counters['fs.read']).toBeUndefined();
    // MCEC sees a blocked call as an elevation failure.
    expect(encodeMcec(above)).toMatchObject({ ok: false, error: { category: 'elevation' } });
    // One record from g, one from each policy's runtime (same store).
    const records = await auditOf(g, store);
    expect(records.map((r) => r.status)).toEqual(['blocked', 'blocked', 'blocked', 'blocked']);
    expectConformant(records);
  });

  it('blocks when the policy lowers the mode below what the tool needs', async () => {
    const gp = createGovernedRuntime({ runtime: createRuntime({ tools: tools(counters) }), store, policy: () => ({ effect: 'allow', mode: 'read_only' }) });
    const o = await gp.invoke('fs.write', { path: 'x' }, { idempotencyKey: 'k' });
    expect(o).toMatchObject({ status: 'blocked', error: { detail: expect.stringContaining('needs local_write') } });
    expect(counters['fs.write']).toBeUndefined();
    await gp.close();
  });

  it('requires an idempotency key from local_write up; replays; refuses a reused key', async () => {
    const missing = await g.invoke('fs.write', { path: 'a' });
    expect(missing).toMatchObject({ status: 'error', error: { category: 'invalid-argument', code: 'idempotency-key-required' } });
    expect(counters['fs.write']).toBeUndefined();

    const first = await g.invoke('fs.write', { path: 'a' }, { idempotencyKey: 'w1' });
    expect(first).toMatchObject({ status: 'ok', result: { wrote: 'a', n: 1 } });
    const again = await g.invoke('fs.write', { path: 'a' }, { idempotencyKey: 'w1' });
    expect(again).toMatchObject({ status: 'ok', result: { wrote: 'a', n: 1 }, metadata: { replay: true, originalToolCallId: first.toolCallId } });
    expect(again.toolCallId).not.toBe(first.toolCallId);
    const reused = await g.invoke('fs.write', { path: 'b' }, { idempotencyKey: 'w1' });
    expect(reused).toMatchObject({ status: 'error', error: { category: 'invalid-argument', code: 'idempotency-key-reused' }, toolCallId: expect.any(String) });
    expect(counters['fs.write']).toBe(1);
    const records = await auditOf(g, store);
    expect(records.map((r) => [r.status, r.replay, r.errorCode])).toEqual([
      ['error', false, 'idempotency-key-required'],
      ['ok', false, null],
      ['ok', true, null],
      ['error', false, 'idempotency-key-reused'],
    ]);
    expectConformant(records);
  });

  it('executes 100 simultaneous duplicates once', async () => {
    const outcomes = await Promise.all(Array.from({ length: 100 }, () => g.invoke('fs.write', { path: 'p' }, { idempotencyKey: 'dup' })));
    expect(counters['fs.write']).toBe(1);
    expect(outcomes.every((o) => o.status === 'ok' && (o.result as JsonObject).n === 1)).toBe(true);
    expect(outcomes.filter((o) => o.metadata?.replay === true)).toHaveLength(99);
    expect((await auditOf(g, store)).length).toBe(100);
  });

  it('pauses a destructive call with a persisted request; approving runs it exactly once', async () => {
    const paused = await g.invoke('repo.delete', { name: 'x' }, { idempotencyKey: 'del-x' });
    expect(paused).toMatchObject({
      status: 'paused',
      error: { category: 'elevation', code: 'approval-required' },
      metadata: { approvalId: expect.stringMatching(/^apr_/) },
    });
    expect(counters['repo.delete']).toBeUndefined();
    const id = paused.metadata!.approvalId as string;
    expect(await g.approvals()).toEqual([expect.objectContaining({ id, state: 'pending', tool: 'repo.delete', principalChain: [user, agent] })]);

    // A repeat of the same key gets the same request, not a second one.
    const repeat = await g.invoke('repo.delete', { name: 'x' }, { idempotencyKey: 'del-x' });
    expect(repeat).toMatchObject({ status: 'paused', metadata: { approvalId: id, replay: true } });
    expect(await g.approvals()).toHaveLength(1);

    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => g.approve(id, { approver: `op${i}` })));
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const r of results.filter((x) => x.status === 'rejected')) {
      expect(isToolEnvelopeError((r as PromiseRejectedResult).reason, 'approval-not-pending')).toBe(true);
    }
    const final = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<GovernedRuntime['approve']>>>).value;
    expect(final).toMatchObject({ status: 'completed', result: { deleted: 'x' }, toolCallId: paused.toolCallId, metadata: { approvalId: id } });
    expect(counters['repo.delete']).toBe(1);
    expect(await store.getApproval(id)).toMatchObject({ state: 'completed', outcome: { status: 'completed' } });
    // After the decision, a repeat of the key answers with the final outcome.
    const later = await g.invoke('repo.delete', { name: 'x' }, { idempotencyKey: 'del-x' });
    expect(later).toMatchObject({ status: 'completed', result: { deleted: 'x' }, metadata: { replay: true } });
    expect(counters['repo.delete']).toBe(1);
    await expect(g.approve(id, { approver: 'late' })).rejects.toMatchObject({ code: 'approval-not-pending' });
    await expect(g.approve('apr_missing', { approver: 'x' })).rejects.toMatchObject({ code: 'unknown-approval' });
    await expect(g.approve(id, { approver: '' })).rejects.toMatchObject({ code: 'invalid-option' });
    const records = await auditOf(g, store);
    expect(records.map((r) => r.status)).toEqual(['paused', 'paused', 'completed', 'completed']);
    expect(records[2]!.approvalId).toBe(id);
    expectConformant(records);
  });

  it('reports a failing approved call as failed', async () => {
    const paused = await g.invoke('repo.explode', {});
    const final = await g.approve(paused.metadata!.approvalId as string, { approver: 'alice' });
    expect(final).toMatchObject({ status: 'failed', error: { category: 'internal' }, metadata: { approvedBy: 'alice' } });
    expect(counters['repo.explode']).toBe(1);
  });

  it('rejects: by an approver, and by expiry', async () => {
    const p1 = await g.invoke('repo.delete', { name: 'a' });
    const rejected = await g.reject(p1.metadata!.approvalId as string, { approver: 'bob', reason: 'not today' });
    expect(rejected).toMatchObject({
      status: 'rejected',
      error: { category: 'elevation', code: 'approval-rejected', detail: 'Rejected by bob: not today' },
      toolCallId: p1.toolCallId,
    });
    await expect(g.approve(p1.metadata!.approvalId as string, { approver: 'x' })).rejects.toMatchObject({ code: 'approval-not-pending' });

    const short = createGovernedRuntime({ runtime: createRuntime({ tools: tools(counters) }), store, approvalTtlMs: 1 });
    const p2 = await short.invoke('repo.delete', { name: 'b' });
    const p3 = await short.invoke('repo.delete', { name: 'c' });
    await new Promise((r) => setTimeout(r, 5));
    const expired = await short.approve(p2.metadata!.approvalId as string, { approver: 'slow' });
    expect(expired).toMatchObject({ status: 'rejected', error: { code: 'approval-expired' } });
    expect(await short.expireApprovals()).toBe(1);
    expect(await store.getApproval(p3.metadata!.approvalId as string)).toMatchObject({ state: 'expired', outcome: { status: 'rejected' } });
    expect(counters['repo.delete']).toBeUndefined();
    await short.close();
    const records = await auditOf(g, store);
    expectConformant(records);
    expect(records.filter((r) => r.status === 'rejected')).toHaveLength(3);
  });

  it('passes bad arguments to the runtime as given (refusing those without a JSON form) and still logs a valid call envelope', async () => {
    const notObject = await g.invoke('fs.read', 'a.txt');
    expect(notObject).toMatchObject({ status: 'error', error: { category: 'invalid-argument' } });
    const cyclic: Record<string, unknown> = { path: 'x' };
    cyclic.self = cyclic;
    const odd = await g.invoke('fs.read', { path: 'p', at: new Date(0), n: 10n, hostile: JSON.parse('{"__proto__": {"x": 1}}') });
    expect(odd.status).toBe('ok');
    // A circular argument object has no JSON form for policy and the log to see: it is not run, and
    // the log records what JSON can hold: nothing.
    expect(await g.invoke('fs.read', cyclic)).toMatchObject({ status: 'error', error: { category: 'invalid-argument', code: 'invalid-arguments' } });
    const records = await auditOf(g, store);
    expect(records).toHaveLength(3);
    expect(records[1]!.callEnvelope.args).toEqual({ path: 'p', at: '1970-01-01T00:00:00.000Z', n: '10', hostile: JSON.parse('{"__proto__": {"x": 1}}') });
    expect(records[2]!.callEnvelope.args).toEqual({});
    expect(records[2]!.status).toBe('error');
    expectConformant(records);
    expect(counters['fs.read']).toBe(1);
  });

  it('rejects unknown tools as a library error, like the runtime', async () => {
    await expect(g.invoke('nope', {})).rejects.toMatchObject({ code: 'unknown-tool' });
  });
});

describe('governed runtime: randomised (fast-check, 1000 cases)', () => {
  it('never runs a tool above its effective mode, never above the ceiling', async () => {
    const mode = fc.constantFrom<ApprovalMode>(...APPROVAL_MODES);
    const verdict = fc.oneof(
      fc.record({ effect: fc.constantFrom('allow', 'deny', 'require-approval'), mode: fc.option(mode, { nil: undefined }) }),
      fc.constant('garbage'),
      fc.constant(null),
    );
    const store = createMemoryStore();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(mode, fc.option(mode, { nil: undefined }), verdict, mode, fc.boolean(), async (ceiling, requested, answer, required, thrower) => {
        let ran = 0;
        const name = `t${n++}`;
        const tool = defineTool({ name, description: 'x', approvalMode: ceiling, handler: async () => (ran++, null) });
        const policy: PolicyFunction = () => {
          if (thrower) throw new Error('boom');
          return answer as never;
        };
        const g = createGovernedRuntime({
          runtime: createRuntime({ tools: [tool] }),
          store,
          policy,
          requiredMode: () => required,
          requireIdempotencyKeyFrom: false,
        });
        const o = await g.invoke(name, {}, { ...(requested !== undefined && { requestedMode: requested }), principalChain: [user] });
        await g.close();
        // The ground truth is what was recorded: the decision and the call envelope of this call.
        const [rec] = (await store.listAudit({ toolCallId: o.toolCallId! })).records;
        expect(rec).toBeDefined();
        const effective = rec!.policyDecision?.effectiveMode ?? null;
        if (effective !== null) {
          expect(compareApprovalModes(effective, ceiling)).toBeLessThanOrEqual(0);
          expect(rec!.callEnvelope.approval_mode_effective).toBe(effective);
        }
        if (ran > 0) {
          expect(o.status).toBe('ok');
          expect(rec!.policyDecision?.effect).toBe('allow');
          expect(effective).not.toBeNull();
          expect(compareApprovalModes(required, effective!)).toBeLessThanOrEqual(0);
        } else {
          expect(['blocked', 'paused']).toContain(o.status);
        }
        expect(ran).toBeLessThanOrEqual(1);
      }),
      { numRuns: 1000 },
    );
    await store.close();
  });
});
