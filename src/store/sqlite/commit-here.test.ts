/**
 * Where a real SQLite store commits its audit batches (commit-here.ts): the small batches callers
 * wait on (`before-answer`) on the calling thread, everything else, and any batch while the write
 * lock is held elsewhere, on the writer thread; commits stay in the order they were handed over,
 * and a file written both ways verifies.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as audit from '../../cli/audit.js';
import { runVerb } from '../../cli/test-support/run-verb.js';
import { AuditWriter } from '../audit-writer.js';
import type { ChainReport } from '../chain.js';
import { loadOperatorKey, type OperatorKey } from '../operator-key.js';
import { makeAudit } from '../test-support/store-suite.js';
import { useReferenceAuditCommits } from './audit-worker.js';
import { HERE_MAX_BYTES, HERE_MAX_ROWS } from './commit-here.js';
import { openSqliteStore, type SqliteStore } from './index.js';

/** The store's two commit paths, as counted by themselves. */
function paths(store: SqliteStore): { here: number | undefined; thread: number } {
  const s = store as unknown as { here?: { commits: number }; worker: { transactions: number } };
  return { here: s.here?.commits, thread: s.worker.transactions };
}

describe('sqlite: where audit batches commit', () => {
  let dir: string;
  let file: string;
  let key: OperatorKey;
  let keyFile: string;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'te-here-'));
    file = path.join(dir, 'calls.db');
    keyFile = path.join(dir, 'operator.key');
    writeFileSync(keyFile, Buffer.alloc(32, 7).toString('base64'), { mode: 0o600 });
    key = await loadOperatorKey({ file: keyFile });
  });
  afterEach(() => {
    useReferenceAuditCommits(false);
    rmSync(dir, { recursive: true, force: true });
  });

  async function verify(): Promise<{ code: number; report: ChainReport }> {
    const r = await runVerb(audit, ['verify', '--store', file, '--key-file', keyFile, '--format', 'json']);
    return { code: r.code, report: JSON.parse(r.stdout) as ChainReport };
  }

  it('commits the small batches callers wait on on the calling thread, in order, and the file verifies', async () => {
    const store = await openSqliteStore({ path: file, chainKey: key });
    const writer = new AuditWriter(store);
    const records = Array.from({ length: 40 }, (_, i) => makeAudit({ tool: 'here', startedAt: 1_800_000_000_000 + i }));
    // 32 callers at once, then the rest one at a time, as a gateway's calls come.
    await Promise.all(records.slice(0, 32).map((r) => writer.log(r)));
    for (const r of records.slice(32)) await writer.log(r);
    expect(paths(store)).toEqual({ here: expect.any(Number), thread: 0 });
    expect(paths(store).here).toBeGreaterThanOrEqual(9);
    const listed = await store.listAudit({ tool: 'here' }, { order: 'asc', limit: 100 });
    expect(listed.records.map((r) => r.id)).toEqual(records.map((r) => r.id));
    await writer.close();
    await store.close();
    expect(await verify()).toMatchObject({ code: 0, report: { ok: true, verified: 40, writers: 1, problems: [] } });
  });

  it('commits a record logged alone before the rest of the event-loop turn runs; under the reference, or not alone, after it', async () => {
    for (const [reference, alone, beforeTurn] of [
      [false, true, true],
      [false, false, false],
      [true, true, false],
    ] as const) {
      useReferenceAuditCommits(reference);
      const store = await openSqliteStore({ path: path.join(dir, `alone-${reference}-${alone}.db`), chainKey: key });
      const writer = new AuditWriter(store);
      // Two calls one after the other, each with its two records, as the governance pipeline logs them.
      for (let call = 0; call < 2; call++) {
        for (let rec = 0; rec < 2; rec++) {
          let turned = false;
          setImmediate(() => {
            turned = true;
          });
          const record = makeAudit({ tool: 'alone' });
          await writer.log(record, { alone });
          expect({ reference, alone, turned }).toEqual({ reference, alone, turned: !beforeTurn });
          // Resolved means committed: another connection reads it.
          const other = new Database(path.join(dir, `alone-${reference}-${alone}.db`), { readonly: true });
          expect(other.prepare('SELECT COUNT(*) AS n FROM audit WHERE id = ?').get(record.id)).toEqual({ n: 1 });
          other.close();
        }
      }
      expect(paths(store).here).toBe(reference ? undefined : 4);
      await writer.close();
      await store.close();
    }
    useReferenceAuditCommits(false);
  });

  it('fails a record logged alone that cannot be stored as it would fail in a batch, and goes on', async () => {
    const store = await openSqliteStore({ path: file, chainKey: key });
    const failed: string[] = [];
    const writer = new AuditWriter(store);
    const reporting = new AuditWriter(store, { onError: (_e, r) => failed.push(r.id) });
    const done = makeAudit({ tool: 'alone' });
    await writer.log(done, { alone: true });
    // A second completed record of the same id breaks the unique index: nothing is written.
    await expect(writer.log({ ...done, tool: 'again' }, { alone: true })).rejects.toMatchObject({ code: 'store-failure' });
    await reporting.log({ ...done, tool: 'again' }, { alone: true });
    expect(failed).toEqual([done.id]);
    expect({ written: writer.written, failed: writer.failed }).toEqual({ written: 1, failed: 1 });
    const next = makeAudit({ tool: 'alone' });
    await writer.log(next, { alone: true });
    expect((await store.listAudit({ tool: ['alone', 'again'] }, { order: 'asc' })).records.map((r) => [r.id, r.tool])).toEqual([
      [done.id, 'alone'],
      [next.id, 'alone'],
    ]);
    expect(paths(store)).toEqual({ here: 2, thread: 0 });
    await store.close();
    expect(await verify()).toMatchObject({ code: 0, report: { ok: true, verified: 2, writers: 1, problems: [] } });
  });

  it('hands the writer thread every batch in background mode, every batch over the bounds, under synchronous FULL and under the reference', async () => {
    const store = await openSqliteStore({ path: file, chainKey: key });
    const background = new AuditWriter(store, { commit: 'background' });
    await Promise.all(Array.from({ length: 20 }, () => background.log(makeAudit())));
    await background.flush();
    expect(paths(store).here).toBe(0);
    const waited = new AuditWriter(store);
    // One event-loop turn's worth over the bound: one batch, too big to commit on the calling thread.
    await Promise.all(Array.from({ length: HERE_MAX_ROWS + 1 }, () => waited.log(makeAudit())));
    expect(paths(store).here).toBe(0);
    expect(paths(store).thread).toBeGreaterThan(0);
    // A few rows, but over the byte bound.
    const pad = 'x'.repeat(Math.ceil(HERE_MAX_BYTES / 4));
    const thread = paths(store).thread;
    await Promise.all(Array.from({ length: 5 }, () => waited.log(makeAudit({ outcome: { pad } }))));
    expect(paths(store)).toEqual({ here: 0, thread: thread + 1 });
    await store.close();

    // synchronous FULL: every commit waits for fsync, which is the writer thread's to wait for.
    const full = await openSqliteStore({ path: file, chainKey: key, synchronous: 'FULL' });
    const f = new AuditWriter(full);
    await Promise.all(Array.from({ length: 5 }, () => f.log(makeAudit())));
    expect(paths(full)).toEqual({ here: undefined, thread: expect.any(Number) });
    expect(paths(full).thread).toBeGreaterThan(0);
    await full.close();

    useReferenceAuditCommits(true);
    const reference = await openSqliteStore({ path: file, chainKey: key });
    const w = new AuditWriter(reference);
    await Promise.all(Array.from({ length: 10 }, () => w.log(makeAudit())));
    expect(paths(reference)).toEqual({ here: undefined, thread: expect.any(Number) });
    expect(paths(reference).thread).toBeGreaterThan(0);
    expect(await reference.countAudit()).toBe(20 + HERE_MAX_ROWS + 1 + 5 + 5 + 10);
    await reference.close();
  });

  it('keeps the order while a batch is in flight on the writer thread: the next small one waits its turn there', async () => {
    const store = await openSqliteStore({ path: file, chainKey: key });
    const writer = new AuditWriter(store);
    const big = Array.from({ length: 300 }, (_, i) => makeAudit({ tool: 'order', startedAt: 1_800_000_000_000 + i }));
    const small = Array.from({ length: 3 }, (_, i) => makeAudit({ tool: 'order', startedAt: 1_800_000_001_000 + i }));
    const first = Promise.all(big.map((r) => writer.log(r)));
    // Queued while the big batch commits on the writer thread.
    await new Promise((r) => setImmediate(r));
    await Promise.all([first, ...small.map((r) => writer.log(r))]);
    const listed = await store.listAudit({ tool: 'order' }, { order: 'asc', limit: 1000 });
    expect(listed.records.map((r) => r.id)).toEqual([...big, ...small].map((r) => r.id));
    await store.close();
  });

  it('sends a batch to the writer thread when another connection holds the write lock, without stalling the calling thread', async () => {
    const store = await openSqliteStore({ path: file, chainKey: key, busyTimeoutMs: 10_000 });
    const writer = new AuditWriter(store);
    await writer.log(makeAudit());
    const before = paths(store);
    expect(before.here).toBe(1);
    const other = new Database(file);
    other.prepare('BEGIN IMMEDIATE').run();
    const record = makeAudit({ tool: 'locked' });
    let committed = false;
    const logged = writer.log(record).then(() => {
      committed = true;
    });
    // The calling thread goes on (timers fire) while the writer thread waits for the lock.
    const ticks: number[] = [];
    for (let i = 0; i < 5; i++) ticks.push(await new Promise<number>((r) => setTimeout(() => r(Date.now()), 20)));
    expect(ticks).toHaveLength(5);
    expect(committed).toBe(false);
    other.prepare('COMMIT').run();
    other.close();
    await logged;
    expect(paths(store)).toEqual({ here: 1, thread: before.thread + 1 });
    expect((await store.getAudit(record.id))?.tool).toBe('locked');
    // Free again: the next waited batch is committed on the calling thread.
    await writer.log(makeAudit());
    expect(paths(store).here).toBe(2);
    await store.close();
    // Two writers of one store: its calling thread's and its writer thread's.
    expect(await verify()).toMatchObject({ code: 0, report: { ok: true, verified: 3, writers: 2, problems: [] } });
  });
});
