// The console's catch-up (stats-rollup.ts) folds a real SQLite store's log into its rollup in
// chunks until the mark reaches the newest record, keeps doing so as records arrive, and ends when
// the store closes; the histogram is the scan's throughout.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createMemoryStore } from '../store/memory.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { makeAudit } from '../store/test-support/store-suite.js';
import { keepRolledUp } from './stats-rollup.js';

const T0 = 1_700_000_000_000;

const settled = { timeout: 20_000, interval: 50 };

describe('keepRolledUp', () => {
  const dir = mkdtempSync(join(tmpdir(), 'te-stats-rollup-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('folds the whole log in chunks, then what arrives, off the writes; the histogram stays the scan', async () => {
    const path = join(dir, 'a.db');
    const store = await openSqliteStore({ path });
    const peek = new Database(path, { readonly: true });
    const mark = (): number => Number(peek.prepare('SELECT rolled_up_to FROM audit_rollup_state').pluck().get());
    try {
      const records = Array.from({ length: 12_000 }, (_, i) => makeAudit({ tool: `t${i % 5}`, startedAt: T0 + i * 50, latencyMs: i % 300 }));
      await store.appendAudit(records);
      keepRolledUp(store);
      keepRolledUp(store);
      await vi.waitFor(() => expect(mark()).toBe(12_000), settled);
      await store.appendAudit([makeAudit({ startedAt: T0 + 1000 })]);
      await vi.waitFor(() => expect(mark()).toBe(12_001), settled);
      const window = { since: T0, until: T0 + 12_000 * 50 };
      const cells = await store.auditHistogram(window, 60_000);
      expect(cells.reduce((n, c) => n + c.count, 0)).toBe(12_001);
      const key = (c: object): string => JSON.stringify(c);
      expect(cells.map(key).sort()).toEqual((await store.auditHistogram(window, 60_000, { scan: true })).map(key).sort());
    } finally {
      peek.close();
      await store.close();
    }
  });

  it('does nothing for a store without a rollup', async () => {
    const store = createMemoryStore();
    expect(() => keepRolledUp(store)).not.toThrow();
    await store.close();
  });
});
