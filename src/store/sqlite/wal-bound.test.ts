/**
 * The WAL of a real SQLite store stays bounded under a sustained audit load: records written as
 * fast as the store takes them (the durable throughput bench's pattern: many callers, big
 * batches) never grow the `-wal` file past the connections' own checkpoint bound
 * (WAL_FALLBACK_CHECKPOINT_PAGES pages) and a batch, while the database grows past that: without
 * checkpoints the WAL would hold every page written, at least the whole database.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuditWriter } from '../audit-writer.js';
import { makeAudit } from '../test-support/store-suite.js';
import { WAL_FALLBACK_CHECKPOINT_PAGES } from './audit-sql.js';
import { openSqliteStore } from './index.js';

const PAGE = 16_384;

describe('sqlite: the WAL under sustained audit load', () => {
  it('stays under the fallback checkpoint bound and one batch while a database bigger than both is written', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-wal-'));
    const file = path.join(dir, 'audit.db');
    try {
      const store = await openSqliteStore({ path: file });
      const writer = new AuditWriter(store, { maxQueue: 4_000, maxBatch: 500 });
      // ~7 KB records: a big database from few records (the test's time goes per record).
      const pad = 'x'.repeat(6_500);
      let max = 0;
      const sample = (): void => {
        try {
          max = Math.max(max, statSync(`${file}-wal`).size);
        } catch {
          // Not created yet.
        }
      };
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
      expect(max).toBeGreaterThan(0);
      expect(max).toBeLessThan(bound);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
