/**
 * The audit table's columns, in insert order (the order of `auditRowValues` in rows.ts). The query
 * columns are separate; the five JSON documents of a record (call envelope, result envelope,
 * outcome, principal chain, policy decision) are one JSON array in `body` (schema version 2):
 * one serialisation, one value to bind and copy instead of five. A module of its own: the call feed
 * (call-feed.ts) reads these columns too, and the store's types import the feed's.
 */
export const AUDIT_COLUMNS = [
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
  'body',
] as const;
