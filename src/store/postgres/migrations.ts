/**
 * Versioned PostgreSQL schema migrations. Append new versions; never edit an applied one.
 * JSON columns are `json` (not `jsonb`) so the stored text, key order included, comes back unchanged.
 */
import { rollupMigration } from '../audit-rollup.js';

export const POSTGRES_MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'audit, idempotency, approvals',
    sql: `
CREATE TABLE audit (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  tool TEXT NOT NULL,
  status TEXT NOT NULL,
  category TEXT,
  error_code TEXT,
  tool_call_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  trace_id TEXT NOT NULL,
  session_id TEXT,
  started_at BIGINT NOT NULL,
  ended_at BIGINT NOT NULL,
  latency_ms DOUBLE PRECISION NOT NULL,
  idempotency_key TEXT,
  replay BOOLEAN NOT NULL DEFAULT FALSE,
  approval_id TEXT,
  policy_decision_id TEXT,
  effective_mode TEXT,
  call_envelope JSON NOT NULL,
  result_envelope JSON NOT NULL,
  outcome JSON NOT NULL,
  principal_chain JSON NOT NULL,
  policy_decision JSON
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
  created_at BIGINT NOT NULL,
  completed_at BIGINT,
  outcome JSON
);
CREATE TABLE approvals (
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  state TEXT NOT NULL,
  tool TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  session_id TEXT,
  call_envelope JSON NOT NULL,
  principal_chain JSON NOT NULL,
  policy_decision JSON,
  reason TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT,
  decided_at BIGINT,
  decided_by TEXT,
  decision_reason TEXT,
  outcome JSON
);
CREATE INDEX approvals_state ON approvals (state, seq);
`,
  },
  {
    version: 2,
    name: 'audit: the five JSON documents in one body column',
    // As SQLite's version 2: one JSON array per record instead of five JSON columns, the copies of
    // policy decision fields dropped. Dropping a column only hides it, so existing rows are not rewritten.
    sql: `
ALTER TABLE audit ADD COLUMN body JSON;
UPDATE audit SET body = ('[' || call_envelope::text || ',' || result_envelope::text || ',' || outcome::text || ','
  || principal_chain::text || ',' || COALESCE(policy_decision::text, 'null') || ']')::json;
ALTER TABLE audit ALTER COLUMN body SET NOT NULL;
ALTER TABLE audit DROP COLUMN call_envelope, DROP COLUMN result_envelope, DROP COLUMN outcome,
  DROP COLUMN principal_chain, DROP COLUMN policy_decision, DROP COLUMN policy_decision_id, DROP COLUMN effective_mode;
`,
  },
  {
    version: 3,
    name: 'audit: started records, completed by a record of the same id',
    // As SQLite's version 3: ids unique among completed records and among started ones.
    sql: `
ALTER TABLE audit DROP CONSTRAINT audit_id_key;
CREATE UNIQUE INDEX audit_id ON audit (id) WHERE status <> 'started';
CREATE UNIQUE INDEX audit_started_id ON audit (id) WHERE status = 'started';
`,
  },
  {
    version: 4,
    name: 'audit: hash chains per writer, signed',
    // As SQLite's version 4 (see chain.ts).
    sql: `
ALTER TABLE audit ADD COLUMN chain_pos BIGINT;
CREATE TABLE audit_writers (
  writer BIGSERIAL PRIMARY KEY,
  key_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  mac TEXT NOT NULL,
  head_n BIGINT NOT NULL,
  head_mac TEXT NOT NULL,
  head_sig TEXT NOT NULL
);
CREATE TABLE audit_chain (
  writer BIGINT NOT NULL,
  first_n BIGINT NOT NULL,
  last_n BIGINT NOT NULL,
  digests TEXT NOT NULL,
  mac TEXT NOT NULL,
  PRIMARY KEY (writer, first_n)
);
CREATE TABLE audit_chain_origin (seq BIGINT NOT NULL);
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
  context JSON NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT,
  final_at BIGINT
);
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
  window_end BIGINT NOT NULL,
  count INTEGER NOT NULL
);
`,
  },
  {
    version: 8,
    name: 'approval votes: the signed approvals of a request that needs several distinct approvers',
    // See approval-votes.ts: one row per request and approver, in the order they were recorded.
    sql: `
CREATE TABLE approval_votes (
  seq BIGSERIAL PRIMARY KEY,
  approval_id TEXT NOT NULL,
  approver TEXT NOT NULL,
  at BIGINT NOT NULL,
  reason TEXT,
  signature TEXT NOT NULL,
  UNIQUE (approval_id, approver)
);
`,
  },
  {
    version: 9,
    name: 'audit: a NOTIFY when audit rows commit, for live views (call-feed.ts)',
    // Once per inserting statement, not per row; PostgreSQL folds the same payload sent twice in one
    // transaction into one notification. The payload is the schema, so schemas sharing a database tell apart.
    sql: `
CREATE FUNCTION audit_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tool_envelope_audit', TG_TABLE_SCHEMA);
  RETURN NULL;
END $$;
CREATE TRIGGER audit_notify AFTER INSERT ON audit FOR EACH STATEMENT EXECUTE FUNCTION audit_notify();
`,
  },
  {
    version: 10,
    name: 'approvals: one pending request per join key (identical calls of one principal, governance/approval-join.ts)',
    // Replicas that both miss a request and open one at once: the second insert finds the first's row.
    sql: `
ALTER TABLE approvals ADD COLUMN join_key TEXT;
CREATE UNIQUE INDEX approvals_pending_join ON approvals (join_key) WHERE state = 'pending' AND join_key IS NOT NULL;
`,
  },
  {
    version: 11,
    name: 'audit rollup: histogram counts per minute, tenant, tool, status, category and latency bin up to a mark, folded in off the write path',
    // Empty: the catch-up (audit-rollup.ts) folds the records already there, a chunk at a time.
    sql: rollupMigration('postgres'),
  },
  {
    version: 12,
    name: "console sessions: the operator console's signed-in sessions, shared by every console over the store",
    // See console-sessions.ts: the session id's SHA-256 (never the id), who signed in, the two expiries.
    sql: `
CREATE TABLE console_sessions (
  id_hash TEXT PRIMARY KEY,
  identity TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  idle_until BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
`,
  },
  {
    version: 13,
    name: "console OIDC flows: the console's OpenID Connect sign-ins in progress, finished by any console over the store",
    // See console-oidc-flows.ts: the flow cookie's SHA-256 (never the cookie), the flow as JSON, its end.
    sql: `
CREATE TABLE console_oidc_flows (
  key_hash TEXT PRIMARY KEY,
  flow TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX console_oidc_flows_expiry ON console_oidc_flows (expires_at);
`,
  },
  {
    version: 14,
    name: 'console sign-in failures: failed sign-ins per client address and window, counted by every console over the store',
    // See console-sign-in-failures.ts: one row per address, the failures of its current window.
    sql: `
CREATE TABLE console_sign_in_failures (
  address TEXT PRIMARY KEY,
  window_end BIGINT NOT NULL,
  failures INTEGER NOT NULL
);
CREATE INDEX console_sign_in_failures_end ON console_sign_in_failures (window_end);
`,
  },
];
