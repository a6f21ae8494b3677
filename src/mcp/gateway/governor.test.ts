// Governance through the gateway, end to end: the SDK's Client → the gateway → a real MCP server
// (test-support/counting-server.mjs) that logs every execution to a file, a real SQLite store, and
// the approval verb of the CLI run in-process. Every envelope is checked by the oracle.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../../test/oracle.js';
import * as audit from '../../cli/audit.js';
import { runVerb } from '../../cli/test-support/run-verb.js';
import { contracts } from '../../core/contracts/registry.js';
import { compilePolicy } from '../../governance/policy.js';
import { openStore } from '../../store/index.js';
import type { Store } from '../../store/types.js';
import type { Dialect } from '../envelope.js';
import { Gateway } from './gateway.js';
import { META_KEYS } from '../wire/meta-keys.js';
import { osIdentity } from '../../governance/identity.js';
import { GatewayGovernance, parsePrincipalChain } from './governor.js';
import { clientFor, repoRoot, silent, tempDir } from '../test-support/harness.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');

/** What the upstream executed, read from its own log. */
function executions(file: string, tool?: string): { tool: string; args: Record<string, unknown> }[] {
  if (!existsSync(file)) return [];
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { tool: string; args: Record<string, unknown> });
  return tool ? lines.filter((l) => l.tool === tool) : lines;
}

function envelopeOf(dialect: Dialect, r: unknown): Record<string, unknown> {
  const result = r as CallToolResult;
  const verdict = oracleValidate(dialect === 'contextos' ? 'contextos-result' : dialect, result.structuredContent);
  expect(verdict.errors, JSON.stringify(result.structuredContent)).toEqual([]);
  return result.structuredContent as Record<string, unknown>;
}

interface Setup {
  gw: Gateway;
  governance: GatewayGovernance;
  client: Client;
  store: Store;
  db: string;
  count: string;
}

async function setup(dialect: Dialect, extra: { requireIdempotencyKeyFrom?: 'local_write' } = {}): Promise<Setup> {
  const dir = tempDir();
  const db = join(dir, 'audit.db');
  const count = join(dir, 'count.jsonl');
  const store = await openStore(db);
  const governance = new GatewayGovernance({
    store,
    policy: compilePolicy({ version: 1, rules: [{ name: 'no-purge', match: { tool: 'purge_all' }, effect: 'deny', reason: 'never purge' }] }),
    approvalPollMs: 50,
    // The operator's --principal: the verified identity of these unauthenticated sessions.
    principalChain: [{ kind: 'user', id: 'u-42' }],
    ...extra,
  });
  const gw = await Gateway.start({
    upstreams: [{ name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: count } }],
    dialect,
    governance,
    log: silent,
  });
  const client = await clientFor(gw.createServer());
  return { gw, governance, client, store, db, count };
}

async function teardown(s: Setup | undefined): Promise<void> {
  await s?.client.close();
  await s?.gw.close();
  await s?.store.close();
}

