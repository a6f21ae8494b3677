// Waiting in the call (#37 Deliver 2), end to end: the SDK's Client (no idempotency key) → an
// in-process gateway with approvalWaitMs 5000 (`--approval-wait 5000`) → test-support/counting-server.mjs
// (logs every execution to a file), a real SQLite file, and the CLI's approval verb run in-process
// while the call is held open.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../../test/oracle.js';
import * as audit from '../../cli/audit.js';
import { runVerb } from '../../cli/test-support/run-verb.js';
import { APPROVAL_WAIT_META } from './approval-wait.js';
import { Gateway } from './gateway.js';
import { GatewayGovernance } from './governor.js';
import { executions } from '../test-support/count-file.js';
import { countingUpstream, useCountingRig } from '../test-support/counting-rig.js';
import { clientFor, silent } from '../test-support/harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: string;
  metadata: Record<string, unknown>;
  output: unknown;
}

function envelopeOf(r: CallToolResult): Answer {
  expect(oracleValidate('contextos-result', r.structuredContent).errors).toEqual([]);
  const env = r.structuredContent as { status: string; metadata?: Record<string, unknown>; output?: unknown };
  return { status: env.status, metadata: env.metadata ?? {}, output: env.output };
}

describe('a paused call held open for its decision (--approval-wait 5000)', () => {
  const rig = useCountingRig();
  let gw: Gateway;
  let client: Client;
  beforeAll(async () => {
    const governance = new GatewayGovernance({ store: rig.store, approvalPollMs: 50, approvalWaitMs: 5000, principalChain: [{ kind: 'user', id: 'alice' }] });
    gw = await Gateway.start({
      upstreams: [countingUpstream(rig.count)],
      dialect: 'contextos',
      governance,
      log: silent,
    });
    client = await clientFor(gw.createServer());
  });
  afterAll(async () => {
    await client?.close();
    await gw?.close();
  });

  /** The one pending request of `id`, once the held call has opened it. */
  async function pendingFor(id: string): Promise<string> {
    for (;;) {
      const pending = (await rig.store.listApprovals({ state: 'pending', tool: 'delete_item' })).approvals;
      const mine = pending.find((a) => JSON.stringify(a.callEnvelope).includes(`"id":"${id}"`));
      if (mine) return mine.id;
      await sleep(20);
    }
  }

  it('approved after 1 s: the first call itself answers completed, with progress notifications on the way; the tool ran once', async () => {
    const progress: Progress[] = [];
    const held = client.callTool({ name: 'delete_item', arguments: { id: 'a' } }, undefined, { onprogress: (p) => progress.push(p) });
    const approvalId = await pendingFor('a');
    await sleep(1000);
    const cli = await runVerb(audit, ['approvals', 'approve', approvalId, '--store', rig.db, '--wait', '30']);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const done = envelopeOf((await held) as CallToolResult);
    expect(done.status).toBe('completed');
    expect(done.output).toEqual({ deleted: 'a' });
    // Its own call's outcome, not a replay of another's.
    expect(done.metadata.replay).toBeUndefined();
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress[0]).toMatchObject({ total: 5000, message: `Waiting for an approver (${approvalId}): pending` });
    expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress)].sort((x, y) => x - y));
    expect(executions(rig.count, 'delete_item')).toEqual([{ id: 'a' }]);
  });

  it('not approved in time: approval-required, as without the wait; nothing ran', async () => {
    const r = envelopeOf((await client.callTool({ name: 'delete_item', arguments: { id: 'b' } })) as CallToolResult);
    expect(r.status).toBe('paused');
    // ContextOS keeps the structured error in metadata.error.
    expect(r.metadata.error).toMatchObject({ category: 'elevation', code: 'approval-required' });
    expect(r.metadata.approvalId).toMatch(/^apr_/);
    expect((await rig.store.getApproval(r.metadata.approvalId as string))?.state).toBe('pending');
    expect(executions(rig.count, 'delete_item')).toEqual([{ id: 'a' }]);
  });

  it("a client's _meta hint shortens the wait, and a rejection within it answers rejected", async () => {
    const short = await client.callTool({ name: 'delete_item', arguments: { id: 'c' }, _meta: { [APPROVAL_WAIT_META]: 100 } });
    expect(envelopeOf(short as CallToolResult).status).toBe('paused');
    // The repeat joins the waiting request and waits on it: rejected meanwhile, it answers rejected.
    const held = client.callTool({ name: 'delete_item', arguments: { id: 'c' } });
    const approvalId = await pendingFor('c');
    await sleep(300);
    const cli = await runVerb(audit, ['approvals', 'reject', approvalId, '--store', rig.db]);
    expect(cli.code).toBe(0);
    const rejected = envelopeOf((await held) as CallToolResult);
    expect(rejected.status).toBe('rejected');
    expect(rejected.metadata).toMatchObject({ replay: true });
    expect(executions(rig.count, 'delete_item')).toEqual([{ id: 'a' }]);
  });
});
