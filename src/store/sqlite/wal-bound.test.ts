/**
 * The WAL of a real SQLite store stays bounded under a sustained audit load: records written as
 * fast as the store takes them (the durable throughput bench's pattern: many callers, big
 * batches) never grow the `-wal` file past the connections' own checkpoint bound
 * (WAL_FALLBACK_CHECKPOINT_PAGES pages) and a batch, while the database grows past that: without
 * checkpoints the WAL would hold every page written, at least the whole database. And the same
 * with callers that each wait on their record (the gateway's pattern: small batches committed on
 * the calling thread, see commit-here.ts): those commits, too, count toward the checkpointer's
 * schedule, so the WAL starts over near its restart size, well under the fallback bound.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuditWriter } from '../audit-writer.js';
import { makeAudit } from '../test-support/store-suite.js';
import { WAL_AUTOCHECKPOINT_PAGES, WAL_FALLBACK_CHECKPOINT_PAGES } from './audit-sql.js';
import { openSqliteStore } from './index.js';

const PAGE = 16_384;

/** The largest size the store's `-wal` file was seen at, sampled when asked. */
function walSizes(file: string): { sample(): void; max(): number } {
  let max = 0;
  return {
    sample: () => {
      try {
        max = Math.max(max, statSync(`${file}-wal`).size);
      } catch {
        // Not created yet.
      }
    },
    max: () => max,
  };
}

describe('sqlite: the WAL under sustained audit load', () => {
  it('stays under the fallback checkpoint bound and one batch while a database bigger than both is written', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-wal-'));
    const file = path.join(dir, 'audit.db');
    try {
      const store = await openSqliteStore({ path: file });
      const writer = new AuditWriter(store, { maxQueue: 4_000, maxBatch: 500 });
      // ~7 KB records: a big database from few records (the test's time goes per record).
      const pad = 'x'.repeat(6_500);
      const wal = walSizes(file);
      const sample = wal.sample;
      const timer = setInterval(sample, 2);
      const total = 24_000;
      let next = 0;
      const acks: Promise<void>[] = [];
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < total) {
            next++;
            acks.push((await writer.submit(makeAudit({ outcome: { pad, n: next } }))).committed);
            if (next % 500 === 0) sample();
          }
        }),
      );
      await Promise.all(acks);
      clearInterval(timer);
      sample();
      await writer.close();
      expect(await store.countAudit()).toBe(total);
      await store.close();
      const bound = WAL_FALLBACK_CHECKPOINT_PAGES * PAGE + 500 * 8 * 1_024;
      // The database outgrew the bound: a WAL under it is the checkpoints' doing.
      expect(statSync(file).size).toBeGreaterThan(bound);
      expect(wal.max()).toBeGreaterThan(0);
      expect(wal.max()).toBeLessThan(bound);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('starts over near its restart size when callers wait on small batches committed on the calling thread', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-wal-'));
    const file = path.join(dir, 'audit.db');
    try {
      const store = await openSqliteStore({ path: file });
      const writer = new AuditWriter(store);
      const pad = 'x'.repeat(6_500);
      const wal = walSizes(file);
      const sample = wal.sample;
      const total = 20_000;
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < total) {
            next++;
            await writer.log(makeAudit({ outcome: { pad, n: next } }));
            if (next % 100 === 0) sample();
          }
        }),
      );
      sample();
      const here = (store as unknown as { here: { commits: number } }).here.commits;
      await writer.close();
      expect(await store.countAudit()).toBe(total);
      await store.close();
      // Most commits were the calling thread's (a few go to the writer thread, which starts the WAL over).
      expect(here).toBeGreaterThan(total / 16 / 2);
      expect(statSync(file).size).toBeGreaterThan(WAL_FALLBACK_CHECKPOINT_PAGES * PAGE);
      expect(wal.max()).toBeGreaterThan(0);
      expect(wal.max()).toBeLessThan((WAL_AUTOCHECKPOINT_PAGES + 2_500) * (PAGE + 24));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