describe('gateway governance (ContextOS envelopes, SQLite store)', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setup('contextos');
  });
  afterAll(() => teardown(s));

  it('publishes the resolved modes', async () => {
    const { tools } = await s.client.listTools();
    const mode = (n: string) => tools.find((t) => t.name === n)?._meta?.[META_KEYS.approvalMode];
    expect([mode('read_notes'), mode('write_note'), mode('delete_item'), mode('purge_all')]).toEqual([
      'read_only',
      'local_write',
      'destructive',
      'destructive',
    ]);
  });

  it('blocks a denied call before it reaches the upstream, and records it', async () => {
    const r = await s.client.callTool({ name: 'purge_all', arguments: {} });
    const env = envelopeOf('contextos', r);
    expect(r.isError).toBe(true);
    expect(env.status).toBe('blocked');
    expect(String(env.error)).toContain('never purge');
    expect(env.policy_decision_id).toMatch(/^pd_/);
    // The same outcome in MCEC: elevation, not agent-recoverable.
    const mcec = contracts.mcec.encode(contracts.contextos.decode(env)) as { ok: boolean; error: { category: string; code: string } };
    expect(oracleValidate('mcec', mcec).valid).toBe(true);
    expect(mcec.error).toMatchObject({ category: 'elevation', code: 'policy-denied' });
    expect(executions(s.count, 'purge_all')).toHaveLength(0);
    await s.governance.flush();
    const { records } = await s.store.listAudit({ tool: 'purge_all' });
    expect(records.map((x) => x.status)).toEqual(['blocked']);
    expect(records[0]!.policyDecision).toMatchObject({ effect: 'deny', rule: 'no-purge' });
    expect(oracleValidate('contextos-call', records[0]!.callEnvelope).valid).toBe(true);
  });

  it('blocks a call that asks for an unknown mode or a mode below what the tool needs', async () => {
    for (const requested of ['bogus', 'read_only']) {
      const r = await s.client.callTool({ name: 'write_note', arguments: { text: 'nope' }, _meta: { [META_KEYS.requestedMode]: requested } });
      expect(envelopeOf('contextos', r).status).toBe('blocked');
    }
    expect(executions(s.count, 'write_note').filter((e) => e.args.text === 'nope')).toHaveLength(0);
  });

  it('pauses a destructive call; approval through the CLI runs it exactly once and logs the final envelope', async () => {
    const key = 'cleanup-1:item-a';
    const r = await s.client.callTool({ name: 'delete_item', arguments: { id: 'a' }, _meta: { [META_KEYS.idempotencyKey]: key } });
    const env = envelopeOf('contextos', r);
    expect(env.status).toBe('paused');
    const approvalId = (env.metadata as { approvalId?: string }).approvalId!;
    expect(approvalId).toMatch(/^apr_/);
    expect(String(env.error)).toContain(approvalId);
    expect(executions(s.count, 'delete_item')).toHaveLength(0);
    expect((await s.store.getApproval(approvalId))?.state).toBe('pending');

    // A retry with the same key while pending gets the same request back, not a second one.
    const again = envelopeOf('contextos', await s.client.callTool({ name: 'delete_item', arguments: { id: 'a' }, _meta: { [META_KEYS.idempotencyKey]: key } }));
    expect(again.status).toBe('paused');
    expect((again.metadata as { approvalId?: string }).approvalId).toBe(approvalId);

    // The approver is the OS user running the CLI, signing with the operator key.
    const cli = await runVerb(audit, ['approvals', 'approve', approvalId, '--store', s.db, '--wait', '30']);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const approval = await s.store.getApproval(approvalId);
    expect(approval?.state).toBe('completed');
    expect(approval?.decidedBy).toBe(`user:${osIdentity().principal.id}`);
    expect(executions(s.count, 'delete_item')).toEqual([{ tool: 'delete_item', args: { id: 'a' } }]);

    // Several more polls of the approval worker: still exactly one execution.
    await new Promise((r) => setTimeout(r, 300));
    expect(executions(s.count, 'delete_item')).toHaveLength(1);

    await s.governance.flush();
    const { records } = await s.store.listAudit({ tool: 'delete_item' });
    const final = records.find((x) => x.status === 'completed');
    expect(final).toBeDefined();
    expect(final!.approvalId).toBe(approvalId);
    expect(oracleValidate('contextos-result', final!.resultEnvelope).errors).toEqual([]);
    expect(final!.resultEnvelope).toMatchObject({ status: 'completed', output: { deleted: 'a' } });

    // The client's retry with the key now gets the final outcome, marked as a replay.
    const done = envelopeOf('contextos', await s.client.callTool({ name: 'delete_item', arguments: { id: 'a' }, _meta: { [META_KEYS.idempotencyKey]: key } }));
    expect(done.status).toBe('completed');
    expect(done.metadata).toMatchObject({ replay: true, approvalId });
    expect(executions(s.count, 'delete_item')).toHaveLength(1);
  });

  it('runs a call once per idempotency key; the same key with other arguments is refused', async () => {
    const meta = { [META_KEYS.idempotencyKey]: 'note-1' };
    const first = envelopeOf('contextos', await s.client.callTool({ name: 'write_note', arguments: { text: 'hello' }, _meta: meta }));
    const second = envelopeOf('contextos', await s.client.callTool({ name: 'write_note', arguments: { text: 'hello' }, _meta: meta }));
    expect(first.status).toBe('ok');
    expect(second.status).toBe('ok');
    expect(second.output).toEqual(first.output);
    expect(second.metadata).toMatchObject({ replay: true, originalToolCallId: first.tool_call_id });
    expect(second.tool_call_id).not.toBe(first.tool_call_id);
    expect(executions(s.count, 'write_note').filter((e) => e.args.text === 'hello')).toHaveLength(1);

    const other = await s.client.callTool({ name: 'write_note', arguments: { text: 'different' }, _meta: meta });
    const env = envelopeOf('contextos', other);
    expect(other.isError).toBe(true);
    expect(env.status).toBe('error');
    const decoded = contracts.contextos.decode(env);
    expect(decoded.error).toMatchObject({ category: 'invalid-argument', code: 'idempotency-key-reused' });
    expect(executions(s.count, 'write_note').filter((e) => e.args.text === 'different')).toHaveLength(0);
  });

  it('records the verified principal first, extended by the agents _meta declares (or the client as the acting agent)', async () => {
    // The chain restating the verified user, and one giving only the agent: both extend the verified chain.
    await s.client.callTool({
      name: 'read_notes',
      arguments: {},
      _meta: {
        [META_KEYS.principalChain]: [
          { kind: 'user', id: 'u-42' },
          { kind: 'agent', id: 'planner' },
        ],
      },
    });
    await s.client.callTool({ name: 'read_notes', arguments: {}, _meta: { [META_KEYS.principalChain]: [{ kind: 'agent', id: 'helper' }] } });
    await s.client.callTool({ name: 'read_notes', arguments: {} });
    await s.governance.flush();
    const { records } = await s.store.listAudit({ tool: 'read_notes' });
    const chains = records.map((r) => r.principalChain);
    expect(chains).toContainEqual([
      { kind: 'user', id: 'u-42' },
      { kind: 'agent', id: 'planner' },
    ]);
    expect(chains).toContainEqual([
      { kind: 'user', id: 'u-42' },
      { kind: 'agent', id: 'helper' },
    ]);
    expect(chains).toContainEqual([
      { kind: 'user', id: 'u-42' },
      { kind: 'agent', id: 'test' },
    ]);
    // The decision in each record says how many entries were verified: the operator's one.
    expect(records.every((r) => (r.policyDecision as { verifiedPrincipals?: number } | null)?.verifiedPrincipals === 1)).toBe(true);
  });

  it('refuses a malformed principal chain as a protocol error, without running the tool', async () => {
    const before = executions(s.count, 'read_notes').length;
    await expect(
      s.client.callTool({ name: 'read_notes', arguments: {}, _meta: { [META_KEYS.principalChain]: [{ kind: 'robot', id: 'x' }] } }),
    ).rejects.toMatchObject({
      code: -32602,
    });
    expect(executions(s.count, 'read_notes')).toHaveLength(before);
  });
});

