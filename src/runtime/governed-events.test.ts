// The governed runtime's approval events (#37): what an in-process agent (a framework adapter's
// runtime) is told, on a real SQLite file, with a counting tool: requested, approved, run on
// approval; rejected; a request approved by another process and found after the run window expires
// without running, and is told once.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApprovalEvent } from '../governance/approval-events.js';
import { signAndApprove } from '../governance/approvals.js';
import { openStore } from '../store/index.js';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import type { Store } from '../store/types.js';
import { defineTool } from './define.js';
import { createGovernedRuntime } from './governed.js';
import { createRuntime } from './runtime.js';

const key = operatorKeyFromSecret(Buffer.alloc(32, 9));
let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

async function rig(options: { approvalRunWindowMs?: number } = {}) {
  store = await openStore(join(mkdtempSync(join(tmpdir(), 'te-events-')), 'audit.db'));
  const ran: unknown[] = [];
  const events: ApprovalEvent[] = [];
  const purge = defineTool({
    name: 'repo.purge',
    description: 'destructive',
    approvalMode: 'destructive',
    handler: async (a: Record<string, unknown>) => (ran.push(a), { purged: true }),
  });
  const governed = createGovernedRuntime({
    runtime: createRuntime({ tools: [purge] }),
    store,
    principalChain: [{ kind: 'user', id: 'u1' }],
    operatorKey: key,
    onApprovalEvent: (e) => events.push(e),
    ...options,
  });
  return { governed, ran, events, store };
}

describe('the governed runtime tells its approval events', () => {
  it('requested, then approved and run on approval; rejected on rejection; the arguments as the log stores them', async () => {
    const { governed, ran, events } = await rig();
    const paused = await governed.invoke('repo.purge', { name: 'a', password: 'p4ss-never-told' });
    expect(paused.status).toBe('paused');
    const id = paused.metadata?.approvalId as string;
    expect(events.map((e) => e.event)).toEqual(['requested']);
    expect(events[0]).toMatchObject({ approvalId: id, tool: 'repo.purge', args: { name: 'a', password: '[REDACTED]' }, decidedBy: null });
    expect((await governed.approve(id, { approver: 'user:boss' })).status).toBe('completed');
    expect(events.map((e) => [e.event, e.decidedBy, e.status])).toEqual([
      ['requested', null, null],
      ['approved', 'user:boss', null],
      ['run', 'user:boss', 'completed'],
    ]);
    const other = await governed.invoke('repo.purge', { name: 'b' });
    await governed.reject(other.metadata?.approvalId as string, { approver: 'user:boss', reason: 'no' });
    expect(events.at(-1)).toMatchObject({ event: 'rejected', approvalId: other.metadata?.approvalId, decidedBy: 'user:boss' });
    expect(ran).toEqual([{ name: 'a', password: 'p4ss-never-told' }]);
    expect(JSON.stringify(events)).not.toContain('p4ss-never-told');
  });

  it('a request approved elsewhere and found after the run window expires, runs nothing, and is told once', async () => {
    const { governed, ran, events, store: s } = await rig({ approvalRunWindowMs: 100 });
    const paused = await governed.invoke('repo.purge', { name: 'late' });
    const id = paused.metadata?.approvalId as string;
    // Approved as the CLI does, by another process; then no worker runs it within the window.
    const request = await s.getApproval(id);
    expect(await signAndApprove(s, key, request!, { approver: 'user:boss' })).toHaveProperty('won');
    await new Promise((r) => setTimeout(r, 250));
    expect(await governed.runApproved(id)).toMatchObject({ status: 'rejected', error: { code: 'approval-expired' } });
    expect(await governed.runApproved(id)).toBeUndefined();
    expect((await s.getApproval(id))?.state).toBe('expired');
    expect(ran).toEqual([]);
    expect(events.filter((e) => e.event === 'expired')).toEqual([expect.objectContaining({ approvalId: id, status: 'approved' })]);
  });
});
