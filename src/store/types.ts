/**
 * The store interface: idempotency records, approval requests and the audit log of
 * every call. Three implementations share it (memory, SQLite, PostgreSQL) and one
 * test suite (`store-suite.ts`) runs against all of them.
 *
 * Times are epoch milliseconds (numbers). JSON columns hold exactly the JSON that was given.
 */
import type { ApprovalMode, ErrorCategory, JsonObject, OutcomeStatus, Principal } from 'tool-envelope/core';
import type { ApprovalVoteTable } from './approval-votes.js';
import type { BudgetTable } from './budgets.js';
import type { ConsoleOidcFlowTable } from './console-oidc-flows.js';
import type { ConsoleSessionTable } from './console-sessions.js';
import type { ConsoleSignInFailureTable } from './console-sign-in-failures.js';
import type { CallFeedTable } from './call-feed.js';
import type { TaskHandleTable } from './task-handles.js';

/** The policy decision as the store keeps it (the runtime's `PolicyDecision` fits it). */
export interface PolicyDecisionRecord {
  id: string;
  effect: 'allow' | 'deny' | 'require-approval';
  /** Absent when the decision failed closed before a mode could be resolved. */
  effectiveMode?: ApprovalMode | null;
  reason: string;
  /** Further facts (matched rule, ceiling, requested mode...). */
  [extra: string]: unknown;
}

/**
 * The status of an audit record: the outcome's status once the call ended; `started` for the
 * record written before a call executes (stores give it back only while no outcome completed it,
 * as `interrupted`: the call was executing, or its process died before it ended).
 */
export type AuditStatus = OutcomeStatus | 'started' | 'interrupted';

/** One audit log record: what was called, what came back, who asked, what policy said, and when. */
export interface AuditRecord {
  /** Unique id of the record (not the tool call id: a paused call and its approval each get a record). */
  id: string;
  /** Insertion order assigned by the store; absent on records not yet stored. */
  seq?: number;
  tool: string;
  /**
   * The outcome's status; `started` when written before execution (see {@link AuditStatus}); read
   * back as `interrupted` while no record with the same id completed it.
   */
  status: AuditStatus;
  /** Error category for failures, `null` for successes. */
  category: ErrorCategory | null;
  errorCode: string | null;
  toolCallId: string;
  runId: string;
  traceId: string;
  sessionId: string | null;
  /** Epoch ms when the call started / ended. */
  startedAt: number;
  endedAt: number;
  latencyMs: number;
  /** The ContextOS call envelope JSON. */
  callEnvelope: JsonObject;
  /** The encoded ContextOS result envelope JSON. */
  resultEnvelope: JsonObject;
  /** The canonical outcome JSON. */
  outcome: JsonObject;
  principalChain: Principal[];
  policyDecision: PolicyDecisionRecord | null;
  idempotencyKey?: string | null;
  /** True when the outcome was replayed from an idempotency record rather than executed. */
  replay?: boolean;
  approvalId?: string | null;
  /**
   * What was redacted before the record was stored: the JSON pointers (into the record:
   * `/callEnvelope/args/password`, ...) whose values were replaced, never the values; or
   * `{ off: true }` when redaction was turned off for this record. Absent: nothing to redact.
   */
  redaction?: { pointers: string[] } | { off: true } | null;
}

/** Filters for listing, iterating and summarising audit records. All given filters must match. */
export interface AuditFilter {
  tool?: string | string[];
  /** `interrupted` matches started records that no outcome completed. */
  status?: AuditStatus | AuditStatus[];
  category?: ErrorCategory | ErrorCategory[];
  sessionId?: string;
  runId?: string;
  toolCallId?: string;
  /** `true`: only replays (outcomes returned again for a repeated idempotency key); `false`: only calls that were not replays. */
  replay?: boolean;
  /** `startedAt >= since` (epoch ms). */
  since?: number;
  /** `startedAt < until` (epoch ms). */
  until?: number;
  /** Only calls of this tenant (that of the first principal naming one, store/tenant.ts); `null`: calls of no tenant. */
  tenant?: string | null;
}

/** One cell of {@link Store.auditHistogram}: how many records share these values (audit-histogram.ts). */
export interface HistogramCell {
  /** `floor(startedAt / bucketMs)`. */
  bucket: number;
  tool: string;
  /** A started record no outcome completed reads as `interrupted`. */
  status: AuditStatus;
  category: ErrorCategory | null;
  /** The latency bin (`latencyBin` of audit-histogram.ts). */
  bin: number;
  count: number;
}

/** How {@link Store.auditHistogram} reads. */
export interface HistogramOptions {
  /** Count every matching record from the table, not through the rollup (the reference the rollup is tested against). */
  scan?: boolean;
}

