import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ConsoleSessionRecord } from './console-sessions.js';
import { createMemoryStore } from './memory.js';
import { openPostgresStore } from './postgres/index.js';
import { openSqliteStore } from './sqlite/index.js';
import { describePg, freshSchemas } from './test-support/pg.js';
import type { Store } from './types.js';

const dir = mkdtempSync(path.join(tmpdir(), 'te-console-sessions-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const record = (over: Partial<ConsoleSessionRecord> = {}): ConsoleSessionRecord => ({
  idHash: 'a'.repeat(64),
  identity: JSON.stringify({ principal: { kind: 'user', id: 'rita' }, role: 'approver', tenant: 'acme' }),
  createdAt: 1_000,
  lastSeenAt: 1_000,
  idleUntil: 2_000,
  expiresAt: 10_000,
  ...over,
});

function suite(open: () => Promise<Store>) {
  it('reads a session until its idle end, which a touch moves, and never past its absolute end', async () => {
    const store = await open();
    const t = store.consoleSessions;
    try {
      await t.create(record());
      expect(await t.get('a'.repeat(64), 1_500)).toEqual(record());
      await t.touch('a'.repeat(64), 1_900, 2_900);
      expect(await t.get('a'.repeat(64), 2_500)).toEqual(record({ lastSeenAt: 1_900, idleUntil: 2_900 }));
      await t.touch('a'.repeat(64), 9_000, 11_000);
      expect(await t.get('a'.repeat(64), 9_999)).toMatchObject({ idleUntil: 11_000 });
      expect(await t.get('a'.repeat(64), 10_000)).toBeUndefined();
      // Read as ended, it was deleted: an earlier clock does not bring it back.
      expect(await t.get('a'.repeat(64), 1_500)).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('ends a session idle past its end; sign-out ends it at once', async () => {
    const store = await open();
    const t = store.consoleSessions;
    try {
      await t.create(record());
      expect(await t.get('a'.repeat(64), 2_000)).toBeUndefined();
      await t.create(record({ idHash: 'b'.repeat(64) }));
      expect(await t.end('b'.repeat(64))).toBe(true);
      expect(await t.get('b'.repeat(64), 1_500)).toBeUndefined();
      expect(await t.end('b'.repeat(64))).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('refuses a duplicate id hash and a bad record; deletes ended rows when a session is created', async () => {
    const store = await open();
    const t = store.consoleSessions;
    try {
      await t.create(record({ idHash: 'c'.repeat(64) }));
      await t.create(record({ idHash: 'd'.repeat(64), idleUntil: 50_000 }));
      await expect(t.create(record({ idHash: 'c'.repeat(64) }))).rejects.toMatchObject({ code: 'store-failure' });
      await expect(t.create(record({ idHash: 'not-a-hash' }))).rejects.toMatchObject({ code: 'invalid-option' });
      await expect(t.create(record({ idHash: 'e'.repeat(64), expiresAt: Number.NaN }))).rejects.toMatchObject({ code: 'invalid-option' });
      // c ended (idle) at 2 000 and d (absolute) at 10 000: a sign-in at 20 000 deletes both.
      await t.create(record({ idHash: 'f'.repeat(64), createdAt: 20_000, lastSeenAt: 20_000, idleUntil: 21_000, expiresAt: 30_000 }));
      expect(await t.get('c'.repeat(64), 1_500)).toBeUndefined();
      expect(await t.get('d'.repeat(64), 1_500)).toBeUndefined();
      expect(await t.get('f'.repeat(64), 20_500)).toMatchObject({ createdAt: 20_000 });
    } finally {
      await store.close();
    }
  });
}

describe('console sessions: memory store', () => suite(async () => createMemoryStore()));

describe('console sessions: SQLite store', () => {
  let n = 0;
  const open = (file = path.join(dir, `s${++n}.db`)) => openSqliteStore({ path: file, chainKey: false, auditWorker: false });
  suite(() => open());

  it('a session written by one connection is read by another (another process over the file)', async () => {
    const file = path.join(dir, 'shared.db');
    const [a, b] = [await open(file), await open(file)];
    try {
      await a.consoleSessions.create(record({ expiresAt: Number.MAX_SAFE_INTEGER, idleUntil: Number.MAX_SAFE_INTEGER }));
      expect(await b.consoleSessions.get('a'.repeat(64), Date.now())).toMatchObject({ createdAt: 1_000 });
      expect(await b.consoleSessions.end('a'.repeat(64))).toBe(true);
      expect(await a.consoleSessions.get('a'.repeat(64), Date.now())).toBeUndefined();
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describePg('console sessions: PostgreSQL store', (url) => {
  const schema = freshSchemas(url);
  suite(async () => openPostgresStore({ connectionString: url, schema: schema(), chainKey: false }));
});
