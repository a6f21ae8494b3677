/**
 * Policy `when` conditions (#38) as an operator writes them, in a YAML policy file loaded with
 * loadPolicyFile, enforced by the governed runtime over a real SQLite file and read back from a
 * second connection: writes outside /srv/shared denied (`..`, repeated separators, percent-
 * encoding), fetch only to our domain except for the `research` role, approval above an amount;
 * each audit record names the rule that decided, and an erroring condition's reason.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ToolOutcome } from 'tool-envelope/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPolicyFile } from '../governance/policy.js';
import { OPERATOR_POLICY as POLICY } from '../governance/test-support/operator-policy.js';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/index.js';
import type { AuditRecord } from '../store/types.js';
import { defineTool } from './define.js';
import { createGovernedRuntime, type GovernedInvokeOptions, type GovernedRuntime } from './governed.js';
import { createRuntime } from './runtime.js';

describe('governed runtime: policy when conditions from a YAML file, on a SQLite store', () => {
  let dir: string;
  let store: SqliteStore;
  let reader: SqliteStore;
  let governed: GovernedRuntime;
  const ran: string[] = [];
  let n = 0;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'te-governed-when-'));
    const policyFile = path.join(dir, 'policy.yaml');
    writeFileSync(policyFile, POLICY);
    const file = path.join(dir, 'calls.db');
    store = await openSqliteStore({ path: file });
    reader = await openSqliteStore({ path: file, auditWorker: false });
    const tool = (name: string, approvalMode: 'read_only' | 'local_write' | 'network') =>
      defineTool({
        name,
        description: name,
        approvalMode,
        handler: async (a: Record<string, unknown>) => {
          ran.push(name);
          return { done: name, args: a };
        },
      });
    governed = createGovernedRuntime({
      runtime: createRuntime({
        tools: [
          tool('write_file', 'local_write'),
          tool('fetch', 'network'),
          tool('transfer', 'network'),
          tool('notes.read', 'read_only'),
          tool('notes.append', 'local_write'),
        ],
      }),
      store,
      policy: await loadPolicyFile(policyFile),
      principalChain: [{ kind: 'user', id: 'alice', tenant_id: 'acme' }],
      operatorKey: operatorKeyFromSecret(randomBytes(32)),
    });
  });
  afterAll(async () => {
    await governed.close();
    await store.close();
    await reader.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Invokes, then reads the call's audit record back from the other connection. */
  async function call(tool: string, args: Record<string, unknown>, o: GovernedInvokeOptions = {}): Promise<{ outcome: ToolOutcome; record: AuditRecord }> {
    const before = ran.length;
    const outcome = await governed.invoke(tool, args, { idempotencyKey: `k-${++n}`, ...o });
    await governed.flush();
    const records = (await reader.listAudit({ toolCallId: outcome.toolCallId as string })).records;
    expect(records).toHaveLength(1);
    // The handler runs exactly for the calls that end ok.
    expect(ran.length - before).toBe(outcome.status === 'ok' ? 1 : 0);
    return { outcome, record: records[0] as AuditRecord };
  }

  it.each(['/srv/shared/a.txt', '/srv/shared/reports/q3.csv', '/srv//shared///a.txt', '/srv/shared/./x/../a.txt', '/srv/shared/%61.txt'])(
    'lets write_file write %s (inside /srv/shared)',
    async (p) => {
      const { outcome, record } = await call('write_file', { path: p });
      expect(outcome.status).toBe('ok');
      expect(record.status).toBe('ok');
      expect(record.policyDecision).toMatchObject({ effect: 'allow', rule: 'shared-writes' });
    },
  );

  it.each([
    '/etc/passwd',
    '/srv/shared/../etc/passwd',
    '/srv/shared/a/../../etc/passwd',
    '/srv/shared//..//..//etc/passwd',
    '/srv//shared/../../etc/passwd',
    '/srv/sharedX/a.txt',
    '/srv/shared/%2e%2e/etc/passwd',
    '/srv/shared/%2E%2E%2Fetc%2Fpasswd',
    '/srv/shared/%252e%252e/etc/passwd',
    '/srv/shared/%zz',
    '/srv/shared\\..\\etc\\passwd',
    '/srv/shared/a\u0000.txt',
    'srv/shared/a.txt',
    '../srv/shared/a.txt',
  ])('denies write_file to %j (outside /srv/shared, or hiding where)', async (p) => {
    const { outcome, record } = await call('write_file', { path: p });
    expect(outcome.status).toBe('blocked');
    expect(record.status).toBe('blocked');
    expect(record.policyDecision).toMatchObject({ effect: 'deny', rule: 'outside-shared', reason: 'writes stay under /srv/shared' });
  });

  it('allows fetch to hosts of our domain, and to any host for the research role', async () => {
    for (const url of ['https://example.com/', 'https://API.Example.com./v1', 'http://docs.example.com:8080/a?b=c']) {
      const { outcome, record } = await call('fetch', { url });
      expect([url, outcome.status]).toEqual([url, 'ok']);
      expect(record.policyDecision).toMatchObject({ effect: 'allow', rule: 'our-hosts' });
    }
    for (const url of [
      'https://evil.test/',
      'https://example.com.evil.test/',
      'https://example.com@evil.test/',
      'https://evil.test/?h=.example.com',
      'not a url',
    ]) {
      const { outcome, record } = await call('fetch', { url });
      expect([url, outcome.status]).toEqual([url, 'blocked']);
      expect(record.policyDecision).toMatchObject({ effect: 'deny', rule: 'other-hosts' });
    }
    // The role comes from the verified identity the embedding code gives (as a gateway's tokens or JWT would).
    const research = { principal: 'user:rita', tenant: 'acme', roles: ['research'], claims: { email: 'rita@example.com' } };
    const r = await call('fetch', { url: 'https://evil.test/paper.pdf' }, { principalChain: [{ kind: 'user', id: 'rita' }], identity: research });
    expect(r.outcome.status).toBe('ok');
    expect(r.record.policyDecision).toMatchObject({ effect: 'allow', rule: 'research-fetch' });
    // Another role is no exception.
    const dev = await call('fetch', { url: 'https://evil.test/' }, { identity: { principal: 'user:alice', roles: ['dev'] } });
    expect(dev.outcome.status).toBe('blocked');
    expect(dev.record.policyDecision).toMatchObject({ rule: 'other-hosts' });
  });

  it('requires approval for an amount above 1000, and runs the call once approved', async () => {
    for (const amount of [1000.01, 5000, '1500.50']) {
      const { outcome, record } = await call('transfer', { amount, to: 'acct-9' });
      expect([amount, outcome.status]).toEqual([amount, 'paused']);
      expect(record.status).toBe('paused');
      expect(record.policyDecision).toMatchObject({ effect: 'require-approval', rule: 'large-transfer' });
    }
    for (const amount of [1000, 999.99, 0, '12']) {
      const { outcome, record } = await call('transfer', { amount, to: 'acct-9' });
      expect([amount, outcome.status]).toEqual([amount, 'ok']);
      expect(record.policyDecision).toMatchObject({ effect: 'allow', rule: 'transfers' });
    }
    const paused = await governed.invoke('transfer', { amount: 2500, to: 'acct-1' }, { idempotencyKey: 'approve-me' });
    const before = ran.length;
    const final = await governed.approve(paused.metadata!.approvalId as string, { approver: 'bob' });
    expect(final.status).toBe('completed');
    expect(ran.length - before).toBe(1);
  });

  it('denies a call whose condition errs, the reason in the audit record', async () => {
    const notNumber = await call('transfer', { amount: 'lots', to: 'acct-9' });
    expect(notNumber.outcome.status).toBe('blocked');
    expect(notNumber.record.policyDecision).toMatchObject({ effect: 'deny', rule: 'large-transfer' });
    expect(notNumber.record.policyDecision?.reason).toMatch(/^large-transfer: condition failed: .*toNumber: "lots" is not a number/);
    // No amount at all: the condition cannot be evaluated (a has() guard would say what to do instead).
    const missing = await call('transfer', { to: 'acct-9' });
    expect(missing.outcome.status).toBe('blocked');
    expect(missing.record.policyDecision).toMatchObject({ effect: 'deny', rule: 'large-transfer' });
    expect(missing.record.policyDecision?.reason).toMatch(/^large-transfer: condition failed: .*amount/);
    // The caller is told it was policy, the same reason.
    expect(missing.outcome.error?.detail).toContain('condition failed');
  });

  it("sees the tool's own annotations as tool.annotations", async () => {
    const read = await call('notes.read', {});
    expect(read.outcome.status).toBe('ok');
    expect(read.record.policyDecision).toMatchObject({ rule: 'read-only-tools' });
    const append = await call('notes.append', {});
    expect(append.outcome.status).toBe('blocked');
    expect(append.record.policyDecision).toMatchObject({ effect: 'deny', rule: 'default' });
  });
});
