// The histogram the console's stats are drawn from, counted by each database: the same cells as
// the memory store's JavaScript over the same records, with a filter, buckets and latency bins.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { binUpper, type HistogramCell, latencyBin } from './audit-histogram.js';
import { createMemoryStore } from './memory.js';
import { openPostgresStore } from './postgres/index.js';
import { openSqliteStore } from './sqlite/index.js';
import { describePg, freshSchemas } from './test-support/pg.js';
import { makeAudit } from './test-support/store-suite.js';
import type { AuditFilter, AuditRecord, Store } from './types.js';

const T0 = 1_700_000_000_000;
const records: AuditRecord[] = Array.from({ length: 300 }, (_, i) =>
  makeAudit({
    tool: ['fs.read', 'fs.write', '<b>x</b>'][i % 3]!,
    status: (['ok', 'error', 'failed', 'ok', 'started'] as const)[i % 5]!,
    category: i % 5 === 1 || i % 5 === 2 ? (['timeout', 'internal'] as const)[i % 2]! : null,
    startedAt: T0 + i * 37_000,
    latencyMs: [0, 0.4, 3, 17.5, 250, 4096, -2][i % 7]!,
    sessionId: i % 2 ? 's-odd' : 's-even',
  }),
);

const sorted = (cells: HistogramCell[]): string[] => cells.map((c) => JSON.stringify(c)).sort();

async function agree(open: () => Promise<Store>): Promise<void> {
  const memory = createMemoryStore();
  const store = await open();
  try {
    await memory.appendAudit(records);
    await store.appendAudit(records);
    const cases: [AuditFilter, number][] = [
      [{}, 600_000],
      [{ sessionId: 's-odd', since: T0 + 1_000_000 }, 60_000],
      [{ status: ['error', 'interrupted'] }, 3_600_000],
    ];
    for (const [filter, bucket] of cases) {
      const want = await memory.auditHistogram(filter, bucket);
      expect(want.reduce((n, c) => n + c.count, 0)).toBeGreaterThan(10);
      expect(sorted(await store.auditHistogram(filter, bucket))).toEqual(sorted(want));
    }
  } finally {
    await store.close();
    await memory.close();
  }
}

describe('auditHistogram', () => {
  const dir = mkdtempSync(join(tmpdir(), 'te-hist-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it('latency bins: eight a doubling, each latency at most its bin upper bound, within 9%', () => {
    for (const ms of [0, 0.4, 1, 3, 17.5, 250, 4096, 1e6]) {
      const up = binUpper(latencyBin(ms));
      expect(up).toBeGreaterThanOrEqual(ms);
      expect(up + 1).toBeLessThanOrEqual((ms + 1) * 1.0906);
    }
  });
  it('SQLite counts what the memory store counts', () => agree(() => openSqliteStore({ path: join(dir, 'calls.db') })));
});

describePg('auditHistogram (PostgreSQL)', (url) => {
  const fresh = freshSchemas(url);
  it('PostgreSQL counts what the memory store counts', () => agree(() => openPostgresStore({ connectionString: url, schema: fresh() })));
});
