// The two-person rule (#38 point 6) through the governance pipeline on real stores: a rule with
// `approvers: 2` runs its call only after two distinct approvers, none from the call's chain; the
// same approver twice counts once; one rejection ends it; and two approvers racing from two
// processes on one PostgreSQL database run the call exactly once.
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ToolCall, ToolOutcome } from '../core/model.js';
import { createMemoryStore } from '../store/memory.js';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { describePg, freshSchemas } from '../store/test-support/pg.js';
import type { Store } from '../store/types.js';
import { GovernancePipeline } from './pipeline.js';
import type { GovernedCall } from './pipeline-types.js';
import { compilePolicy } from './policy.js';

const SECRET = Buffer.alloc(32, 7);
const operatorKey = operatorKeyFromSecret(SECRET);
const policy = compilePolicy({
  version: 1,
  rules: [{ name: 'two-person', match: { tool: 'db.drop' }, effect: 'require-approval', approvers: 2, selfApproval: true }],
});
let n = 0;
const call = (): GovernedCall => {
  n++;
  return {
    tool: 'db.drop',
    ceiling: 'destructive',
    args: { table: `t${n}` },
    principalChain: [
      { kind: 'user', id: 'alice' },
      { kind: 'agent', id: 'bot' },
    ],
    toolCallId: `c${n}`,
    runId: `r${n}`,
    traceId: `t${n}`,
  };
};

