// Joining a waiting approval request through the gateway, end to end (#37): the SDK's Client with
// no idempotency key → the gateway → test-support/counting-server.mjs (logs every execution to a
// file), a real SQLite file, and the CLI's approval verb run in-process. A second gateway on the same
// store serves another verified principal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../../test/oracle.js';
import * as audit from '../../cli/audit.js';
import { runVerb } from '../../cli/test-support/run-verb.js';
import { Gateway } from './gateway.js';
import { GatewayGovernance } from './governor.js';
import { executions } from '../test-support/count-file.js';
import { type CountingRig, countingUpstream, useCountingRig } from '../test-support/counting-rig.js';
import { clientFor, silent } from '../test-support/harness.js';

const deletions = (file: string): unknown[] => executions(file, 'delete_item');

interface Served {
  gw: Gateway;
  governance: GatewayGovernance;
  client: Client;
}

/** A gateway whose sessions are the verified `user:<id>` (the operator's --principal), on the rig's shared store. */
async function serve(rig: CountingRig, user: string): Promise<Served> {
  const governance = new GatewayGovernance({ store: rig.store, approvalPollMs: 50, principalChain: [{ kind: 'user', id: user }] });
  const gw = await Gateway.start({
    upstreams: [countingUpstream(rig.count)],
    dialect: 'contextos',
    governance,
    log: silent,
  });
  return { gw, governance, client: await clientFor(gw.createServer()) };
}

async function call(s: Served, id: string): Promise<{ status: string; approvalId: unknown; metadata: Record<string, unknown>; output: unknown }> {
  const r = (await s.client.callTool({ name: 'delete_item', arguments: { id } })) as CallToolResult;
  expect(oracleValidate('contextos-result', r.structuredContent).errors).toEqual([]);
  const env = r.structuredContent as { status: string; metadata?: Record<string, unknown>; output?: unknown };
  return { status: env.status, approvalId: env.metadata?.approvalId, metadata: env.metadata ?? {}, output: env.output };
}

describe('an identical call joins the waiting approval request (no idempotency key)', () => {
  const rig = useCountingRig();
  let alice: Served;
  let bob: Served;
  beforeAll(async () => {
    alice = await serve(rig, 'alice');
    bob = await serve(rig, 'bob');
  });
  afterAll(async () => {
    for (const s of [alice, bob]) {
      await s?.client.close();
      await s?.gw.close();
    }
  });

  it('three repeats wait on one request; after a CLI approval the next repeat gets the completed outcome, and the tool ran once', async () => {
    const first = await call(alice, 'x');
    expect(first.status).toBe('paused');
    expect(first.approvalId).toMatch(/^apr_/);
    for (let i = 0; i < 2; i++) {
      const again = await call(alice, 'x');
      expect(again.status).toBe('paused');
      expect(again.approvalId).toBe(first.approvalId);
    }
    const pending = (await rig.store.listApprovals({ state: 'pending', tool: 'delete_item' })).approvals;
    expect(pending.map((a) => a.id)).toEqual([first.approvalId]);
    expect(deletions(rig.count)).toEqual([]);

    const cli = await runVerb(audit, ['approvals', 'approve', first.approvalId as string, '--store', rig.db, '--wait', '30']);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    expect((await rig.store.getApproval(first.approvalId as string))?.state).toBe('completed');

    const done = await call(alice, 'x');
    expect(done.status).toBe('completed');
    expect(done.output).toEqual({ deleted: 'x' });
    expect(done.metadata).toMatchObject({ replay: true, approvalId: first.approvalId });
    // And once more: the kept decision answers again, and nothing else ran or opened.
    expect((await call(alice, 'x')).status).toBe('completed');
    expect(deletions(rig.count)).toEqual([{ id: 'x' }]);
    expect((await rig.store.listApprovals({ tool: 'delete_item' })).approvals).toHaveLength(1);
  });

  it('other arguments open a new request; another principal never joins one', async () => {
    const waiting = await call(alice, 'y');
    expect(waiting.status).toBe('paused');
    const other = await call(alice, 'z');
    expect(other.status).toBe('paused');
    expect(other.approvalId).not.toBe(waiting.approvalId);

    // Bob's identical calls: his own request, waiting (alice's 'x' is completed, 'y' pending), joined by his repeat.
    const bobX = await call(bob, 'x');
    expect(bobX.status).toBe('paused');
    const bobY = await call(bob, 'y');
    expect(bobY.status).toBe('paused');
    expect(bobY.approvalId).not.toBe(waiting.approvalId);
    expect((await call(bob, 'y')).approvalId).toBe(bobY.approvalId);
    const bobs = await rig.store.getApproval(bobY.approvalId as string);
    expect(bobs?.principalChain[0]).toMatchObject({ kind: 'user', id: 'bob' });
    expect(deletions(rig.count)).toEqual([{ id: 'x' }]);
  });

  it('concurrent identical calls of one principal open one request', async () => {
    const all = await Promise.all([0, 1, 2, 3].map(() => call(alice, 'w')));
    expect(all.every((r) => r.status === 'paused')).toBe(true);
    expect(new Set(all.map((r) => r.approvalId)).size).toBe(1);
  });
});