/** One step of {@link Store.rollUpAudit}. */
export interface AuditRollupStep {
  /** Records the step folded into the rollup. */
  folded: number;
  /** The rollup's mark after the step: every record up to this seq is in it. */
  rolledUpTo: number;
  /** More records wait above the mark (the step folded a full chunk): step again. */
  more: boolean;
}

/** Paging for {@link Store.listAudit}. */
export interface AuditPage {
  /** At most this many records (default 100, max 10 000). */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string | null;
  /** `desc` (newest first, default) or `asc`. */
  order?: 'asc' | 'desc';
}

/** One page of audit records. */
export interface AuditListResult {
  records: AuditRecord[];
  /** Pass back as `cursor` for the next page; `null` when there is none. */
  nextCursor: string | null;
}

/** Per-tool summary computed from the audit log. */
export interface ToolAuditStats {
  tool: string;
  count: number;
  byStatus: Partial<Record<AuditStatus, number>>;
  byCategory: Partial<Record<ErrorCategory, number>>;
  replays: number;
  latencyMs: { min: number; max: number; mean: number; p50: number; p95: number; p99: number };
}

/** The state of an idempotency record: `pending` while the first execution runs, `done` once its outcome is stored. */
export type IdempotencyState = 'pending' | 'done';

/** An idempotency record: one per key. */
export interface IdempotencyRecord {
  key: string;
  /** Hash of the tool name and canonical arguments: a repeat must carry the same one. */
  fingerprint: string;
  tool: string;
  /** The call that claimed the key (the original call a replay points at). */
  toolCallId: string;
  state: IdempotencyState;
  /** Secret of the claimant; only it may complete or release a pending claim. */
  claimToken: string;
  createdAt: number;
  completedAt: number | null;
  /** The stored canonical outcome JSON once `done`. */
  outcome: JsonObject | null;
}

/** The answer to {@link Store.claimIdempotency}: either this caller now owns the key, or the existing record. */
export type IdempotencyClaim = { claimed: true } | { claimed: false; existing: IdempotencyRecord };

/**
 * The state of an approval request. `pending` → `approved` (then `completed`/`failed` once the tool ran),
 * or → `rejected` / `expired`.
 */
export type ApprovalState = 'pending' | 'approved' | 'rejected' | 'expired' | 'completed' | 'failed';

/** A persisted approval request for a paused call. */
export interface ApprovalRequest {
  id: string;
  state: ApprovalState;
  tool: string;
  toolCallId: string;
  runId: string;
  sessionId: string | null;
  /** The ContextOS call envelope JSON of the paused call (holds the arguments). */
  callEnvelope: JsonObject;
  principalChain: Principal[];
  policyDecision: PolicyDecisionRecord | null;
  /** Why approval is needed. */
  reason: string;
  createdAt: number;
  /** Epoch ms after which the request can no longer be approved; `null` = never expires. */
  expiresAt: number | null;
  decidedAt: number | null;
  decidedBy: string | null;
  decisionReason: string | null;
  /** The final canonical outcome JSON once the request is settled. */
  outcome: JsonObject | null;
  /** The operator-key signature made when the call paused (over id, tool, call digest, mode, expiry). */
  requestSignature?: string | null;
  /** The approver's signature of the decision (the request's facts plus the approver). */
  decisionSignature?: string | null;
}

/** Filters for {@link Store.listApprovals}. */
export interface ApprovalFilter {
  state?: ApprovalState | ApprovalState[];
  tool?: string;
  sessionId?: string;
  limit?: number;
  /** Opaque cursor from a previous call's `nextCursor`. */
  cursor?: string | null;
}

/** Retention: what {@link Store.prune} removes. Pending approvals and pending idempotency claims are never removed. */
export interface RetentionOptions {
  /** Delete audit records (and settled approvals / done idempotency records) older than this. */
  maxAgeMs?: number;
  /** Keep at most this many audit records (oldest deleted first). */
  maxRecords?: number;
  /** Delete done idempotency records older than this (defaults to `maxAgeMs`). */
  idempotencyMaxAgeMs?: number;
  /** When given at open: prune on open and then every this many ms (default 60 000). */
  intervalMs?: number;
}

/** How many rows {@link Store.prune} deleted. */
export interface PruneResult {
  audit: number;
  idempotency: number;
  approvals: number;
}

/**
 * The store: idempotency, approvals, audit. Every method is safe to call concurrently, from
 * several processes when the implementation is shared (SQLite file, PostgreSQL database).
 */
export interface Store {
  /** `memory`, `sqlite` or `postgres`. */
  readonly kind: 'memory' | 'sqlite' | 'postgres';
  /** The schema version after migrations ran. */
  schemaVersion(): Promise<number>;

