/**
 * Schema upgrades: a database written by schema version 1 (five JSON columns per audit row) is
 * opened by the current library, which migrates it on open. Every record must read back as it
 * was written, keep its sequence number, and new records must continue after the old ones.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../core/index.js';
import { openPostgresStore, POSTGRES_MIGRATIONS } from './postgres/index.js';
import { openSqliteStore, SQLITE_MIGRATIONS } from './sqlite/index.js';
import { describePg, dropSchema, freshSchema } from './test-support/pg.js';
import { makeAudit } from './test-support/store-suite.js';
import type { AuditRecord, Store } from './types.js';

const V1_COLUMNS = [
  'id',
  'tool',
  'status',
  'category',
  'error_code',
  'tool_call_id',
  'run_id',
  'trace_id',
  'session_id',
  'started_at',
  'ended_at',
  'latency_ms',
  'idempotency_key',
  'replay',
  'approval_id',
  'policy_decision_id',
  'effective_mode',
  'call_envelope',
  'result_envelope',
  'outcome',
  'principal_chain',
  'policy_decision',
];

/** A record's values as schema version 1 stored them. */
function v1Row(r: AuditRecord, bool: (b: boolean) => unknown): unknown[] {
  return [
    r.id,
    r.tool,
    r.status,
    r.category,
    r.errorCode,
    r.toolCallId,
    r.runId,
    r.traceId,
    r.sessionId,
    r.startedAt,
    r.endedAt,
    r.latencyMs,
    r.idempotencyKey ?? null,
    bool(r.replay === true),
    r.approvalId ?? null,
    r.policyDecision?.id ?? null,
    r.policyDecision?.effectiveMode ?? null,
    JSON.stringify(r.callEnvelope),
    JSON.stringify(r.resultEnvelope),
    JSON.stringify(r.outcome),
    JSON.stringify(r.principalChain),
    r.policyDecision === null ? null : JSON.stringify(r.policyDecision),
  ];
}

function oldRecords(): AuditRecord[] {
  const hostile = JSON.parse('{"__proto__": {"polluted": true}, "constructor": "x", "z": 1, "a": "héllo 😀"}') as JsonObject;
  return [
    makeAudit({ tool: 'fs.read' }),
    makeAudit({ tool: 'fs.write', status: 'error', category: 'timeout', errorCode: 'deadline-exceeded', outcome: hostile, replay: true, idempotencyKey: 'k1' }),
    makeAudit({ tool: 'fs.read', sessionId: null, policyDecision: null, approvalId: 'apr_1' }),
    makeAudit({ tool: 'fs.delete', status: 'paused' }),
  ];
}

async function expectUpgraded(store: Store, records: AuditRecord[], version: number): Promise<void> {
  expect(await store.schemaVersion()).toBe(version);
  const { records: listed } = await store.listAudit({}, { order: 'asc' });
  // The last old record was deleted before the upgrade; the others read back exactly, in their old order.
  const kept = records.slice(0, -1);
  expect(listed.map(({ seq: _seq, ...r }) => r)).toEqual(kept);
  expect(listed.map((r) => r.seq)).toEqual([1, 2, 3]);
  expect(JSON.stringify((await store.getAudit(kept[1]!.id))?.outcome)).toBe(JSON.stringify(kept[1]!.outcome));
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect((await store.listAudit({ toolCallId: kept[2]!.toolCallId })).records.map((r) => r.id)).toEqual([kept[2]!.id]);
  expect((await store.listAudit({ category: 'timeout' })).records.map((r) => r.id)).toEqual([kept[1]!.id]);
  expect(await store.countAudit({ tool: 'fs.read' })).toBe(2);
  const [write] = await store.auditStats({ tool: 'fs.write' });
  expect(write).toMatchObject({ count: 1, replays: 1, byCategory: { timeout: 1 } });
  // New records continue after the old ones, past the deleted one: cursors never see a reused seq.
  const fresh = makeAudit({ tool: 'fs.read' });
  await store.appendAudit([fresh]);
  const got = await store.getAudit(fresh.id);
  expect(got?.seq).toBe(5);
  await expect(store.appendAudit([{ ...kept[0]! }])).rejects.toMatchObject({ code: 'store-failure' });
}

describe('sqlite schema upgrade', () => {
  it('migrates a version 1 file on open, keeping every record, its seq and the id high-water mark', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-migrate-'));
    try {
      const file = path.join(dir, 'v1.db');
      const records = oldRecords();
      const old = new Database(file);
      old.pragma('journal_mode = WAL');
      old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
      old.exec(SQLITE_MIGRATIONS[0]!.sql);
      old.prepare('INSERT INTO schema_migrations VALUES (1, ?, 0)').run(SQLITE_MIGRATIONS[0]!.name);
      const insert = old.prepare(`INSERT INTO audit (${V1_COLUMNS.join(', ')}) VALUES (${V1_COLUMNS.map(() => '?').join(', ')})`);
      for (const r of records) insert.run(v1Row(r, (b) => (b ? 1 : 0)));
      old.prepare('DELETE FROM audit WHERE id = ?').run(records[3]!.id);
      old.close();

      const store = await openSqliteStore({ path: file });
      try {
        await expectUpgraded(store, records, SQLITE_MIGRATIONS.length);
        expect(store.integrityCheck()).toBe('ok');
        const columns = (store.db.prepare('PRAGMA table_info(audit)').all() as { name: string }[]).map((c) => c.name);
        expect(columns).not.toContain('call_envelope');
        const indexes = (
          store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit' AND sql IS NOT NULL").all() as { name: string }[]
        )
          .map((i) => i.name)
          .sort();
        expect(indexes).toEqual(['audit_call', 'audit_category', 'audit_id', 'audit_session', 'audit_started', 'audit_started_id', 'audit_tool']);
      } finally {
        await store.close();
      }
      // A second open finds nothing left to do.
      const again = await openSqliteStore({ path: file });
      expect(await again.countAudit()).toBe(4);
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describePg('postgres schema upgrade', (url) => {
  it('migrates a version 1 schema on open, keeping every record and its seq', async () => {
    const schema = freshSchema();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const records = oldRecords();
      await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(`SET search_path = "${schema}"`);
      await client.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
      await client.query(POSTGRES_MIGRATIONS[0]!.sql);
      await client.query('INSERT INTO schema_migrations VALUES (1, $1, 0)', [POSTGRES_MIGRATIONS[0]!.name]);
      for (const r of records) {
        await client.query(
          `INSERT INTO audit (${V1_COLUMNS.join(', ')}) VALUES (${V1_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`,
          v1Row(r, (b) => b),
        );
      }
      await client.query('DELETE FROM audit WHERE id = $1', [records[3]!.id]);

      const store = await openPostgresStore({ connectionString: url, schema });
      try {
        await expectUpgraded(store, records, POSTGRES_MIGRATIONS.length);
      } finally {
        await store.close();
      }
    } finally {
      await client.end();
      await dropSchema(url, schema);
    }
  });
});
