/**
 * The governed runtime's audit path, through its public API and a real SQLite file read from a
 * second connection: a call is recorded as started before its handler runs, its answer leaves
 * only once its outcome is committed (by default), and `background` is the documented opt-out.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../test/oracle.js';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/index.js';
import { defineTool } from './define.js';
import { createGovernedRuntime } from './governed.js';
import { createRuntime } from './runtime.js';

describe('governed runtime: the audit record of a call', () => {
  let dir: string;
  let file: string;
  let store: SqliteStore;
  let reader: SqliteStore;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'te-governed-audit-'));
    file = path.join(dir, 'calls.db');
    store = await openSqliteStore({ path: file });
    reader = await openSqliteStore({ path: file, auditWorker: false });
  });
  afterEach(async () => {
    await store.close();
    await reader.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is committed as started before the handler runs, and completed before the answer', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let running!: () => void;
    const started = new Promise<void>((r) => (running = r));
    const slow = defineTool({
      name: 'deploy.run',
      description: 'waits for the test',
      approvalMode: 'read_only',
      handler: async (a: Record<string, unknown>) => {
        running();
        await gate;
        return { deployed: a.target };
      },
    });
    const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [slow] }), store });
    const answer = governed.invoke('deploy.run', { target: 'prod' });
    await started;
    // Another connection sees the executing call: interrupted, should this process die now.
    const during = (await reader.listAudit({ tool: 'deploy.run' })).records;
    expect(during.map((r) => r.status)).toEqual(['interrupted']);
    const interrupted = during[0]!;
    expect(interrupted.callEnvelope.args).toEqual({ target: 'prod' });
    expect(interrupted.errorCode).toBe('interrupted');
    expect(oracleValidate('contextos-call', interrupted.callEnvelope).errors).toEqual([]);
    expect(oracleValidate('contextos-result', interrupted.resultEnvelope).errors).toEqual([]);
    release();
    const outcome = await answer;
    expect(outcome.status).toBe('ok');
    // No flush: the answer left after the commit.
    const after = (await reader.listAudit({ tool: 'deploy.run' })).records;
    expect(after.map((r) => [r.id, r.status])).toEqual([[interrupted.id, 'ok']]);
    expect(await reader.countAudit({ status: 'interrupted' })).toBe(0);
    await governed.close();
  });

  it('commits before answering for every one of many concurrent calls (group commit)', async () => {
    const echo = defineTool({ name: 'echo', description: 'e', approvalMode: 'read_only', handler: async (a: Record<string, unknown>) => a });
    const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [echo] }), store });
    const seen = await Promise.all(
      Array.from({ length: 64 }, async (_, i) => {
        const o = await governed.invoke('echo', { i });
        // Looked up the moment this call answered, while the others are still running.
        const r = await reader.listAudit({ toolCallId: o.toolCallId as string });
        return r.records.map((x) => x.status).join();
      }),
    );
    expect(seen).toEqual(Array(64).fill('ok'));
    await governed.close();
  });

  it('with audit commit `background`, answers without waiting and writes the records all the same', async () => {
    const echo = defineTool({ name: 'echo', description: 'e', approvalMode: 'read_only', handler: async (a: Record<string, unknown>) => a });
    const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [echo] }), store, audit: { commit: 'background' } });
    await Promise.all(Array.from({ length: 20 }, (_, i) => governed.invoke('echo', { i })));
    await governed.flush();
    expect(await reader.countAudit({ tool: 'echo', status: 'ok' })).toBe(20);
    expect(await reader.countAudit({ status: 'interrupted' })).toBe(0);
    await governed.close();
    expect(() => createGovernedRuntime({ runtime: createRuntime({ tools: [echo] }), store, audit: { commit: 'later' as never } })).toThrow(
      /before-answer or background/,
    );
  });

  it('does not run a call whose arguments have no JSON form (too deep, circular): policy and the record could not see them', async () => {
    // Before: such arguments were `{}` to policy, fingerprint and record, while the tool got them whole,
    // so a rule on `args.path` passed a call that hid its path beside a 1 500-deep value.
    let runs = 0;
    const read = defineTool({
      name: 'fs.read',
      description: 'reads a file',
      approvalMode: 'read_only',
      handler: async (a: Record<string, unknown>) => {
        runs++;
        return { path: a.path as string };
      },
    });
    const policy = (ctx: { args: Record<string, unknown> }) =>
      String(ctx.args.path ?? '').startsWith('/etc') ? ({ effect: 'deny', reason: 'no /etc' } as const) : ({ effect: 'allow', mode: 'read_only' } as const);
    const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [read] }), store, policy });
    const nest = (n: number): unknown => JSON.parse(`${'['.repeat(n)}${']'.repeat(n)}`);
    expect((await governed.invoke('fs.read', { path: '/etc/passwd' })).status).toBe('blocked');
    const circular: Record<string, unknown> = { path: '/etc/shadow' };
    circular.self = circular;
    for (const args of [{ path: '/etc/passwd', pad: nest(1_500) }, circular]) {
      const o = await governed.invoke('fs.read', args);
      expect(o.status).toBe('error');
      expect(o.error).toMatchObject({ category: 'invalid-argument', code: 'invalid-arguments', retryable: false });
      expect(o.error?.detail).toMatch(/no JSON form .*(deeper than 1000|circular).*The tool was not run\./);
    }
    expect(runs).toBe(0);
    // Within the bound the call runs as any other.
    expect((await governed.invoke('fs.read', { path: '/tmp/a', pad: nest(900) })).status).toBe('ok');
    expect(runs).toBe(1);
    const records = (await reader.listAudit({ tool: 'fs.read' }, { order: 'asc' })).records;
    expect(records.map((r) => [r.status, r.errorCode ?? null])).toEqual([
      ['blocked', 'policy-denied'],
      ['error', 'invalid-arguments'],
      ['error', 'invalid-arguments'],
      ['ok', null],
    ]);
    for (const r of records) expect(oracleValidate('contextos-call', r.callEnvelope).errors).toEqual([]);
    await governed.close();
  });

  it('records an approved run as started before it runs, then completed, under one id', async () => {
    let seenDuring: string[] = [];
    const purge = defineTool({
      name: 'repo.purge',
      description: 'destructive',
      approvalMode: 'destructive',
      handler: async () => {
        seenDuring = (await reader.listAudit({ tool: 'repo.purge', status: 'interrupted' })).records.map((r) => r.approvalId ?? '');
        return { purged: true };
      },
    });
    const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [purge] }), store });
    const paused = await governed.invoke('repo.purge', {});
    const approvalId = paused.metadata?.approvalId as string;
    const done = await governed.approve(approvalId, { approver: 'alice' });
    expect(done.status).toBe('completed');
    expect(seenDuring).toEqual([approvalId]);
    const statuses = (await reader.listAudit({ tool: 'repo.purge' }, { order: 'asc' })).records.map((r) => r.status);
    expect(statuses).toEqual(['paused', 'completed']);
    await governed.close();
  });
});
