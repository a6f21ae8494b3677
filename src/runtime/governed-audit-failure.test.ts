/**
 * A governed call whose audit log cannot be written, through the public API over a real SQLite
 * file: the store's own inserts fail (a trigger that raises, as a full disk or a read-only file
 * would make them fail), then the log comes back. Committing before answer (the default), a call
 * whose `started` record is not committed is not run: it answers a retryable `internal` error, its
 * idempotency key stays free, and an approved call waits for the log; `background` is the
 * documented opt-out, where the call runs and the failure is only reported.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/index.js';
import { defineTool } from './define.js';
import { createGovernedRuntime } from './governed.js';
import { createRuntime } from './runtime.js';
import { expectValidEnvelopes } from './test-support/envelopes.js';

describe('governed runtime: an audit log that cannot be written', () => {
  let dir: string;
  let file: string;
  let store: SqliteStore;
  let runs: string[];
  let errors: string[];
  const fault = {
    on: () => {
      const db = new Database(file);
      db.exec("CREATE TRIGGER te_test_fault BEFORE INSERT ON audit BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END");
      db.close();
    },
    off: () => {
      const db = new Database(file);
      db.exec('DROP TRIGGER te_test_fault');
      db.close();
    },
  };
  const tools = () => [
    defineTool({
      name: 'notes.read',
      description: 'reads a note',
      approvalMode: 'read_only',
      handler: async (a: Record<string, unknown>) => {
        runs.push(String(a.text));
        return { read: a.text };
      },
    }),
    defineTool({
      name: 'notes.write',
      description: 'writes a note',
      approvalMode: 'local_write',
      handler: async (a: Record<string, unknown>) => {
        runs.push(String(a.text));
        return { written: a.text };
      },
    }),
    defineTool({
      name: 'repo.purge',
      description: 'destructive',
      approvalMode: 'destructive',
      handler: async () => {
        runs.push('purge');
        return { purged: true };
      },
    }),
  ];
  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'te-audit-fault-'));
    file = path.join(dir, 'calls.db');
    store = await openSqliteStore({ path: file });
    runs = [];
    errors = [];
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const onError = (e: unknown) => errors.push((e as Error).message);

  it('does not run a call whose started record cannot be committed, and runs it once the log is back', async () => {
    const governed = createGovernedRuntime({ runtime: createRuntime({ tools: tools() }), store, audit: { onError } });
    fault.on();
    const refused = await governed.invoke('notes.read', { text: 'a' });
    expect(runs).toEqual([]);
    expect(refused).toMatchObject({ status: 'error', error: { category: 'internal', code: 'audit-log-unavailable', retryable: true } });
    expect(refused.error?.detail).toMatch(/could not record the call before it ran, so it was not run: .*database or disk is full/);
    expectValidEnvelopes(refused);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((m) => /database or disk is full/.test(m))).toBe(true);
    // With an idempotency key: the key is not taken by the call that did not run.
    const keyed = await governed.invoke('notes.write', { text: 'b' }, { idempotencyKey: 'k-1' });
    expect(keyed.error?.code).toBe('audit-log-unavailable');
    expect(runs).toEqual([]);
    fault.off();
    expect((await governed.invoke('notes.write', { text: 'b' }, { idempotencyKey: 'k-1' })).status).toBe('ok');
    expect((await governed.invoke('notes.read', { text: 'c' })).status).toBe('ok');
    expect(runs).toEqual(['b', 'c']);
    await governed.close();
    // Only what ran is in the log (the refusals' own records could not be written either).
    const logged = (await store.listAudit({}, { order: 'asc' })).records.map((r) => [r.tool, r.status]);
    expect(logged).toEqual([
      ['notes.write', 'ok'],
      ['notes.read', 'ok'],
    ]);
  });

  it('does not run an approved call while the log cannot be written; the approval stands and runs once it can', async () => {
    const governed = createGovernedRuntime({ runtime: createRuntime({ tools: tools() }), store, audit: { onError } });
    const paused = await governed.invoke('repo.purge', {});
    const approvalId = paused.metadata?.approvalId as string;
    fault.on();
    await expect(governed.approve(approvalId, { approver: 'alice' })).rejects.toMatchObject({
      code: 'store-failure',
      message: expect.stringMatching(/could not commit the call's started record, so the call was not run/),
    });
    expect(runs).toEqual([]);
    expect((await store.getApproval(approvalId))?.state).toBe('approved');
    fault.off();
    const done = await governed.runApproved(approvalId);
    expect(done?.status).toBe('completed');
    expect(runs).toEqual(['purge']);
    await governed.close();
  });

  it('with commit `background`, runs the call and reports the record it could not write', async () => {
    const governed = createGovernedRuntime({ runtime: createRuntime({ tools: tools() }), store, audit: { commit: 'background', onError } });
    fault.on();
    expect((await governed.invoke('notes.read', { text: 'a' })).status).toBe('ok');
    await governed.flush();
    expect(runs).toEqual(['a']);
    expect(errors.length).toBeGreaterThan(0);
    fault.off();
    await governed.close();
  });
});
