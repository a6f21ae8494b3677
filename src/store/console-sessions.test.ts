import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type ConsoleOidcFlowRecord, type ConsoleOidcFlowTable, createMemoryConsoleOidcFlows } from './console-oidc-flows.js';
import type { ConsoleSessionRecord } from './console-sessions.js';
import { type ConsoleSignInFailureTable, createMemoryConsoleSignInFailures } from './console-sign-in-failures.js';
import { createMemoryStore } from './memory.js';
import { postgresConsoleOidcFlows } from './postgres/console-oidc-flows.js';
import { postgresConsoleSignInFailures } from './postgres/console-sign-in-failures.js';
import { openPostgresStore } from './postgres/index.js';
import { sqliteConsoleOidcFlows } from './sqlite/console-oidc-flows.js';
import { sqliteConsoleSignInFailures } from './sqlite/console-sign-in-failures.js';
import { openSqliteStore } from './sqlite/index.js';
import { migrateSqlite } from './sqlite/migrations.js';
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

const flow = (over: Partial<ConsoleOidcFlowRecord> = {}): ConsoleOidcFlowRecord => ({
  keyHash: '1'.repeat(64),
  flow: JSON.stringify({ verifier: 'v', state: 's', nonce: 'n' }),
  createdAt: 1_000,
  expiresAt: 601_000,
  ...over,
});

/** Puts four flows, one second apart, into a table of at most three: the first to end goes. */
async function expectBounded(t: ConsoleOidcFlowTable): Promise<void> {
  for (let i = 1; i <= 4; i++) await t.put(flow({ keyHash: String(i).repeat(64), createdAt: i * 1_000, expiresAt: i * 1_000 + 600_000 }));
  expect(await t.take('1'.repeat(64), 5_000)).toBeUndefined();
  for (const i of [2, 3, 4]) expect(await t.take(String(i).repeat(64), 5_000)).toMatchObject({ createdAt: i * 1_000 });
}

/**
 * Fails four addresses in a table of at most three: when the fourth comes, the window that ends
 * first goes (not the first to arrive); a failure of an address already there deletes nothing.
 * `rows` counts the table's rows.
 */
async function expectFailuresBounded(t: ConsoleSignInFailureTable, rows: () => Promise<number>): Promise<void> {
  await t.fail('10.0.1.1', 1_000, 62_000);
  await t.fail('10.0.1.2', 1_000, 61_000);
  await t.fail('10.0.1.3', 3_000, 63_000);
  expect(await t.fail('10.0.1.1', 3_500, 63_500)).toBe(2);
  expect(await rows()).toBe(3);
  expect(await t.fail('10.0.1.4', 4_000, 64_000)).toBe(1);
  expect(await rows()).toBe(3);
  expect(await t.count('10.0.1.1', 4_000)).toBe(2);
  expect(await t.count('10.0.1.2', 4_000)).toBe(0);
  for (const i of [3, 4]) expect(await t.count(`10.0.1.${i}`, 4_000)).toBe(1);
}

