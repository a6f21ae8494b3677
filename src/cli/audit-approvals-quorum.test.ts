// `tool-envelope audit approvals` on a request that needs two approvers (#38 point 6): approve
// records one approval and says how many more are needed (the same approver twice counts once),
// list and show tell the count, and the second distinct approver (a token with the approver role)
// releases the call, which its owning process then runs once.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { ToolCall, ToolOutcome } from '../core/model.js';
import { osIdentity } from '../governance/identity.js';
import { GovernancePipeline } from '../governance/pipeline.js';
import { compilePolicy } from '../governance/policy.js';
import { tokenDigest } from '../mcp/serve/auth.js';
import { loadOperatorKey } from '../store/operator-key.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import * as audit from './audit.js';
import { runVerb } from './test-support/run-verb.js';

const me = `user:${osIdentity().principal.id}`;
const dir = mkdtempSync(join(tmpdir(), 'te-quorum-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('approve says how many approvals a request still needs; the second distinct approver releases it, and it runs once', async () => {
  const file = join(dir, 'calls.db');
  const store = await openSqliteStore({ path: file, chainKey: false });
  const ran: ToolCall[] = [];
  const execute = async (c: ToolCall): Promise<ToolOutcome> => {
    ran.push(c);
    return { status: 'ok', result: { dropped: true } };
  };
  const policy = compilePolicy({ version: 1, rules: [{ name: 'two-person', match: { tool: 'db.drop' }, effect: 'require-approval', approvers: 2 }] });
  const p = new GovernancePipeline({ store, policy, operatorKey: await loadOperatorKey({ create: true }), executorFor: () => execute });
  try {
    const paused = await p.run(
      {
        tool: 'db.drop',
        ceiling: 'destructive',
        args: { table: 'orders' },
        principalChain: [{ kind: 'agent', id: 'bot' }],
        toolCallId: 'c1',
        runId: 'r1',
        traceId: 't1',
      },
      execute,
    );
    const id = paused.metadata?.approvalId as string;
    const cli = (args: string[], env: Record<string, string> = {}) => runVerb(audit, ['approvals', ...args, '--store', file], { cwd: dir, env });

    const first = await cli(['approve', id]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toBe(`${id}: approval 1 of 2 recorded (${me}); needs 1 more distinct approver\n`);
    // The same approver again counts once.
    expect((await cli(['approve', id])).stdout).toBe(`${id}: approval 1 of 2 recorded (${me}); needs 1 more distinct approver\n`);
    expect((await cli(['list', '--wide'])).stdout).toContain(`1 of 2: ${me}`);
    expect((await cli(['show', id])).stdout).toMatch(new RegExp(`approvals +1 of 2 distinct approvers \\(${me}\\); needs 1 more`));
    expect(JSON.parse((await cli(['show', id, '--format', 'json'])).stdout).approvals).toEqual({ needed: 2, approvedBy: [me], stillNeeded: 1 });
    expect(ran).toEqual([]);

    const tokens = join(dir, 'tokens.yaml');
    writeFileSync(tokens, `tokens:\n  - { sha256: ${tokenDigest('ops-secret')}, principal: "user:ops", roles: [approver] }\n`);
    const second = await cli(['approve', id, '--tokens', tokens], { TOOL_ENVELOPE_TOKEN: 'ops-secret' });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(`${id}: approved by user:ops`);
    expect(await store.getApproval(id)).toMatchObject({ state: 'approved', decidedBy: JSON.stringify([me, 'user:ops']) });
    expect((await p.runApproved(id))?.status).toBe('completed');
    expect(await p.runApproved(id)).toBeUndefined();
    expect(ran).toHaveLength(1);
    expect((await cli(['show', id])).stdout).toMatch(new RegExp(`decided .* by ${me}, user:ops`));
  } finally {
    await p.close();
    await store.close();
  }
});
