/**
 * Versioned SQLite schema migrations. Append new versions; never edit an applied one.
 *
 * @example
 * ```ts
 * SQLITE_MIGRATIONS.at(-1)?.version; // the newest schema version
 * ```
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
    name: 'approvals: operator-key signatures of the request and of the decision',
    sql: `
ALTER TABLE approvals ADD COLUMN request_signature TEXT;
ALTER TABLE approvals ADD COLUMN decision_signature TEXT;
`,
  },
];
