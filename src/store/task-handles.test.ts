import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryStore } from './memory.js';
import { openPostgresStore } from './postgres/index.js';
import { openSqliteStore } from './sqlite/index.js';
import { SQLITE_MIGRATIONS } from './sqlite/migrations.js';
import type { TaskHandleRecord } from './task-handles.js';
import { describePg, dropSchema, freshSchema } from './test-support/pg.js';
import type { Store } from './types.js';

const dir = mkdtempSync(path.join(tmpdir(), 'te-task-handles-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const record = (over: Partial<TaskHandleRecord> = {}): TaskHandleRecord => ({
  handleHash: 'h'.repeat(64),
  owner: 'o'.repeat(64),
  upstream: 'jobs',
  upstreamTaskId: 'task-1',
  tool: 'jobs_report',
  context: { toolCallId: 'c1', nested: { n: 1 } },
  createdAt: 1_000,
  expiresAt: 5_000,
  ...over,
});

function suite(open: () => Promise<Store>) {
  it('finds a row only with its owner, before it expires; delete needs the owner', async () => {
    const store = await open();
    try {
      await store.taskHandles.put(record());
      expect(await store.taskHandles.get('h'.repeat(64), 'o'.repeat(64), 2_000)).toEqual(record());
      expect(await store.taskHandles.get('h'.repeat(64), 'x'.repeat(64), 2_000)).toBeUndefined();
      expect(await store.taskHandles.get('h'.repeat(64), 'o'.repeat(64), 5_000)).toBeUndefined();
      expect(await store.taskHandles.delete('h'.repeat(64), 'x'.repeat(64))).toBe(false);
      expect(await store.taskHandles.delete('h'.repeat(64), 'o'.repeat(64))).toBe(true);
      expect(await store.taskHandles.get('h'.repeat(64), 'o'.repeat(64), 2_000)).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('marks a task final once, for its owner only', async () => {
    const store = await open();
    try {
      await store.taskHandles.put(record());
      expect(await store.taskHandles.markFinal('h'.repeat(64), 'x'.repeat(64), 2_000)).toBe(false);
      const firsts = await Promise.all(Array.from({ length: 8 }, () => store.taskHandles.markFinal('h'.repeat(64), 'o'.repeat(64), 2_000)));
      expect(firsts.filter(Boolean)).toHaveLength(1);
      expect(await store.taskHandles.markFinal('nope', 'o'.repeat(64), 2_000)).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('refuses a duplicate handle and a bad record; drops expired rows on insert; null expiry never expires', async () => {
    const store = await open();
    try {
      await store.taskHandles.put(record({ handleHash: 'a'.repeat(64), expiresAt: null }));
      await store.taskHandles.put(record({ handleHash: 'b'.repeat(64), expiresAt: 1_500 }));
      await expect(store.taskHandles.put(record({ handleHash: 'a'.repeat(64) }))).rejects.toMatchObject({ code: 'store-failure' });
      await expect(store.taskHandles.put(record({ handleHash: '' }))).rejects.toMatchObject({ code: 'invalid-option' });
      await store.taskHandles.put(record({ handleHash: 'c'.repeat(64), createdAt: 2_000 }));
      // b expired at 1 500: gone even for a reader whose clock is earlier.
      expect(await store.taskHandles.get('b'.repeat(64), 'o'.repeat(64), 1_000)).toBeUndefined();
      expect((await store.taskHandles.get('a'.repeat(64), 'o'.repeat(64), Number.MAX_SAFE_INTEGER))?.expiresAt).toBeNull();
    } finally {
      await store.close();
    }
  });
}

describe('task handles: memory store', () => suite(async () => createMemoryStore()));

describe('task handles: SQLite store', () => {
  let n = 0;
  suite(async () => openSqliteStore({ path: path.join(dir, `t${++n}.db`), chainKey: false, auditWorker: false }));

  it('migration 6 creates the table, and rows survive closing and reopening the file', async () => {
    const file = path.join(dir, 'reopen.db');
    const a = await openSqliteStore({ path: file, chainKey: false, auditWorker: false });
    // Every migration ran (6 made the table; later ones, such as 7's budgets, ran after it).
    expect(await a.schemaVersion()).toBe(SQLITE_MIGRATIONS.length);
    await a.taskHandles.put(record({ expiresAt: null }));
    await a.close();
    const b = await openSqliteStore({ path: file, chainKey: false, auditWorker: false });
    try {
      expect(await b.taskHandles.get('h'.repeat(64), 'o'.repeat(64), Date.now())).toEqual(record({ expiresAt: null }));
    } finally {
      await b.close();
    }
  });
});

describePg('task handles: PostgreSQL store', (url) => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const s of schemas) await dropSchema(url, s);
  });
  suite(async () => {
    const schema = freshSchema();
    schemas.push(schema);
    return openPostgresStore({ connectionString: url, schema, chainKey: false });
  });
});
