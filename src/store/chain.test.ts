/**
 * `audit verify` on a real SQLite file written by two writers at once (two stores, each with its
 * audit worker): a clean log verifies; an edited field, a deleted row and an inserted row are each
 * reported by record and exit 1; records from before the chain are unverifiable, not tampered.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as audit from '../cli/audit.js';
import { runVerb } from '../cli/test-support/run-verb.js';
import { AuditWriter } from './audit-writer.js';
import type { ChainReport } from './chain.js';
import { loadOperatorKey, type OperatorKey } from './operator-key.js';
import { auditRowValues } from './rows.js';
import { toolCallKey } from './query.js';
import { openPostgresStore } from './postgres/index.js';
import { openSqliteStore, SQLITE_MIGRATIONS } from './sqlite/index.js';
import { describePg, dropSchema, freshSchema } from './test-support/pg.js';
import { makeAudit } from './test-support/store-suite.js';

describe('audit verify: sqlite, two writers', () => {
  let dir: string;
  let file: string;
  let keyFile: string;
  let key: OperatorKey;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'te-chain-'));
    file = path.join(dir, 'calls.db');
    keyFile = path.join(dir, 'operator.key');
    writeFileSync(keyFile, Buffer.alloc(32, 9).toString('base64'), { mode: 0o600 });
    key = await loadOperatorKey({ file: keyFile });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function writeWithTwoWriters(perWriter: number): Promise<void> {
    const stores = await Promise.all([openSqliteStore({ path: file, chainKey: key }), openSqliteStore({ path: file, chainKey: key })]);
    await Promise.all(
      stores.map(async (s, w) => {
        const writer = new AuditWriter(s, { maxBatch: 50 });
        await Promise.all(Array.from({ length: perWriter }, (_, i) => writer.record(makeAudit({ tool: `w${w}`, startedAt: Date.now() + i }))));
        await writer.close();
      }),
    );
    for (const s of stores) await s.close();
  }

  async function verify(): Promise<{ code: number; report: ChainReport }> {
    const r = await runVerb(audit, ['verify', '--store', file, '--key-file', keyFile, '--format', 'json']);
    return { code: r.code, report: JSON.parse(r.stdout) as ChainReport };
  }

  const raw = (): Database.Database => new Database(file);

  it('verifies a clean log, then names an edited, a deleted and an inserted record', async () => {
    await writeWithTwoWriters(300);
    const clean = await verify();
    expect(clean.code).toBe(0);
    expect(clean.report).toMatchObject({ ok: true, verified: 600, unverifiable: 0, writers: 2, problems: [] });

    const db = raw();
    const [edited, deleted, copied] = db.prepare('SELECT * FROM audit ORDER BY seq LIMIT 3 OFFSET 100').all() as Record<string, unknown>[];
    db.prepare("UPDATE audit SET status = 'error' WHERE seq = ?").run(edited!.seq);
    db.prepare('DELETE FROM audit WHERE seq = ?').run(deleted!.seq);
    // An inserted record: a copy under a new id, once without a place and once claiming its source's place.
    const insert = (over: Record<string, unknown>) => {
      const row = { ...copied!, ...over };
      delete row.seq;
      const cols = Object.keys(row);
      db.prepare(`INSERT INTO audit (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`).run(...cols.map((c) => row[c]));
    };
    insert({ id: 'aud_forged_unplaced', chain_pos: null });
    insert({ id: 'aud_forged_placed' });
    db.close();

    const { code, report } = await verify();
    expect(code).toBe(1);
    expect(report.ok).toBe(false);
    const byKind = (k: string) => report.problems.filter((p) => p.kind === k);
    expect(
      byKind('edited').map((p) => p.id),
      JSON.stringify(report.problems),
    ).toEqual([edited!.id]);
    expect(byKind('deleted')).toHaveLength(1);
    expect(byKind('deleted')[0]!.n).toBe(Number(deleted!.chain_pos) % 2 ** 32);
    expect(
      byKind('inserted')
        .map((p) => p.id)
        .sort(),
    ).toEqual(['aud_forged_placed', 'aud_forged_unplaced']);
    const text = await runVerb(audit, ['verify', '--store', file, '--key-file', keyFile]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^TAMPERED/);
    expect(text.stdout).toContain(String(edited!.id));
  });

  it('reports a cut-off tail and a forged link, and a wrong key as unsigned', async () => {
    await writeWithTwoWriters(120);
    const db = raw();
    const last = db.prepare('SELECT writer, first_n, last_n FROM audit_chain ORDER BY writer DESC, first_n DESC LIMIT 1').get() as {
      writer: number;
      first_n: number;
      last_n: number;
    };
    // The last link and its records removed together: the signed head still names them.
    db.prepare('DELETE FROM audit WHERE chain_pos BETWEEN ? AND ?').run(last.writer * 2 ** 32 + last.first_n, last.writer * 2 ** 32 + last.last_n);
    db.prepare('DELETE FROM audit_chain WHERE writer = ? AND first_n = ?').run(last.writer, last.first_n);
    db.close();
    const { code, report } = await verify();
    expect(code).toBe(1);
    expect(report.problems.map((p) => p.kind)).toEqual(['deleted']);
    expect(report.problems[0]!.detail).toContain('end of its chain');

    const otherKey = path.join(dir, 'other.key');
    writeFileSync(otherKey, Buffer.alloc(32, 1).toString('base64'), { mode: 0o600 });
    const wrong = await runVerb(audit, ['verify', '--store', file, '--key-file', otherKey, '--format', 'json']);
    // Another key than the writers': nothing verified, and said so (not "tampered"), exit 2.
    expect(wrong.code).toBe(2);
    const wrongReport = JSON.parse(wrong.stdout) as ChainReport & { wrongKey?: { keyId: string; writerKeyIds: string[] } };
    expect(wrongReport.problems.every((p) => p.kind === 'writer' || p.kind === 'inserted')).toBe(true);
    const other = await loadOperatorKey({ file: otherKey });
    expect(wrongReport.wrongKey).toEqual({ keyId: other.id, writerKeyIds: [key.id] });
    const wrongText = await runVerb(audit, ['verify', '--store', file, '--key-file', otherKey]);
    expect(wrongText.code).toBe(2);
    expect(wrongText.stdout).toBe(
      `WRONG KEY: no writer's chain is signed by this key (key id ${other.id}; the log's writers use ${key.id}): nothing could be verified; give the operator key the writers used\n`,
    );
    // Every registration edited, still naming this key: tampering, not a wrong key.
    const edit = raw();
    edit.prepare("UPDATE audit_writers SET mac = 'forged'").run();
    edit.close();
    const forged = await runVerb(audit, ['verify', '--store', file, '--key-file', keyFile]);
    expect(forged.code).toBe(1);
    expect(forged.stdout).toMatch(/^TAMPERED: 0 records verified \(0 writers\)/);
  });

  it('counts records written before the chain as unverifiable, not tampered', async () => {
    // A version 3 file (before the chain) with one record, then opened by this version.
    const db = raw();
    db.function('te_tool_call_key', { deterministic: true }, (id: unknown) => toolCallKey(id));
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    for (const m of SQLITE_MIGRATIONS.filter((x) => x.version <= 3)) {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
    }
    const old = makeAudit({ tool: 'old' });
    const values = [...auditRowValues(old, (b) => (b ? 1 : 0)), toolCallKey(old.toolCallId)];
    db.prepare(
      `INSERT INTO audit (id, tool, status, category, error_code, tool_call_id, run_id, trace_id, session_id, started_at, ended_at, latency_ms, idempotency_key, replay, approval_id, body, call_key) VALUES (${values.map(() => '?').join(', ')})`,
    ).run(...values);
    db.close();
    await writeWithTwoWriters(10);
    const { code, report } = await verify();
    expect(code).toBe(0);
    expect(report).toMatchObject({ ok: true, verified: 20, unverifiable: 1 });
  });
});

describePg('audit verify: postgres, two writers', (url) => {
  it('verifies a clean log, then names an edited, a deleted and an inserted record', async () => {
    const schema = freshSchema();
    const dir = mkdtempSync(path.join(tmpdir(), 'te-chain-pg-'));
    const keyFile = path.join(dir, 'operator.key');
    writeFileSync(keyFile, Buffer.alloc(32, 5).toString('base64'), { mode: 0o600 });
    const key = await loadOperatorKey({ file: keyFile });
    const location = `${url}`;
    const verifyPg = async (): Promise<{ code: number; report: ChainReport }> => {
      const r = await runVerb(audit, ['verify', '--store', location, '--pg-schema', schema, '--key-file', keyFile, '--format', 'json']);
      return { code: r.code, report: JSON.parse(r.stdout) as ChainReport };
    };
    try {
      const stores = await Promise.all([0, 1].map(() => openPostgresStore({ connectionString: url, schema, chainKey: key })));
      await Promise.all(
        stores.map(async (s, w) => {
          const writer = new AuditWriter(s, { maxBatch: 40 });
          await Promise.all(Array.from({ length: 150 }, (_, i) => writer.record(makeAudit({ tool: `w${w}`, startedAt: Date.now() + i }))));
          await writer.close();
        }),
      );
      const clean = await verifyPg();
      expect(clean.report).toMatchObject({ ok: true, verified: 300, unverifiable: 0, writers: 2 });
      expect(clean.code).toBe(0);
      const pool = stores[0]!.pool;
      const picked = (await pool.query('SELECT seq, id, chain_pos FROM audit ORDER BY seq LIMIT 3 OFFSET 60')).rows as {
        seq: string;
        id: string;
        chain_pos: string;
      }[];
      const [edited, deleted, copied] = picked as [(typeof picked)[0], (typeof picked)[0], (typeof picked)[0]];
      await pool.query('UPDATE audit SET latency_ms = latency_ms + 1 WHERE seq = $1', [edited.seq]);
      await pool.query('DELETE FROM audit WHERE seq = $1', [deleted.seq]);
      await pool.query(
        `INSERT INTO audit (id, tool, status, category, error_code, tool_call_id, run_id, trace_id, session_id, started_at, ended_at, latency_ms, idempotency_key, replay, approval_id, body, chain_pos)
         SELECT 'aud_forged_pg', tool, status, category, error_code, tool_call_id, run_id, trace_id, session_id, started_at, ended_at, latency_ms, idempotency_key, replay, approval_id, body, NULL FROM audit WHERE seq = $1`,
        [copied.seq],
      );
      for (const s of stores) await s.close();
      const { code, report } = await verifyPg();
      expect(code).toBe(1);
      expect(report.problems.filter((p) => p.kind === 'edited').map((p) => p.id)).toEqual([edited.id]);
      expect(report.problems.filter((p) => p.kind === 'deleted').map((p) => p.n)).toEqual([Number(deleted.chain_pos) % 2 ** 32]);
      expect(report.problems.filter((p) => p.kind === 'inserted').map((p) => p.id)).toEqual(['aud_forged_pg']);
    } finally {
      await dropSchema(url, schema);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('chainLink digests', () => {
  it('are each row’s CRC-32 as eight lower-case hex digits, as written by every release of the chain', async () => {
    const { chainLink, crc32 } = await import('./chain-link.js');
    const { createHmac, createSecretKey } = await import('node:crypto');
    if (!crc32) return expect(crc32).toBeUndefined();
    // Rows whose CRCs have the high bit set and leading zero digits among them.
    const rows = Array.from({ length: 400 }, (_, i) => Buffer.from(`row ${i} ${'x'.repeat(i % 37)}`));
    const bytes = Buffer.concat(rows);
    const meta = new Uint32Array(rows.length * 3);
    let at = 0;
    rows.forEach((r, i) => {
      meta.set([at, at, at + r.length], 3 * i);
      at += r.length;
    });
    const crcs = rows.map((r) => crc32(r) >>> 0);
    expect(crcs.some((c) => c >= 2 ** 31)).toBe(true);
    expect(crcs.some((c) => c < 2 ** 28)).toBe(true);
    const link = chainLink(createHmac, crc32, createSecretKey(Buffer.alloc(32, 1)), 1, 'prev', 1, bytes, meta);
    expect(link.digests).toBe(crcs.map((c) => c.toString(16).padStart(8, '0')).join(''));
  });
});
