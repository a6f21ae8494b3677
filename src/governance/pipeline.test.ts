// The governance pipeline under attack, over a real SQLite file and a real PostgreSQL server:
// forged principal chains, self-approval, edited and inserted approval rows, cross-principal
// idempotency replay. Every emitted envelope is checked against the published schema.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { oracleValidate } from '../../test/oracle.js';
import { encodeContextosResult } from '../core/contracts/contextos.js';
import type { ToolOutcome } from '../core/model.js';
import { createGovernedRuntime, type GovernedRuntime } from '../runtime/governed.js';
import { defineTool } from '../runtime/define.js';
import { createRuntime } from '../runtime/runtime.js';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { describePg, dropSchema, freshSchema } from '../store/test-support/pg.js';
import type { Store } from '../store/types.js';
import { compilePolicy } from './policy.js';
import { repoDeleteTool } from './test-support/repo-delete.js';

const key = operatorKeyFromSecret(Buffer.alloc(32, 9));
const otherKey = operatorKeyFromSecret(Buffer.alloc(32, 4));

function valid(o: ToolOutcome): ToolOutcome {
  expect(oracleValidate('contextos-result', encodeContextosResult(o)).errors).toEqual([]);
  return o;
}

function suite(name: string, open: () => Promise<{ store: Store; cleanup: () => Promise<void> }>): void {
  describe(`governance pipeline under attack: ${name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    let runs: { tool: string; args: unknown }[];
    let g: GovernedRuntime;
    const make = (extra: Partial<Parameters<typeof createGovernedRuntime>[0]> = {}): GovernedRuntime =>
      createGovernedRuntime({
        runtime: createRuntime({
          tools: [
            repoDeleteTool((args) => runs.push({ tool: 'repo.delete', args })),
            defineTool({
              name: 'notes.write',
              description: 'Writes a note.',
              approvalMode: 'local_write',
              input: z.object({ text: z.string() }),
              handler: async (args) => {
                runs.push({ tool: 'notes.write', args });
                return { written: args.text, at: runs.length };
              },
            }),
            defineTool({
              name: 'mail.send',
              description: 'Sends mail for a user.',
              approvalMode: 'delegated',
              handler: async (args) => {
                runs.push({ tool: 'mail.send', args });
                return { sent: true };
              },
            }),
          ],
        }),
        store,
        operatorKey: key,
        ...extra,
      });

    beforeEach(async () => {
      ({ store, cleanup } = await open());
      runs = [];
      g = make();
    });
    afterEach(async () => {
      await g.close();
      await store.close();
      await cleanup();
    });

    it('a declared (unverified) principal never satisfies the delegated gate or an allow rule, and cannot dodge a deny rule', async () => {
      // The caller declares a user with made-up evidence; only the agent entry was verified... none, here.
      const forged = await g.invoke('mail.send', {}, { principalChain: [{ kind: 'user', id: 'ceo' }], verifiedPrincipals: 0, evidenceRefs: ['made-up'] });
      expect(valid(forged)).toMatchObject({ status: 'blocked', error: { code: 'policy-denied' } });
      expect(forged.error?.detail).toContain('not verified');
      const real = await g.invoke(
        'mail.send',
        {},
        { principalChain: [{ kind: 'user', id: 'ceo' }], verifiedPrincipals: 1, evidenceRefs: ['ticket-1'], idempotencyKey: 'mail-1' },
      );
      expect(valid(real).status).toBe('ok');
      expect(runs).toHaveLength(1);

      const policy = compilePolicy({
        version: 1,
        rules: [
          { name: 'no-bot', match: { principalId: 'bot' }, effect: 'deny' },
          { name: 'admins', match: { principalId: 'admin-*' }, effect: 'allow' },
        ],
        default: 'deny',
      });
      const p = make({ policy });
      try {
        const claimedAdmin = await p.invoke(
          'repo.delete',
          { name: 'x' },
          {
            principalChain: [
              { kind: 'agent', id: 'bot-2' },
              { kind: 'agent', id: 'admin-1' },
            ],
            verifiedPrincipals: 1,
          },
        );
        expect(valid(claimedAdmin)).toMatchObject({ status: 'blocked' });
        const botBehindUser = await p.invoke(
          'repo.delete',
          { name: 'x' },
          {
            principalChain: [
              { kind: 'user', id: 'admin-7' },
              { kind: 'agent', id: 'bot' },
            ],
            verifiedPrincipals: 1,
          },
        );
        expect(valid(botBehindUser)).toMatchObject({ status: 'blocked', error: { details: { rule: 'no-bot' } } });
        const admin = await p.invoke(
          'repo.delete',
          { name: 'y' },
          { principalChain: [{ kind: 'user', id: 'admin-7' }], verifiedPrincipals: 1, idempotencyKey: 'del-y' },
        );
        expect(valid(admin).status).toBe('ok');
      } finally {
        await p.close();
      }
      await g.flush();
      const { records } = await store.listAudit({ tool: 'mail.send' }, { order: 'asc' });
      expect(records.map((r) => (r.policyDecision as unknown as { verifiedPrincipals: number }).verifiedPrincipals)).toEqual([0, 1]);
    });

    it("an idempotency key replayed by another principal (or tenant) runs as its own call, never answering with the first one's result", async () => {
      const alice = [{ kind: 'user' as const, id: 'alice', tenant_id: 'acme' }];
      const bob = [{ kind: 'user' as const, id: 'bob', tenant_id: 'acme' }];
      const aliceElsewhere = [{ kind: 'user' as const, id: 'alice', tenant_id: 'other' }];
      const a1 = await g.invoke('notes.write', { text: 'secret of alice' }, { principalChain: alice, idempotencyKey: 'k-1' });
      const a2 = await g.invoke('notes.write', { text: 'secret of alice' }, { principalChain: alice, idempotencyKey: 'k-1' });
      expect(a2.metadata).toMatchObject({ replay: true });
      expect(a2.result).toEqual(a1.result);
      const b = await g.invoke('notes.write', { text: 'bob' }, { principalChain: bob, idempotencyKey: 'k-1' });
      expect(valid(b)).toMatchObject({ status: 'ok', result: { written: 'bob' } });
      expect(b.metadata?.replay).not.toBe(true);
      const t = await g.invoke('notes.write', { text: 'secret of alice' }, { principalChain: aliceElsewhere, idempotencyKey: 'k-1' });
      expect(t.metadata?.replay).not.toBe(true);
      expect(runs.map((r) => (r.args as { text: string }).text)).toEqual(['secret of alice', 'bob', 'secret of alice']);
    });

    it('the requesting principal cannot approve its own call unless the policy allowed it when the call paused', async () => {
      const chain = [
        { kind: 'user' as const, id: 'alice' },
        { kind: 'agent' as const, id: 'planner' },
      ];
      const paused = await g.invoke('repo.delete', { name: 'prod' }, { principalChain: chain });
      const id = paused.metadata!.approvalId as string;
      await expect(g.approve(id, { approver: 'user:alice' })).rejects.toMatchObject({ code: 'approval-forbidden' });
      await expect(g.approve(id, { approver: 'planner' })).rejects.toMatchObject({ code: 'approval-forbidden' });
      expect(runs).toHaveLength(0);
      expect((await store.getApproval(id))?.state).toBe('pending');
      const done = await g.approve(id, { approver: 'user:bob' });
      expect(valid(done)).toMatchObject({ status: 'completed', metadata: { approvedBy: 'user:bob' } });

      const lenient = make({ allowSelfApproval: true });
      try {
        const p2 = await lenient.invoke('repo.delete', { name: 'scratch' }, { principalChain: chain });
        expect((await lenient.approve(p2.metadata!.approvalId as string, { approver: 'user:alice' })).status).toBe('completed');
      } finally {
        await lenient.close();
      }
      expect(runs.map((r) => (r.args as { name: string }).name)).toEqual(['prod', 'scratch']);
    });

    it('edited arguments of a pending approval, a row inserted as approved, an unsigned row, a foreign key: approval-invalid, audited, nothing runs', async () => {
      const chain = [{ kind: 'user' as const, id: 'alice' }];
      const paused = await g.invoke('repo.delete', { name: 'scratch' }, { principalChain: chain });
      const id = paused.metadata!.approvalId as string;
      const row = (await store.getApproval(id))!;
      expect(row.requestSignature).toMatch(/^[0-9a-f]{16}\./);

      // 1. Edit the stored arguments (as someone with write access to the database would), then approve.
      const edited = { ...row, id: `${id}-edited`, callEnvelope: { ...row.callEnvelope, args: { name: 'production' } } };
      await store.createApproval(edited);
      const r1 = await g.approve(edited.id, { approver: 'user:bob' });
      expect(valid(r1)).toMatchObject({ status: 'failed', error: { category: 'elevation', code: 'approval-invalid' } });

      // 2. A row inserted straight into the database as approved, with a copied (now mismatching) signature.
      await store.createApproval({
        ...row,
        id: 'apr_inserted',
        state: 'approved',
        decidedAt: Date.now(),
        decidedBy: 'user:bob',
        decisionSignature: row.requestSignature ?? null,
      });
      const r2 = await g.runApproved('apr_inserted');
      expect(valid(r2!)).toMatchObject({ status: 'failed', error: { code: 'approval-invalid' } });

      // 3. An unsigned row inserted as approved, picked up by the approval worker.
      await store.createApproval({ ...row, id: 'apr_unsigned', state: 'approved', decidedAt: Date.now(), decidedBy: 'user:bob', requestSignature: null });
      const stop = g.watchApprovals({ intervalMs: 20 });
      await expect.poll(async () => (await store.getApproval('apr_unsigned'))?.state, { timeout: 5_000 }).toBe('failed');
      await stop();

      // 4. Approved with a different key (another operator's, or a forger's).
      const forger = make({ operatorKey: otherKey });
      try {
        const r4 = await forger.approve(id, { approver: 'user:mallory' });
        expect(r4).toMatchObject({ status: 'failed', error: { code: 'approval-invalid' } });
      } finally {
        await forger.close();
      }

      expect(runs).toHaveLength(0);
      for (const bad of [edited.id, 'apr_inserted', 'apr_unsigned', id]) {
        expect(await store.getApproval(bad)).toMatchObject({ state: 'failed', outcome: { status: 'failed', error: { code: 'approval-invalid' } } });
      }
      await g.flush();
      const { records } = await store.listAudit({ tool: 'repo.delete', status: 'failed' });
      expect(records.map((r) => r.approvalId).sort()).toEqual([edited.id, 'apr_inserted', 'apr_unsigned', id].sort());
      expect(records.every((r) => r.errorCode === 'approval-invalid')).toBe(true);
    });

    it('a genuine approval verifies and runs once; its row carries both signatures', async () => {
      const paused = await g.invoke('repo.delete', { name: 'old' }, { principalChain: [{ kind: 'user', id: 'alice' }] });
      const id = paused.metadata!.approvalId as string;
      const done = await g.approve(id, { approver: 'user:bob' });
      expect(valid(done).status).toBe('completed');
      expect(await store.getApproval(id)).toMatchObject({
        state: 'completed',
        decidedBy: 'user:bob',
        requestSignature: expect.any(String),
        decisionSignature: expect.any(String),
      });
      expect(runs).toEqual([{ tool: 'repo.delete', args: { name: 'old' } }]);
    });
  });
}

suite('SQLite file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'te-gov-'));
  const store = await openSqliteStore({ path: join(dir, 'gov.db') });
  return { store, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
});

describePg('governance pipeline on PostgreSQL', (url) => {
  suite('PostgreSQL', async () => {
    const schema = freshSchema();
    const store = await openPostgresStore({ connectionString: url, schema });
    return { store, cleanup: () => dropSchema(url, schema) };
  });
});
