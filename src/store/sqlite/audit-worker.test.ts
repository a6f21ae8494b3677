import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteAuditWorker, useReferenceAuditCommits } from './audit-worker.js';
import { AuditRowPacker } from './packed-rows.js';

const PAGE = 4096;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'te-ckpt-'));
  dirs.push(dir);
  const file = path.join(dir, 'a.db');
  const db = new Database(file);
  db.pragma(`page_size = ${PAGE}`);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT NOT NULL, body TEXT NOT NULL)');
  db.close();
  return file;
}

const cols = '(?, CAST(? AS TEXT))';

/** The table holds `count` rows and the file passes SQLite's integrity check. */
function expectRowsIntact(file: string, count: number): void {
  const db = new Database(file, { readonly: true });
  expect((db.prepare('SELECT COUNT(*) AS c FROM t').get() as { c: number }).c).toBe(count);
  expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
  db.close();
}

/**
 * Appends `batches` batches of `perBatch` rows of ~2 KB each, one batch at a time, each once the
 * checkpointer has done what the previous ones asked of it: the WAL's size then depends on the
 * checkpoints alone, not on how soon a loaded machine schedules the checkpointer thread.
 */
async function fill(worker: SqliteAuditWorker, batches: number, perBatch: number): Promise<void> {
  const packer = new AuditRowPacker();
  for (let b = 0; b < batches; b++) {
    const rows = Array.from({ length: perBatch }, (_, i) => packer.pack([`r-${b}-${i}`, null], 1, `{"n":${b * perBatch + i},"pad":"${'x'.repeat(2000)}"}`));
    await worker.append(rows);
    await worker.checkpointerIdle();
  }
}

