import type Database from 'better-sqlite3';
import { ToolEnvelopeError } from 'tool-envelope/core';
import { toolCallKey } from '../query.js';
import { rollupMigration } from '../audit-rollup.js';

/**
 * Versioned SQLite schema migrations. Append new versions; never edit an applied one.
 */
export const SQLITE_MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'audit, idempotency, approvals',
    sql: `
CREATE TABLE audit (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  tool TEXT NOT NULL,
  status TEXT NOT NULL,
  category TEXT,
  error_code TEXT,
  tool_call_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  trace_id TEXT NOT NULL,
  session_id TEXT,
  started_at INTEGER NOT NULL,
  ended_at INTEGER NOT NULL,
  latency_ms REAL NOT NULL,
  idempotency_key TEXT,
  replay INTEGER NOT NULL DEFAULT 0,
  approval_id TEXT,
  policy_decision_id TEXT,
  effective_mode TEXT,
  call_envelope TEXT NOT NULL,
  result_envelope TEXT NOT NULL,
  outcome TEXT NOT NULL,
  principal_chain TEXT NOT NULL,
  policy_decision TEXT
);
CREATE INDEX audit_tool ON audit (tool, seq);
CREATE INDEX audit_category ON audit (category, seq) WHERE category IS NOT NULL;
CREATE INDEX audit_session ON audit (session_id, seq) WHERE session_id IS NOT NULL;
CREATE INDEX audit_started ON audit (started_at);
CREATE INDEX audit_call ON audit (tool_call_id);
CREATE TABLE idempotency (
  key TEXT PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  tool TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
  claim_token TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  completed_at INTEGER,
  outcome TEXT
) WITHOUT ROWID;
CREATE TABLE approvals (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  state TEXT NOT NULL,
  tool TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  session_id TEXT,
  call_envelope TEXT NOT NULL,
  principal_chain TEXT NOT NULL,
  policy_decision TEXT,
  reason TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  decided_at INTEGER,
  decided_by TEXT,
  decision_reason TEXT,
  outcome TEXT
);
CREATE INDEX approvals_state ON approvals (state, seq);
`,
  },
  {
    version: 2,
    name: 'audit: the five JSON documents in one body column',
    // One JSON array instead of five JSON columns, and no copies of policy decision fields:
    // a leaner row is cheaper to bind, write and log. The indexes are the same query paths as
    // version 1, except that tool call ids are found through an integer hash of them
    // (`call_key`, computed by `toolCallKey`; `te_tool_call_key` is that function registered on
    // the migrating connection). The table is rebuilt (SQLite cannot drop columns cheaply), keeping seq and the
    // AUTOINCREMENT high-water mark so cursors and ids stay valid.
    sql: `
CREATE TABLE audit_v2 (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL,
  tool TEXT NOT NULL,
  status TEXT NOT NULL,
  category TEXT,
  error_code TEXT,
  tool_call_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  trace_id TEXT NOT NULL,
  session_id TEXT,
  started_at INTEGER NOT NULL,
  ended_at INTEGER NOT NULL,
  latency_ms REAL NOT NULL,
  idempotency_key TEXT,
  replay INTEGER NOT NULL DEFAULT 0,
  approval_id TEXT,
  body TEXT NOT NULL,
  call_key INTEGER NOT NULL
);
INSERT INTO audit_v2 (seq, id, tool, status, category, error_code, tool_call_id, run_id, trace_id, session_id,
  started_at, ended_at, latency_ms, idempotency_key, replay, approval_id, body, call_key)
SELECT seq, id, tool, status, category, error_code, tool_call_id, run_id, trace_id, session_id,
  started_at, ended_at, latency_ms, idempotency_key, replay, approval_id,
  '[' || call_envelope || ',' || result_envelope || ',' || outcome || ',' || principal_chain || ',' || COALESCE(policy_decision, 'null') || ']',
  te_tool_call_key(tool_call_id)
FROM audit ORDER BY seq;
DELETE FROM sqlite_sequence WHERE name = 'audit_v2';
INSERT INTO sqlite_sequence (name, seq) SELECT 'audit_v2', seq FROM sqlite_sequence WHERE name = 'audit';
DROP TABLE audit;
ALTER TABLE audit_v2 RENAME TO audit;
CREATE UNIQUE INDEX audit_id ON audit (id);
CREATE INDEX audit_tool ON audit (tool, seq);
CREATE INDEX audit_category ON audit (category, seq) WHERE category IS NOT NULL;
CREATE INDEX audit_session ON audit (session_id, seq) WHERE session_id IS NOT NULL;
CREATE INDEX audit_started ON audit (started_at);
CREATE INDEX audit_call ON audit (call_key);
`,
  },
  {
    version: 3,
    name: 'audit: started records, completed by a record of the same id',
    // A call is recorded as `started` before it executes and its outcome is a second row with the
    // same id: ids are unique among completed records and among started ones. Reads hide a started
    // row once its id is completed, through the first index.
    sql: `
DROP INDEX audit_id;
CREATE UNIQUE INDEX audit_id ON audit (id) WHERE status <> 'started';
CREATE UNIQUE INDEX audit_started_id ON audit (id) WHERE status = 'started';
`,
  },
  {
    version: 4,
    name: 'audit: hash chains per writer, signed',
    // See chain.ts. chain_pos is not indexed: only verification reads it, and an index would cost
    // every insert. Records older than the chain (seq <= audit_chain_origin.seq) are unverifiable.
    sql: `
ALTER TABLE audit ADD COLUMN chain_pos INTEGER;
CREATE TABLE audit_writers (
  writer INTEGER PRIMARY KEY AUTOINCREMENT,
  key_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  mac TEXT NOT NULL,
  head_n INTEGER NOT NULL,
  head_mac TEXT NOT NULL,
  head_sig TEXT NOT NULL
);
CREATE TABLE audit_chain (
  writer INTEGER NOT NULL,
  first_n INTEGER NOT NULL,
  last_n INTEGER NOT NULL,
  digests TEXT NOT NULL,
  mac TEXT NOT NULL,
  PRIMARY KEY (writer, first_n)
) WITHOUT ROWID;
CREATE TABLE audit_chain_origin (seq INTEGER NOT NULL);
INSERT INTO audit_chain_origin (seq) SELECT COALESCE(MAX(seq), 0) FROM audit;
`,
  },
  {
    version: 5,
    name: 'approvals: operator-key signatures of the request and of the decision',
    sql: `
ALTER TABLE approvals ADD COLUMN request_signature TEXT;
ALTER TABLE approvals ADD COLUMN decision_signature TEXT;
`,
  },
  {
    version: 6,
    name: 'task handles: the gateway handles of upstream tasks, bound to their caller',
    // See task-handles.ts: the handle's SHA-256 (never the handle) and the caller's digest.
    sql: `
CREATE TABLE task_handles (
  handle_hash TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  upstream TEXT NOT NULL,
  upstream_task_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  context TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  final_at INTEGER
) WITHOUT ROWID;
CREATE INDEX task_handles_expiry ON task_handles (expires_at) WHERE expires_at IS NOT NULL;
`,
  },
  {
    version: 7,
    name: 'budgets: call counts per key in the current fixed window, shared by every process',
    // See budgets.ts: one row per key, started over when a call comes in a later window.
    sql: `
CREATE TABLE budget_counts (
  key TEXT PRIMARY KEY,
  window_end INTEGER NOT NULL,
  count INTEGER NOT NULL
) WITHOUT ROWID;
`,
  },
  {
    version: 8,
    name: 'approval votes: the signed approvals of a request that needs several distinct approvers',
    // See approval-votes.ts: one row per request and approver, in the order they were recorded.
    sql: `
CREATE TABLE approval_votes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  approval_id TEXT NOT NULL,
  approver TEXT NOT NULL,
  at INTEGER NOT NULL,
  reason TEXT,
  signature TEXT NOT NULL,
  UNIQUE (approval_id, approver)
);
`,
  },
  {
    version: 9,
    name: 'approvals: one pending request per join key (identical calls of one principal, governance/approval-join.ts)',
    // Replicas that both miss a request and open one at once: the second insert finds the first's row.
    sql: `
ALTER TABLE approvals ADD COLUMN join_key TEXT;
CREATE UNIQUE INDEX approvals_pending_join ON approvals (join_key) WHERE state = 'pending' AND join_key IS NOT NULL;
`,
  },
  {
    version: 10,
    name: 'audit rollup: histogram counts per minute, tenant, tool, status, category and latency bin up to a mark, folded in off the write path',
    // Empty: the catch-up (audit-rollup.ts) folds the records already there, a chunk at a time.
    sql: rollupMigration('sqlite'),
  },
  {
    version: 11,
    name: "console sessions: the operator console's signed-in sessions, shared by every console over the store",
    // See console-sessions.ts: the session id's SHA-256 (never the id), who signed in, the two expiries.
    sql: `
CREATE TABLE console_sessions (
  id_hash TEXT PRIMARY KEY,
  identity TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  idle_until INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
`,
  },
  {
    version: 12,
    name: "console OIDC flows: the console's OpenID Connect sign-ins in progress, finished by any console over the store",
    // See console-oidc-flows.ts: the flow cookie's SHA-256 (never the cookie), the flow as JSON, its end.
    sql: `
CREATE TABLE console_oidc_flows (
  key_hash TEXT PRIMARY KEY,
  flow TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX console_oidc_flows_expiry ON console_oidc_flows (expires_at);
`,
  },
  {
    version: 13,
    name: 'console sign-in failures: failed sign-ins per client address and window, counted by every console over the store',
    // See console-sign-in-failures.ts: one row per address, the failures of its current window.
    sql: `
CREATE TABLE console_sign_in_failures (
  address TEXT PRIMARY KEY,
  window_end INTEGER NOT NULL,
  failures INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX console_sign_in_failures_end ON console_sign_in_failures (window_end);
`,
  },
];

