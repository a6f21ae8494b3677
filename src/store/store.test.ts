import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditByIdSql } from './query.js';
import { isToolEnvelopeError } from '../core/index.js';
import { CHAIN_PURPOSE, createMemoryStore, openStore, verifyAuditChain } from './index.js';
import { operatorKeyFromSecret } from './operator-key.js';
import { openPostgresStore, POSTGRES_MIGRATIONS } from './postgres/index.js';
import { useReferenceTextBinding } from './sqlite/audit-sql.js';
import { useReferenceAuditCommits } from './sqlite/audit-worker.js';
import { openSqliteStore, SQLITE_MIGRATIONS } from './sqlite/index.js';
import { migrateSqlite } from './sqlite/migrations.js';
import { describePg, dropSchema, freshSchema } from './test-support/pg.js';
import { defineStoreSuite, makeAudit } from './test-support/store-suite.js';

defineStoreSuite('memory', async () => ({ store: createMemoryStore(), cleanup: async () => {} }));

defineStoreSuite('sqlite', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'te-store-'));
  const file = path.join(dir, 'audit.db');
  return {
    store: await openSqliteStore({ path: file }),
    reopen: () => openSqliteStore({ path: file }),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
});

defineStoreSuite('sqlite, one transaction per batch (the reference of the writer thread group commit)', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'te-store-'));
  const file = path.join(dir, 'audit.db');
  const open = async () => {
    // Read when a store starts its worker: only this store's worker commits batch by batch.
    useReferenceAuditCommits(true);
    try {
      return await openSqliteStore({ path: file });
    } finally {
      useReferenceAuditCommits(false);
    }
  };
  return { store: await open(), reopen: open, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
});

defineStoreSuite('sqlite, strings bound as strings (the reference of the byte binding), on the writer thread and on the calling thread', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'te-store-'));
  const file = path.join(dir, 'audit.db');
  let n = 0;
  const open = async () => {
    // Read when a store opens. Alternately with and without the writer thread: both commit paths.
    useReferenceTextBinding(true);
    try {
      return await openSqliteStore({ path: file, auditWorker: n++ % 2 === 0 });
    } finally {
      useReferenceTextBinding(false);
    }
  };
  return { store: await open(), reopen: open, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
});

defineStoreSuite('sqlite, audit on the calling thread', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'te-store-'));
  const file = path.join(dir, 'audit.db');
  return {
    store: await openSqliteStore({ path: file, auditWorker: false }),
    reopen: () => openSqliteStore({ path: file, auditWorker: false }),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
});

describePg('postgres store', (url) => {
  defineStoreSuite('postgres', async () => {
    const schema = freshSchema();
    return {
      store: await openPostgresStore({ connectionString: url, schema }),
      reopen: () => openPostgresStore({ connectionString: url, schema }),
      cleanup: () => dropSchema(url, schema),
    };
  });

  it('two stores opening one fresh schema at once migrate it once', async () => {
    const schema = freshSchema();
    try {
      const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore({ connectionString: url, schema })));
      for (const s of stores) expect(await s.schemaVersion()).toBe(POSTGRES_MIGRATIONS.length);
      const rows = await stores[0]!.pool.query('SELECT COUNT(*)::int AS n FROM schema_migrations');
      expect(rows.rows[0].n).toBe(POSTGRES_MIGRATIONS.length);
      await Promise.all(stores.map((s) => s.close()));
    } finally {
      await dropSchema(url, schema);
    }
  });

  it('openStore picks PostgreSQL for a postgres:// URL', async () => {
    const schema = freshSchema();
    const s = await openStore(url, { schema });
    expect(s.kind).toBe('postgres');
    await s.close();
    await dropSchema(url, schema);
  });

  it('reports an unreachable server as store-failure', async () => {
    const e = await openPostgresStore({ connectionString: 'postgres://nobody@127.0.0.1:1/none' }).catch((x: unknown) => x);
    expect(isToolEnvelopeError(e, 'store-failure')).toBe(true);
  });
});