describe('gateway governance (MCEC)', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setup('mcec', { requireIdempotencyKeyFrom: 'local_write' });
  });
  afterAll(() => teardown(s));

  it('a write without a required key fails as invalid-argument and does not run; a replay carries a warning', async () => {
    const missing = envelopeOf('mcec', await s.client.callTool({ name: 'write_note', arguments: { text: 'x' } }));
    expect(missing).toMatchObject({ ok: false, error: { category: 'invalid-argument', code: 'idempotency-key-required' } });
    expect(executions(s.count, 'write_note')).toHaveLength(0);

    const meta = { [META_KEYS.idempotencyKeyShort]: 'k-1' };
    const first = envelopeOf('mcec', await s.client.callTool({ name: 'write_note', arguments: { text: 'x' }, _meta: meta }));
    const second = envelopeOf('mcec', await s.client.callTool({ name: 'write_note', arguments: { text: 'x' }, _meta: meta }));
    expect(first).toMatchObject({ ok: true, result: { written: 'x' } });
    expect(second).toMatchObject({ ok: true, result: { written: 'x' } });
    expect((second.warnings as { code: string }[]).map((w) => w.code)).toContain('idempotent-replay');
    expect(executions(s.count, 'write_note')).toHaveLength(1);

    const paused = envelopeOf('mcec', await s.client.callTool({ name: 'delete_item', arguments: { id: 'b' } }));
    expect(paused).toMatchObject({ ok: false, error: { category: 'elevation', code: 'approval-required' } });
    // MCEC errors are closed objects: the approval id is named in the detail.
    expect((paused.error as { detail: string }).detail).toMatch(/\(apr_[0-9a-f-]+\)/);
  });
});

describe('parsePrincipalChain', () => {
  it('accepts a chain and explains what is wrong with a bad one', () => {
    expect(parsePrincipalChain(undefined)).toBeUndefined();
    expect(parsePrincipalChain([{ kind: 'user', id: 'u', tenant_id: 't' }])).toEqual([{ kind: 'user', id: 'u', tenant_id: 't' }]);
    expect(parsePrincipalChain([])).toMatch(/non-empty/);
    expect(parsePrincipalChain([{ kind: 'user', id: '' }])).toMatch(/id/);
    expect(parsePrincipalChain([{ kind: 'user', id: 'u', __proto__: { x: 1 } }])).toEqual([{ kind: 'user', id: 'u' }]);
    expect(parsePrincipalChain('user:u')).toMatch(/list/);
  });
});
