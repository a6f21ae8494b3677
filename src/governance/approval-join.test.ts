// Joining a waiting approval request, at the pipeline (a governed runtime over a real SQLite file):
// what the gateway test (mcp/gateway/approval-join.test.ts) cannot set up, an unverified principal
// and a rejected request.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGovernedRuntime, type GovernedRuntime } from '../runtime/governed.js';
import { createRuntime } from '../runtime/runtime.js';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { Store } from '../store/types.js';
import { joinKey } from './approval-join.js';
import { repoDeleteTool } from './test-support/repo-delete.js';

describe('approval join (governed runtime, SQLite file)', () => {
  let dir: string;
  let store: Store;
  let g: GovernedRuntime;
  let runs: unknown[];
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'te-join-'));
    store = await openSqliteStore({ path: join(dir, 'audit.db') });
    runs = [];
    g = createGovernedRuntime({
      runtime: createRuntime({
        tools: [repoDeleteTool((args) => runs.push(args))],
      }),
      store,
      operatorKey: operatorKeyFromSecret(Buffer.alloc(32, 7)),
    });
  });
  afterEach(async () => {
    await g.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const alice = { principalChain: [{ kind: 'user' as const, id: 'alice' }], verifiedPrincipals: 1 };

  it('a declared (unverified) principal never joins: each repeat opens its own request', async () => {
    const declared = { principalChain: [{ kind: 'user' as const, id: 'alice' }], verifiedPrincipals: 0 };
    const a = await g.invoke('repo.delete', { name: 'r' }, declared);
    const b = await g.invoke('repo.delete', { name: 'r' }, declared);
    expect([a.status, b.status]).toEqual(['paused', 'paused']);
    expect(b.metadata?.approvalId).not.toBe(a.metadata?.approvalId);
    // Nor does a verified alice join the declared one's request.
    const verified = await g.invoke('repo.delete', { name: 'r' }, alice);
    expect([a.metadata?.approvalId, b.metadata?.approvalId]).not.toContain(verified.metadata?.approvalId);
  });

  it('once rejected, an identical repeat gets the rejection as a replay and runs nothing', async () => {
    const paused = await g.invoke('repo.delete', { name: 'r' }, alice);
    const approvalId = paused.metadata?.approvalId as string;
    await g.reject(approvalId, { approver: 'user:bob', reason: 'not today' });
    const again = await g.invoke('repo.delete', { name: 'r' }, alice);
    expect(again).toMatchObject({ status: 'rejected', metadata: { replay: true, approvalId } });
    expect(runs).toEqual([]);
    expect((await store.listApprovals({ tool: 'repo.delete' })).approvals).toHaveLength(1);
  });

  it('the join key: verified head, tool, arguments digest (any key order), idempotency key', () => {
    const call = { principalChain: [{ kind: 'user' as const, id: 'alice' }], capabilityId: 'repo.delete', args: { a: 1, b: 2 } };
    expect(joinKey(call, 0)).toBeUndefined();
    expect(joinKey({ ...call, principalChain: [] }, 1)).toBeUndefined();
    expect(joinKey({ ...call, args: { b: 2, a: 1 } }, 1)).toBe(joinKey(call, 1));
    expect(joinKey({ ...call, args: { a: 1, b: 3 } }, 1)).not.toBe(joinKey(call, 1));
    expect(joinKey({ ...call, capabilityId: 'repo.archive' }, 1)).not.toBe(joinKey(call, 1));
    expect(joinKey({ ...call, idempotencyKey: 'k' }, 1)).not.toBe(joinKey(call, 1));
    expect(joinKey({ ...call, principalChain: [{ kind: 'user', id: 'alice', tenant_id: 't2' }] }, 1)).not.toBe(joinKey(call, 1));
  });
});