describe('sqlite specifics', () => {
  it('uses WAL and records each migration once when several handles open one new file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-store-'));
    try {
      const file = path.join(dir, 'a.db');
      const stores = await Promise.all(Array.from({ length: 3 }, () => openSqliteStore({ path: file })));
      expect(stores[0]!.db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(stores[0]!.db.pragma('page_size', { simple: true })).toBe(4096);
      expect(stores[0]!.db.pragma('synchronous', { simple: true })).toBe(1);
      expect((stores[0]!.db.prepare('SELECT COUNT(*) AS n FROM schema_migrations').get() as { n: number }).n).toBe(SQLITE_MIGRATIONS.length);
      expect(stores[0]!.integrityCheck()).toBe('ok');
      for (const s of stores) await s.close();
      const full = await openSqliteStore({ path: file, synchronous: 'FULL' });
      expect(full.db.pragma('synchronous', { simple: true })).toBe(2);
      await full.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps working on a file made with 16 KiB pages (as earlier versions made them), its chain verifying', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-store-'));
    try {
      const file = path.join(dir, 'old.db');
      // What openSqliteStore did before new files got 4 KiB pages.
      const old = new Database(file);
      old.pragma('page_size = 16384');
      old.pragma('journal_mode = WAL');
      migrateSqlite(old);
      old.close();
      const key = operatorKeyFromSecret(Buffer.alloc(32, 9));
      const written = [makeAudit(), makeAudit({ status: 'error', category: 'timeout', errorCode: 'deadline-exceeded' })];
      for (const r of written) {
        const store = await openSqliteStore({ path: file, chainKey: key });
        await store.appendAudit([r]);
        await store.close();
      }
      const store = await openSqliteStore({ path: file, chainKey: key });
      try {
        expect(store.db.pragma('page_size', { simple: true })).toBe(16384);
        for (const r of written) expect((await store.getAudit(r.id))?.toolCallId).toBe(r.toolCallId);
        expect(await store.countAudit({ category: 'timeout' })).toBe(1);
        const report = await verifyAuditChain(store.chainReader(), key.derive(CHAIN_PURPOSE));
        expect(report).toMatchObject({ ok: true, verified: 2, writers: 2 });
        expect(store.integrityCheck()).toBe('ok');
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers each audit query of the CLI through an index', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-store-'));
    try {
      const store = await openSqliteStore({ path: path.join(dir, 'p.db') });
      const plan = (sql: string, ...params: unknown[]): string =>
        (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail).join('; ');
      // By id: the completed record through audit_id, the started one through audit_started_id;
      // hiding a completed started record looks its id up in audit_id.
      expect(plan(auditByIdSql('?', '?'), 'a', 'a')).toMatch(/USING INDEX audit_id .*USING INDEX audit_started_id/);
      expect(plan("SELECT 1 FROM audit c WHERE c.id = ? AND c.status <> 'started'", 'a')).toMatch(/USING INDEX audit_id/);
      expect(plan('SELECT * FROM audit WHERE call_key = ? AND tool_call_id = ? ORDER BY seq DESC LIMIT 2', 1, 'c')).toMatch(/USING INDEX audit_call/);
      expect(plan('SELECT * FROM audit WHERE tool IN (?) ORDER BY seq DESC LIMIT 101', 'a')).toMatch(/USING INDEX audit_tool/);
      expect(plan('SELECT * FROM audit WHERE session_id = ? ORDER BY seq ASC LIMIT 501', 's')).toMatch(/USING INDEX audit_session/);
      expect(plan('SELECT * FROM audit WHERE category IN (?) ORDER BY seq DESC LIMIT 101', 'timeout')).toMatch(/USING INDEX audit_category/);
      expect(plan('SELECT tool, status FROM audit WHERE started_at >= ? AND started_at < ?', 1, 2)).toMatch(/USING INDEX audit_started/);
      // The store's own lookup by tool call id goes through the hashed key.
      const r = makeAudit({ toolCallId: 'call-lookup' });
      await store.appendAudit([r, makeAudit()]);
      expect((await store.listAudit({ toolCallId: 'call-lookup' })).records.map((x) => x.id)).toEqual([r.id]);
      // Bodies travel to the worker as UTF-8 bytes; they are stored as text all the same.
      expect(store.db.prepare('SELECT DISTINCT typeof(body) AS t FROM audit').all()).toEqual([{ t: 'text' }]);
      expect(await store.countAudit({ toolCallId: 'other' })).toBe(0);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('applies retention given at open, on open and then periodically', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-store-'));
    try {
      const file = path.join(dir, 'r.db');
      const first = await openSqliteStore({ path: file });
      await first.appendAudit(Array.from({ length: 10 }, () => makeAudit({ startedAt: Date.now() })));
      await first.close();
      const kept = await openSqliteStore({ path: file, retention: { maxRecords: 3, intervalMs: 20 } });
      await expect.poll(() => kept.countAudit(), { timeout: 5000 }).toBe(3);
      await kept.appendAudit(Array.from({ length: 4 }, () => makeAudit({ startedAt: Date.now() })));
      await expect.poll(() => kept.countAudit(), { timeout: 5000 }).toBe(3);
      await kept.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad options and unreadable paths with typed errors', async () => {
    expect(await openSqliteStore({ path: '' }).catch((e: unknown) => isToolEnvelopeError(e, 'invalid-option'))).toBe(true);
    expect(await openSqliteStore({ path: '/nonexistent-dir/x/y.db' }).catch((e: unknown) => isToolEnvelopeError(e, 'store-failure'))).toBe(true);
    expect(await openStore('').catch((e: unknown) => isToolEnvelopeError(e, 'invalid-option'))).toBe(true);
  });

  it('openStore refuses a URL scheme it does not speak with invalid-option', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-store-'));
    try {
      for (const [location, scheme] of [
        ['mysql://x', 'mysql:'],
        ['redis://localhost:6379/0', 'redis:'],
        ['MongoDB+srv://h/db', 'MongoDB+srv:'],
      ]) {
        const err = await openStore(location!).catch((e: unknown) => e);
        expect(isToolEnvelopeError(err, 'invalid-option'), String(err)).toBe(true);
        expect((err as Error).message).toBe(`unsupported store scheme '${scheme}' (sqlite file path, memory, postgres://)`);
      }
      // sqlite:// (three slashes: an absolute path) is still a SQLite file.
      const s = await openStore(`sqlite://${path.join(dir, 'c.db')}`);
      expect(s.kind).toBe('sqlite');
      await s.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('openStore picks memory and SQLite by location', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-store-'));
    try {
      expect((await openStore('memory')).kind).toBe('memory');
      const s = await openStore(`sqlite:${path.join(dir, 'b.db')}`);
      expect(s.kind).toBe('sqlite');
      await s.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