function suite(open: () => Promise<Store>) {
  it('takes a failure back (a sign-in that succeeded): one less in the running window, never below 0', async () => {
    const store = await open();
    const t = store.consoleSignInFailures;
    try {
      expect(await t.forgive('10.0.0.5', 1_000)).toBe(0);
      expect(await t.count('10.0.0.5', 1_000)).toBe(0);
      for (let i = 0; i < 3; i++) await t.fail('10.0.0.5', 1_000, 61_000);
      expect(await t.forgive('10.0.0.5', 2_000)).toBe(2);
      expect(await t.count('10.0.0.5', 2_000)).toBe(2);
      expect(await t.forgive('10.0.0.5', 2_000)).toBe(1);
      expect(await t.forgive('10.0.0.5', 2_000)).toBe(0);
      expect(await t.forgive('10.0.0.5', 2_000)).toBe(0);
      expect(await t.fail('10.0.0.5', 3_000, 63_000)).toBe(1);
      // After the window's end there is nothing to take back.
      expect(await t.forgive('10.0.0.5', 61_000)).toBe(0);
      await expect(t.forgive('', 1_000)).rejects.toMatchObject({ code: 'invalid-option' });
    } finally {
      await store.close();
    }
  });

  it('counts failed sign-ins per address in a window; a failure after its end starts a new one; ended windows go', async () => {
    const store = await open();
    const t = store.consoleSignInFailures;
    try {
      expect(await t.count('10.0.0.1', 1_000)).toBe(0);
      expect(await t.fail('10.0.0.1', 1_000, 61_000)).toBe(1);
      expect(await t.fail('10.0.0.1', 2_000, 62_000)).toBe(2);
      expect(await t.fail('10.0.0.2', 3_000, 63_000)).toBe(1);
      expect(await t.count('10.0.0.1', 60_999)).toBe(2);
      expect(await t.count('10.0.0.1', 61_000)).toBe(0);
      // The window began at the first failure: the second did not move its end.
      expect(await t.fail('10.0.0.1', 61_000, 121_000)).toBe(1);
      expect(await t.count('10.0.0.1', 61_500)).toBe(1);
      // 10.0.0.2's window ended at 63 000: a failure of another address at 70 000 deletes it.
      expect(await t.fail('10.0.0.3', 70_000, 130_000)).toBe(1);
      expect(await t.count('10.0.0.2', 4_000)).toBe(0);
      expect(await t.count('10.0.0.1', 61_500)).toBe(1);
      await expect(t.fail('', 1_000, 2_000)).rejects.toMatchObject({ code: 'invalid-option' });
      await expect(t.fail('x'.repeat(257), 1_000, 2_000)).rejects.toMatchObject({ code: 'invalid-option' });
      await expect(t.fail('10.0.0.1', 1_000, 1_000)).rejects.toMatchObject({ code: 'invalid-option' });
      await expect(t.count('10.0.0.1', Number.NaN)).rejects.toMatchObject({ code: 'invalid-option' });
    } finally {
      await store.close();
    }
  });

  it('an OIDC flow is taken once, whole; an ended one reads as absent; a bad record is refused', async () => {
    const store = await open();
    const t = store.consoleOidcFlows;
    try {
      await t.put(flow());
      expect(await t.take('1'.repeat(64), 2_000)).toEqual(flow());
      // Taken: a replay finds nothing.
      expect(await t.take('1'.repeat(64), 2_000)).toBeUndefined();
      await t.put(flow({ keyHash: '2'.repeat(64) }));
      await expect(t.put(flow({ keyHash: '2'.repeat(64) }))).rejects.toMatchObject({ code: 'store-failure' });
      expect(await t.take('2'.repeat(64), 601_000)).toBeUndefined();
      // Taken even when ended: an earlier clock does not bring it back.
      expect(await t.take('2'.repeat(64), 2_000)).toBeUndefined();
      await expect(t.put(flow({ keyHash: 'not-a-hash' }))).rejects.toMatchObject({ code: 'invalid-option' });
      await expect(t.put(flow({ keyHash: '3'.repeat(64), flow: '' }))).rejects.toMatchObject({ code: 'invalid-option' });
      await expect(t.put(flow({ keyHash: '3'.repeat(64), expiresAt: Number.NaN }))).rejects.toMatchObject({ code: 'invalid-option' });
      await expect(t.take('raw-cookie-value', 2_000)).rejects.toMatchObject({ code: 'invalid-option' });
    } finally {
      await store.close();
    }
  });

  it('putting an OIDC flow deletes the ended ones', async () => {
    const store = await open();
    const t = store.consoleOidcFlows;
    try {
      await t.put(flow({ keyHash: '4'.repeat(64) }));
      await t.put(flow({ keyHash: '5'.repeat(64), expiresAt: 900_000 }));
      // 4 ended at 601 000: a flow started at 700 000 deletes it, not 5.
      await t.put(flow({ keyHash: '6'.repeat(64), createdAt: 700_000, expiresAt: 1_300_000 }));
      expect(await t.take('4'.repeat(64), 2_000)).toBeUndefined();
      expect(await t.take('5'.repeat(64), 2_000)).toMatchObject({ expiresAt: 900_000 });
      expect(await t.take('6'.repeat(64), 700_001)).toMatchObject({ createdAt: 700_000 });
    } finally {
      await store.close();
    }
  });

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

describe('console sessions: memory store', () => {
  suite(async () => createMemoryStore());
  it('keeps at most its bound of OIDC flows', () => expectBounded(createMemoryConsoleOidcFlows(() => {}, 3)));
  it('keeps at most its bound of sign-in failure addresses', async () => {
    const t = createMemoryConsoleSignInFailures(() => {}, 3);
    const live = ['10.0.1.1', '10.0.1.2', '10.0.1.3', '10.0.1.4'];
    await expectFailuresBounded(t, async () => (await Promise.all(live.map((a) => t.count(a, 4_000)))).filter((n) => n > 0).length);
  });
});

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

  it('sign-in failures counted by two connections (two processes over the file) add up', async () => {
    const file = path.join(dir, 'failures.db');
    const [a, b] = [await open(file), await open(file)];
    try {
      const now = Date.now();
      await Promise.all([a, b, a, b].map((s) => s.consoleSignInFailures.fail('10.0.0.9', now, now + 60_000)));
      expect(await a.consoleSignInFailures.count('10.0.0.9', now)).toBe(4);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('an OIDC flow put by one connection is taken by another, once', async () => {
    const file = path.join(dir, 'flows.db');
    const [a, b] = [await open(file), await open(file)];
    try {
      await a.consoleOidcFlows.put(flow());
      const [x, y] = await Promise.all([b.consoleOidcFlows.take('1'.repeat(64), 2_000), a.consoleOidcFlows.take('1'.repeat(64), 2_000)]);
      expect([x, y].filter(Boolean)).toEqual([flow()]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('keeps at most its bound of OIDC flows', async () => {
    const db = new Database(path.join(dir, 'bound.db'));
    try {
      migrateSqlite(db);
      await expectBounded(sqliteConsoleOidcFlows(db, () => {}, 3));
    } finally {
      db.close();
    }
  });

  it('keeps at most its bound of sign-in failure addresses, exactly, with two connections failing new addresses at once', async () => {
    const file = path.join(dir, 'failures-bound.db');
    const [x, y] = [new Database(file), new Database(file)];
    try {
      migrateSqlite(x);
      const rows = async () => Number(x.prepare('SELECT count(*) FROM console_sign_in_failures').pluck().get());
      const [a, b] = [sqliteConsoleSignInFailures(x, () => {}, 3), sqliteConsoleSignInFailures(y, () => {}, 3)];
      await expectFailuresBounded(a, rows);
      await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).fail(`10.0.2.${i}`, 5_000, 65_000 + i)));
      expect(await rows()).toBe(3);
      for (const i of [37, 38, 39]) expect(await a.count(`10.0.2.${i}`, 5_000)).toBe(1);
    } finally {
      x.close();
      y.close();
    }
  });
});

describePg('console sessions: PostgreSQL store', (url) => {
  const schema = freshSchemas(url);
  suite(async () => openPostgresStore({ connectionString: url, schema: schema(), chainKey: false }));

  it('two replicas taking one OIDC flow at once: one gets it; counting sign-in failures at once: exact; the flows table keeps at most its bound', async () => {
    const s = schema();
    const [a, b] = [
      await openPostgresStore({ connectionString: url, schema: s, chainKey: false }),
      await openPostgresStore({ connectionString: url, schema: s, chainKey: false }),
    ];
    const pool = new pg.Pool({ connectionString: url, options: `-c search_path=${s}`, max: 1 });
    try {
      await a.consoleOidcFlows.put(flow());
      const [x, y] = await Promise.all([a.consoleOidcFlows.take('1'.repeat(64), 2_000), b.consoleOidcFlows.take('1'.repeat(64), 2_000)]);
      expect([x, y].filter(Boolean)).toEqual([flow()]);
      // Failed sign-ins counted by both replicas at once: each counted exactly once.
      const counts = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).consoleSignInFailures.fail('10.0.0.9', 1_000, 61_000)));
      expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(await b.consoleSignInFailures.count('10.0.0.9', 1_000)).toBe(20);
      await expectBounded(postgresConsoleOidcFlows((_what, text, values) => pool.query(text, values), 3));
    } finally {
      await pool.end();
      await a.close();
      await b.close();
    }
  });

  it('keeps at most its bound of sign-in failure addresses; new addresses failing at once on two replicas pass it by at most their number, the next one brings it back', async () => {
    const s = schema();
    // Opened for its migrations: the tables below run on pools of their own, with a bound of 3.
    await (await openPostgresStore({ connectionString: url, schema: s, chainKey: false })).close();
    const pools = [0, 1].map(() => new pg.Pool({ connectionString: url, options: `-c search_path=${s}`, max: 4 }));
    const [a, b] = pools.map((p) => postgresConsoleSignInFailures((_what, text, values) => p.query(text, values), 3)) as [
      ConsoleSignInFailureTable,
      ConsoleSignInFailureTable,
    ];
    const rows = async () => Number((await pools[0]!.query('SELECT count(*) AS n FROM console_sign_in_failures')).rows[0].n);
    try {
      await expectFailuresBounded(a, rows);
      // Eight statements at most run at once (two pools of four): 40 new addresses leave at most 3 + 8 rows.
      await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).fail(`10.0.2.${i}`, 5_000, 65_000 + i)));
      expect(await rows()).toBeLessThanOrEqual(3 + 8);
      await a.fail('10.0.2.99', 5_000, 70_000);
      expect(await rows()).toBe(3);
      expect(await a.count('10.0.2.99', 5_000)).toBe(1);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });
});