function suite(name: string, open: () => Promise<Store>): void {
  describe(`two-person rule: ${name}`, () => {
    const setup = async () => {
      const store = await open();
      const ran: string[] = [];
      const execute = async (c: ToolCall): Promise<ToolOutcome> => {
        ran.push(String(c.args.table));
        return { status: 'ok', result: { dropped: String(c.args.table) } };
      };
      const p = new GovernancePipeline({ store, policy, operatorKey, executorFor: () => execute });
      const paused = await p.run(call(), execute);
      expect(paused.status).toBe('paused');
      return { store, p, ran, id: paused.metadata?.approvalId as string };
    };

    it('one approval does not run the call; the same approver twice counts once; the second distinct approver runs it once', async () => {
      const { store, p, ran, id } = await setup();
      try {
        const first = await p.approve(id, { approver: 'user:bob' });
        expect(first).toMatchObject({ status: 'paused', metadata: { approvalId: id, approvedBy: ['user:bob'], approvalsNeeded: 2 } });
        expect(first.error?.detail).toMatch(/waiting for 1 more distinct approver/);
        expect((await p.approve(id, { approver: 'user:bob' })).metadata).toMatchObject({ approvedBy: ['user:bob'] });
        // The caller (and its agent) may not be one of the two, although the rule allows self-approval for one.
        await expect(p.approve(id, { approver: 'user:alice' })).rejects.toMatchObject({ code: 'approval-forbidden' });
        await expect(p.approve(id, { approver: 'agent:bot' })).rejects.toMatchObject({ code: 'approval-forbidden' });
        expect(ran).toEqual([]);
        expect((await store.getApproval(id))?.state).toBe('pending');
        const done = await p.approve(id, { approver: 'user:carol', reason: 'ticket OPS-9' });
        expect(done).toMatchObject({ status: 'completed', metadata: { approvedBy: ['user:bob', 'user:carol'] } });
        expect(ran).toHaveLength(1);
        const a = await store.getApproval(id);
        expect(a).toMatchObject({ state: 'completed', decidedBy: '["user:bob","user:carol"]' });
        expect((await store.approvalVotes.list(id)).map((v) => v.approver)).toEqual(['user:bob', 'user:carol']);
        await expect(p.approve(id, { approver: 'user:dave' })).rejects.toMatchObject({ code: 'approval-not-pending' });
        expect(await p.runApproved(id)).toBeUndefined();
        expect(ran).toHaveLength(1);
      } finally {
        await p.close();
        await store.close();
      }
    });

    it('one rejection ends it, whatever approvals came before', async () => {
      const { store, p, ran, id } = await setup();
      try {
        await p.approve(id, { approver: 'user:bob' });
        expect((await p.reject(id, { approver: 'user:dave', reason: 'no' })).status).toBe('rejected');
        await expect(p.approve(id, { approver: 'user:carol' })).rejects.toMatchObject({ code: 'approval-not-pending' });
        // A vote that comes after the end is not recorded.
        expect((await store.approvalVotes.add({ approvalId: id, approver: 'user:erin', at: 1, reason: null, signature: 'x.y' })).added).toBe(false);
        expect(ran).toEqual([]);
      } finally {
        await p.close();
        await store.close();
      }
    });

    it('an approved row naming one approver for a request that needs two does not run', async () => {
      const { store, p, ran, id } = await setup();
      try {
        // Signed with the operator key, as a one-approver decision would be: the count is checked at run time too.
        const { approvalFacts, signApprovalDecision } = await import('./approval-signature.js');
        const { decodeContextosCall } = await import('../core/contracts/contextos-call.js');
        const a = (await store.getApproval(id))!;
        const by = '["user:bob"]';
        await store.transitionApproval(id, 'pending', 'approved', {
          at: Date.now(),
          by,
          signature: signApprovalDecision(operatorKey, approvalFacts(a, decodeContextosCall(a.callEnvelope)), by),
        });
        const o = await p.runApproved(id);
        expect(o?.error?.code).toBe('approval-invalid');
        expect(ran).toEqual([]);
      } finally {
        await p.close();
        await store.close();
      }
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'te-quorum-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

suite('memory', async () => createMemoryStore());
suite('SQLite', async () => openSqliteStore({ path: join(dir, `${++n}.db`), chainKey: false }));

/** A replica: a pipeline on the shared database that approves as one approver on 'go' while its approval worker polls. */
const REPLICA = join(dir, 'replica.mts');
writeFileSync(
  REPLICA,
  `import { appendFileSync } from 'node:fs';
const [url, schema, approver, id, ranFile] = process.argv.slice(2);
const { openPostgresStore } = await import(${JSON.stringify(new URL('../store/postgres/index.ts', import.meta.url).pathname)});
const { operatorKeyFromSecret } = await import(${JSON.stringify(new URL('../store/operator-key.ts', import.meta.url).pathname)});
const { GovernancePipeline } = await import(${JSON.stringify(new URL('./pipeline.ts', import.meta.url).pathname)});
const store = await openPostgresStore({ connectionString: url, schema, chainKey: false });
const execute = async (call) => { appendFileSync(ranFile, process.pid + '\\n'); return { status: 'ok', result: { dropped: call.args.table } }; };
const p = new GovernancePipeline({ store, operatorKey: operatorKeyFromSecret(Buffer.from(${JSON.stringify(SECRET.toString('hex'))}, 'hex')), executorFor: () => execute });
const stop = p.watchApprovals({ intervalMs: 10 });
process.send('ready');
await new Promise((r) => process.once('message', r));
let result;
try { result = (await p.approve(id, { approver })).status; } catch (e) { result = e.code ?? String(e); }
await new Promise((r) => setTimeout(r, 300));
await stop();
await p.close();
await store.close();
process.send(result);
`,
);

describePg('two-person rule: PostgreSQL', (url) => {
  const fresh = freshSchemas(url);
  suite('PostgreSQL', async () => openPostgresStore({ connectionString: url, schema: fresh(), chainKey: false }));

  it('two distinct approvers racing on two replicas run the call exactly once (5 rounds)', async () => {
    const schema = fresh();
    const store = await openPostgresStore({ connectionString: url, schema, chainKey: false });
    const p = new GovernancePipeline({ store, policy, operatorKey, audit: false });
    try {
      for (let round = 0; round < 5; round++) {
        const id = (await p.run(call(), async () => ({ status: 'ok' }))).metadata?.approvalId as string;
        const ranFile = join(dir, `ran-${round}.log`);
        writeFileSync(ranFile, '');
        const kids = ['user:bob', 'user:carol'].map((approver) =>
          fork(REPLICA, [url, schema, approver, id, ranFile], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
        );
        await Promise.all(kids.map((k) => new Promise((r) => k.once('message', r))));
        const results = kids.map((k) => new Promise<string>((r) => k.once('message', (m) => r(String(m)))));
        for (const k of kids) k.send('go');
        const got = (await Promise.all(results)).sort();
        // Each approval was recorded first (paused), completed the count and ran the call (completed), or
        // found it decided or its run claimed by the other replica's approval worker (approval-not-pending);
        // never both still waiting.
        for (const r of got) expect(['completed', 'paused', 'approval-not-pending']).toContain(r);
        expect(got).not.toEqual(['paused', 'paused']);
        expect(readFileSync(ranFile, 'utf8').trim().split('\n')).toHaveLength(1);
        expect(await store.getApproval(id)).toMatchObject({ state: 'completed' });
      }
    } finally {
      await p.close();
      await store.close();
    }
  });
});