  // --- audit ---
  /**
   * Appends records in one transaction; resolves once they are durably committed. Ids must be new,
   * except that a record may complete the `started` record of the same id (once).
   */
  appendAudit(records: readonly AuditRecord[]): Promise<void>;
  /** One record by its audit id. */
  getAudit(id: string): Promise<AuditRecord | undefined>;
  /** A page of records matching the filter. */
  listAudit(filter?: AuditFilter, page?: AuditPage): Promise<AuditListResult>;
  /** Every matching record, oldest first, fetched in pages (for export). */
  iterateAudit(filter?: AuditFilter, batchSize?: number): AsyncIterable<AuditRecord>;
  /** Number of matching records. */
  countAudit(filter?: AuditFilter): Promise<number>;
  /** Per-tool summary of matching records, sorted by tool name. */
  auditStats(filter?: AuditFilter): Promise<ToolAuditStats[]>;
  /** Matching records counted by time bucket (`bucketMs` wide), tool, status, category and latency bin, by the database (audit-histogram.ts). */
  auditHistogram(filter: AuditFilter, bucketMs: number, options?: HistogramOptions): Promise<HistogramCell[]>;
  /**
   * Folds up to `maxRecords` records above the audit rollup's mark into it (audit-rollup.ts), off
   * the write path; stores without a rollup do not have it. Histograms are exact whether or not it runs.
   */
  rollUpAudit?(maxRecords?: number): Promise<AuditRollupStep>;

  // --- idempotency ---
  /** Atomically inserts a `pending` record for `key` unless one exists. */
  claimIdempotency(claim: {
    key: string;
    fingerprint: string;
    tool: string;
    toolCallId: string;
    claimToken: string;
    createdAt: number;
  }): Promise<IdempotencyClaim>;
  /** Stores the outcome of a claimed key and marks it `done`; false when `claimToken` does not own a pending claim. */
  completeIdempotency(key: string, claimToken: string, outcome: JsonObject, completedAt: number): Promise<boolean>;
  /** Deletes a pending claim owned by `claimToken` (the call never ran); false when not owned. */
  releaseIdempotency(key: string, claimToken: string): Promise<boolean>;
  /** The record for `key`, if any. */
  getIdempotency(key: string): Promise<IdempotencyRecord | undefined>;

  // --- approvals ---
  /**
   * Persists a new approval request (state `pending`). With `joinKey` (a digest of who calls which
   * tool with which arguments, governance/approval-join.ts) at most one pending request per key is
   * stored, across every process sharing the store: false when another holds it (nothing stored).
   */
  createApproval(request: ApprovalRequest, options?: { joinKey?: string }): Promise<boolean | undefined>;
  getApproval(id: string): Promise<ApprovalRequest | undefined>;
  /** Requests matching the filter, newest first. */
  listApprovals(filter?: ApprovalFilter): Promise<{ approvals: ApprovalRequest[]; nextCursor: string | null }>;
  /**
   * Atomically moves a request from state `from` to `to`, recording who and why. Returns the updated
   * request, or `undefined` when it was not in state `from` (someone else decided first).
   */
  transitionApproval(
    id: string,
    from: ApprovalState,
    to: ApprovalState,
    change: { at: number; by?: string | null; reason?: string | null; outcome?: JsonObject | null; signature?: string | null },
  ): Promise<ApprovalRequest | undefined>;

  /** The approvals of requests that need several distinct approvers (governance/approval-quorum.ts). */
  readonly approvalVotes: ApprovalVoteTable;

  /** The audit log read forward by position, for live views across processes (call-feed.ts). */
  readonly callFeed: CallFeedTable;

  // --- task handles (the gateway's handles of upstream tasks, src/mcp/tasks) ---
  readonly taskHandles: TaskHandleTable;

  // --- budgets (the call counts of a policy's rate budgets and quotas, governance/budgets.ts) ---
  readonly budgets: BudgetTable;

  // --- console sessions (the operator console's signed-in sessions, console/sessions.ts) ---
  readonly consoleSessions: ConsoleSessionTable;

  // --- console OIDC flows (the console's OpenID Connect sign-ins in progress, console/oidc.ts) ---
  readonly consoleOidcFlows: ConsoleOidcFlowTable;

  // --- console sign-in failures (the console's sign-in rate limit, console/sign-in-limit.ts) ---
  readonly consoleSignInFailures: ConsoleSignInFailureTable;

  // --- housekeeping ---
  /**
   * Resolves when the store can take a write now, else rejects with `ToolEnvelopeError('store-failure')`:
   * a write statement that changes no row (a read-only file or database, a lost server), for a
   * readiness probe. Writes nothing.
   */
  checkWritable(): Promise<void>;
  /** Deletes old rows per the retention options (or those given at open). */
  prune(options?: RetentionOptions, now?: number): Promise<PruneResult>;
  /** Releases resources. Further calls throw `ToolEnvelopeError('closed')`. */
  close(): Promise<void>;
}