/**
 * Runs `fn` again (after a short random pause) while SQLite says the database is busy, until `deadline`.
 */
export async function whileBusy(deadline: number, fn: () => void): Promise<void> {
  for (;;) {
    try {
      fn();
      return;
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if ((code !== 'SQLITE_BUSY' && code !== 'SQLITE_LOCKED') || Date.now() >= deadline) throw e;
    }
    await new Promise((r) => setTimeout(r, 2 + Math.random() * 20));
  }
}

/**
 * Applies the pending migrations in one immediate transaction (so that of several processes opening
 * a new file at once, one applies each version and the others then see it recorded).
 */
export function migrateSqlite(db: Database.Database): void {
  // BEGIN IMMEDIATE takes the write lock first, so two processes opening a fresh file at once
  // apply each migration exactly once (the second waits, then sees them recorded).
  db.function('te_tool_call_key', { deterministic: true }, (id: unknown) => toolCallKey(id));
  db.transaction(() => {
    db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    const applied = new Set((db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version));
    for (const m of SQLITE_MIGRATIONS) {
      if (applied.has(m.version)) continue;
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, Date.now());
    }
    const newest = Math.max(0, ...applied);
    const known = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1]?.version ?? 0;
    if (newest > known) throw new ToolEnvelopeError('store-failure', `database schema version ${newest} is newer than this library (${known})`);
  }).immediate();
}