describe('SQLite audit worker checkpoints', () => {
  const base = { synchronous: 'NORMAL', busyTimeoutMs: 5_000, insertSql: `INSERT INTO t (id, body) VALUES ${cols}`, rowsPerStatement: 4 };
  const options = (file: string) => ({ ...base, path: file, insertManySql: `INSERT OR FAIL INTO t (id, body) VALUES ${Array(4).fill(cols).join(', ')}` });

  /** Frames in the WAL now (since it last started over), read by another connection's PASSIVE checkpoint. */
  async function walFrames(file: string): Promise<number> {
    const db = new Database(file);
    try {
      // Busy (-1) while the checkpointer is copying: asked again.
      for (;;) {
        const r = (db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number }[])[0]!;
        if (r.busy === 0) return r.log;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    } finally {
      db.close();
    }
  }

  it('checkpoints on its checkpointer thread and starts the WAL over, so the WAL stays small', async () => {
    const file = setup();
    // The writer's own checkpoint is out of reach: only the checkpointer can keep the WAL small.
    const worker = new SqliteAuditWorker({ ...options(file), walAutocheckpoint: 1_000_000, checkpointEveryKiB: 64, restartWalAtFrames: 40 });
    await fill(worker, 300, 20); // ~12 MB of rows, ~3 000 pages
    const frames = await walFrames(file);
    await worker.close();
    // Started over at ~40 frames plus what the last few batches added (~12 pages each).
    expect(frames).toBeGreaterThan(0);
    expect(frames).toBeLessThan(400);
    expectRowsIntact(file, 6000);
  });

  it('counts the pages each commit rewrites besides its rows, so small commits, as a gateway makes, keep the WAL small too', async () => {
    const file = setup();
    const db = new Database(file);
    // Six indexes on random keys: a commit of one small row rewrites about seven 4 KiB pages.
    for (let i = 0; i < 6; i++) db.exec(`CREATE INDEX t_${i} ON t (substr(body, ${i + 1}, 8), id)`);
    db.close();
    // 1 MiB between checkpoints: 600 one-row commits are ~600 KiB of rows (rounded up per commit) but ~4 000 pages of WAL.
    const worker = new SqliteAuditWorker({ ...options(file), walAutocheckpoint: 1_000_000, checkpointEveryKiB: 1024, restartWalAtFrames: 40, commitPages: 7 });
    const packer = new AuditRowPacker();
    for (let b = 0; b < 600; b++) {
      await worker.append([packer.pack([`r-${b}`, null], 1, `${randomBytes(12).toString('hex')}{"n":${b}}`)]);
      await worker.checkpointerIdle();
    }
    const frames = await walFrames(file);
    await worker.close();
    expect(frames).toBeGreaterThan(0);
    expect(frames).toBeLessThan(1_000);
    expectRowsIntact(file, 600);
  });

  it('without a checkpointer and with automatic checkpoints out of reach, the WAL holds every page (the control)', async () => {
    const file = setup();
    const worker = new SqliteAuditWorker({ ...options(file), walAutocheckpoint: 1_000_000 });
    await fill(worker, 300, 20);
    const frames = await walFrames(file);
    await worker.close();
    expect(frames).toBeGreaterThan(2_500);
  });

  describe.each([
    ['small ones merged, as by default', false],
    ['one transaction per batch, the reference', true],
  ])('batches queued at the writer thread: %s', (_name, reference) => {
    afterEach(() => useReferenceAuditCommits(false));

    it('are all committed and acknowledged, in order; a failing one fails alone; big ones are never merged', async () => {
      const file = setup();
      const db = new Database(file);
      db.exec('CREATE UNIQUE INDEX t_id ON t (id)');
      db.close();
      useReferenceAuditCommits(reference);
      const worker = new SqliteAuditWorker({ ...options(file), walAutocheckpoint: 1000 });
      expect(worker.merges).toBe(!reference);
      const packer = new AuditRowPacker();
      const batch = (b: number, rows = 6, id = (i: number) => `r-${b}-${i}`) =>
        worker.append(Array.from({ length: rows }, (_, i) => packer.pack([id(i), null], 1, `{"b":${b},"i":${i}}`)));
      // Posted at once, before the thread is up: all of them are queued at its port.
      const good = await Promise.allSettled(Array.from({ length: 10 }, (_, b) => batch(b)));
      const small = worker.transactions;
      // Then ten more, the fifth with an id already written.
      const mixed = await Promise.allSettled(
        Array.from({ length: 10 }, (_, b) => batch(10 + b, 6, b === 4 ? (i) => (i === 5 ? 'r-0-0' : `r-14-${i}`) : undefined)),
      );
      // Then four batches of 300 rows each, past what a merged group holds.
      const before = worker.transactions;
      const big = await Promise.allSettled(Array.from({ length: 4 }, (_, b) => batch(20 + b, 300)));
      const bigTransactions = worker.transactions - before;
      await worker.close();
      expect(good.map((s) => s.status)).toEqual(Array(10).fill('fulfilled'));
      expect(mixed.map((s) => s.status)).toEqual(mixed.map((_, b) => (b === 4 ? 'rejected' : 'fulfilled')));
      expect(String((mixed[4] as PromiseRejectedResult).reason)).toMatch(/UNIQUE/);
      expect(big.map((s) => s.status)).toEqual(Array(4).fill('fulfilled'));
      const read = new Database(file, { readonly: true });
      const rows = read.prepare('SELECT id FROM t ORDER BY n').all() as { id: string }[];
      read.close();
      const written = [...Array.from({ length: 10 }, (_, b) => b), 10, 11, 12, 13, 15, 16, 17, 18, 19].map((b) => [b, 6]);
      written.push([20, 300], [21, 300], [22, 300], [23, 300]);
      expect(rows.map((r) => r.id)).toEqual(written.flatMap(([b, n]) => Array.from({ length: n as number }, (_, i) => `r-${b}-${i}`)));
      // Merged: the first ten batches in fewer transactions than batches; big batches one each.
      if (reference) expect(small).toBe(10);
      else expect(small).toBeLessThan(10);
      expect(bigTransactions).toBe(4);
    });
  });
});
