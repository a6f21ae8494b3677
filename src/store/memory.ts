/** The in-memory store: for tests and ephemeral use. Nothing survives the process. */
import type { CallFeedTable, FeedCall } from './call-feed.js';
import { type JsonObject, ToolEnvelopeError } from 'tool-envelope/core';
import { copyAuditRecord } from './audit-body.js';
import { assertOpen } from './guards.js';
import { decodeCursor, encodeCursor, iterateByPages, matchesAudit, pageLimit } from './query.js';
import { startRetention } from './retention.js';
import { computeStats } from './stats.js';
import { type HistogramCell, latencyBin } from './audit-histogram.js';
import { createMemoryApprovalVotes } from './approval-votes.js';
import { createMemoryBudgets } from './budgets.js';
import { createMemoryConsoleOidcFlows } from './console-oidc-flows.js';
import { createMemoryConsoleSessions } from './console-sessions.js';
import { createMemoryConsoleSignInFailures } from './console-sign-in-failures.js';
import { createMemoryTaskHandles } from './task-handles.js';
import type {
  ApprovalFilter,
  ApprovalRequest,
  AuditFilter,
  AuditListResult,
  AuditPage,
  AuditRecord,
  IdempotencyClaim,
  IdempotencyRecord,
  PruneResult,
  RetentionOptions,
  Store,
  ToolAuditStats,
} from './types.js';

export interface MemoryStoreOptions {
  retention?: RetentionOptions;
}

// Values are deep-copied in and out through JSON, as a database would, so callers never share objects with the store.
function copy<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** The feed's fields of a record (the memory store's feed; the SQL stores select them). */
function feedFields(r: AuditRecord): FeedCall {
  return {
    seq: r.seq ?? 0,
    id: r.id,
    tool: r.tool,
    status: r.status,
    category: r.category,
    errorCode: r.errorCode,
    latencyMs: r.latencyMs,
    toolCallId: r.toolCallId,
    runId: r.runId,
    traceId: r.traceId,
    sessionId: r.sessionId,
    approvalId: r.approvalId ?? null,
    startedAt: r.startedAt,
    endedAt: r.endedAt,
    principalChain: r.principalChain,
  };
}

class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  private closed = false;
  private seq = 0;
  private readonly audit: AuditRecord[] = [];
  private readonly auditIds = new Set<string>();
  private readonly idem = new Map<string, IdempotencyRecord>();
  private readonly approvals = new Map<string, ApprovalRequest & { seq: number }>();
  /** Approval id → its join key (createApproval), for the one-pending-request-per-key rule. */
  private readonly approvalJoinKeys = new Map<string, string>();

  private readonly stopRetention: () => void;
  readonly taskHandles = createMemoryTaskHandles(() => assertOpen(this.closed, 'memory store'));
  readonly budgets = createMemoryBudgets(() => assertOpen(this.closed, 'memory store'));
  readonly consoleSessions = createMemoryConsoleSessions(() => assertOpen(this.closed, 'memory store'));
  readonly consoleOidcFlows = createMemoryConsoleOidcFlows(() => assertOpen(this.closed, 'memory store'));
  readonly consoleSignInFailures = createMemoryConsoleSignInFailures(() => assertOpen(this.closed, 'memory store'));
  readonly approvalVotes = createMemoryApprovalVotes(
    () => assertOpen(this.closed, 'memory store'),
    (id) => this.approvals.get(id)?.state === 'pending',
  );

  // Completed started records are not kept here (see appendAudit), so this feed shows a call's end only.
  readonly callFeed: CallFeedTable = {
    settleMs: 0,
    after: async (afterSeq, limit) => {
      assertOpen(this.closed, 'memory store');
      return this.audit
        .filter((a) => (a.seq as number) > afterSeq)
        .slice(0, limit)
        .map((a): FeedCall => ({ ...feedFields(copy(a)), status: a.status === 'interrupted' ? 'started' : a.status }));
    },
    head: async () => this.seq,
  };

  constructor(private readonly retention: RetentionOptions | undefined) {
    this.stopRetention = startRetention(this, retention);
  }

  async schemaVersion(): Promise<number> {
    assertOpen(this.closed, 'memory store');
    return 1;
  }

  async appendAudit(records: readonly AuditRecord[]): Promise<void> {
    assertOpen(this.closed, 'memory store');
    const seen = new Set<string>();
    const completes = new Set<string>();
    const copies = records.map((r) => {
      if (typeof r.id !== 'string' || r.id === '') throw new ToolEnvelopeError('invalid-option', 'audit id must be a non-empty string');
      const key = r.status === 'started' ? `started:${r.id}` : r.id;
      if (this.auditIds.has(key) || seen.has(key)) throw new ToolEnvelopeError('store-failure', `duplicate audit id ${r.id}`);
      seen.add(key);
      if (r.status !== 'started' && this.auditIds.has(`started:${r.id}`)) completes.add(r.id);
      const c = copyAuditRecord(r);
      c.replay = r.replay === true;
      return c;
    });
    // A completed started record is hidden, as the SQL stores hide it.
    if (completes.size > 0) this.audit.splice(0, this.audit.length, ...this.audit.filter((a) => !(a.status === 'interrupted' && completes.has(a.id))));
    for (const c of copies) {
      c.seq = ++this.seq;
      c.idempotencyKey ??= null;
      c.approvalId ??= null;
      const started = c.status === 'started';
      if (started) c.status = 'interrupted';
      this.audit.push(c);
      this.auditIds.add(started ? `started:${c.id}` : c.id);
    }
  }

  async getAudit(id: string): Promise<AuditRecord | undefined> {
    assertOpen(this.closed, 'memory store');
    const r = this.audit.find((a) => a.id === id);
    return r && copy(r);
  }

  async listAudit(filter: AuditFilter = {}, page: AuditPage = {}): Promise<AuditListResult> {
    assertOpen(this.closed, 'memory store');
    const limit = pageLimit(page.limit);
    const after = decodeCursor(page.cursor);
    const desc = page.order !== 'asc';
    const ordered = desc ? [...this.audit].reverse() : this.audit;
    const out: AuditRecord[] = [];
    for (const r of ordered) {
      if (after !== undefined && (desc ? (r.seq as number) >= after : (r.seq as number) <= after)) continue;
      if (!matchesAudit(r, filter)) continue;
      out.push(copy(r));
      if (out.length > limit) break;
    }
    const more = out.length > limit;
    if (more) out.pop();
    const last = out[out.length - 1];
    return { records: out, nextCursor: more && last ? encodeCursor(last.seq as number) : null };
  }

  iterateAudit(filter: AuditFilter = {}, batchSize = 500): AsyncIterable<AuditRecord> {
    return iterateByPages(this, filter, batchSize);
  }

  async countAudit(filter: AuditFilter = {}): Promise<number> {
    assertOpen(this.closed, 'memory store');
    return this.audit.filter((r) => matchesAudit(r, filter)).length;
  }

  async auditStats(filter: AuditFilter = {}): Promise<ToolAuditStats[]> {
    assertOpen(this.closed, 'memory store');
    return computeStats(
      this.audit
        .filter((r) => matchesAudit(r, filter))
        .map((r) => ({ tool: r.tool, status: r.status, category: r.category, replay: r.replay === true, latencyMs: r.latencyMs })),
    );
  }

  async auditHistogram(filter: AuditFilter, bucketMs: number): Promise<HistogramCell[]> {
    assertOpen(this.closed, 'memory store');
    const cells = new Map<string, HistogramCell>();
    for (const r of this.audit) {
      if (!matchesAudit(r, filter)) continue;
      const cell = { bucket: Math.floor(r.startedAt / bucketMs), tool: r.tool, status: r.status, category: r.category, bin: latencyBin(r.latencyMs), count: 0 };
      const key = JSON.stringify([cell.bucket, cell.tool, cell.status, cell.category, cell.bin]);
      const had = cells.get(key) ?? cell;
      had.count++;
      cells.set(key, had);
    }
    return [...cells.values()];
  }

  async claimIdempotency(claim: Parameters<Store['claimIdempotency']>[0]): Promise<IdempotencyClaim> {
    assertOpen(this.closed, 'memory store');
    const existing = this.idem.get(claim.key);
    if (existing) return { claimed: false, existing: copy(existing) };
    this.idem.set(claim.key, { ...claim, state: 'pending', completedAt: null, outcome: null });
    return { claimed: true };
  }

  async completeIdempotency(key: string, claimToken: string, outcome: JsonObject, completedAt: number): Promise<boolean> {
    assertOpen(this.closed, 'memory store');
    const r = this.idem.get(key);
    if (r?.state !== 'pending' || r.claimToken !== claimToken) return false;
    this.idem.set(key, { ...r, state: 'done', outcome: copy(outcome), completedAt });
    return true;
  }

  async releaseIdempotency(key: string, claimToken: string): Promise<boolean> {
    assertOpen(this.closed, 'memory store');
    const r = this.idem.get(key);
    if (r?.state !== 'pending' || r.claimToken !== claimToken) return false;
    this.idem.delete(key);
    return true;
  }

  async getIdempotency(key: string): Promise<IdempotencyRecord | undefined> {
    assertOpen(this.closed, 'memory store');
    const r = this.idem.get(key);
    return r && copy(r);
  }

  async createApproval(request: ApprovalRequest, options: { joinKey?: string } = {}): Promise<boolean> {
    assertOpen(this.closed, 'memory store');
    if (this.approvals.has(request.id)) throw new ToolEnvelopeError('store-failure', `duplicate approval id ${request.id}`);
    const { joinKey } = options;
    // As the SQL stores' unique index: one pending request per join key.
    if (joinKey !== undefined && [...this.approvalJoinKeys].some(([id, k]) => k === joinKey && this.approvals.get(id)?.state === 'pending')) return false;
    if (joinKey !== undefined) this.approvalJoinKeys.set(request.id, joinKey);
    this.approvals.set(request.id, { ...copy(request), seq: ++this.seq });
    return true;
  }

  async getApproval(id: string): Promise<ApprovalRequest | undefined> {
    assertOpen(this.closed, 'memory store');
    const a = this.approvals.get(id);
    if (!a) return undefined;
    const { seq: _seq, ...rest } = copy(a);
    return rest;
  }

  async listApprovals(filter: ApprovalFilter = {}): Promise<{ approvals: ApprovalRequest[]; nextCursor: string | null }> {
    assertOpen(this.closed, 'memory store');
    const limit = pageLimit(filter.limit);
    const before = decodeCursor(filter.cursor);
    const states = filter.state === undefined ? undefined : Array.isArray(filter.state) ? filter.state : [filter.state];
    const all = [...this.approvals.values()]
      .filter(
        (a) =>
          (before === undefined || a.seq < before) &&
          (states === undefined || states.includes(a.state)) &&
          (filter.tool === undefined || a.tool === filter.tool) &&
          (filter.sessionId === undefined || a.sessionId === filter.sessionId),
      )
      .sort((a, b) => b.seq - a.seq);
    const page = all.slice(0, limit);
    const last = page[page.length - 1];
    return {
      approvals: page.map((a) => {
        const { seq: _seq, ...rest } = copy(a);
        return rest;
      }),
      nextCursor: all.length > limit && last ? encodeCursor(last.seq) : null,
    };
  }

  async transitionApproval(
    id: string,
    from: ApprovalRequest['state'],
    to: ApprovalRequest['state'],
    change: { at: number; by?: string | null; reason?: string | null; outcome?: JsonObject | null; signature?: string | null },
  ): Promise<ApprovalRequest | undefined> {
    assertOpen(this.closed, 'memory store');
    const a = this.approvals.get(id);
    if (!a || a.state !== from) return undefined;
    const next = {
      ...a,
      state: to,
      decidedAt: a.decidedAt ?? change.at,
      decidedBy: change.by !== undefined ? change.by : a.decidedBy,
      decisionReason: change.reason !== undefined ? change.reason : a.decisionReason,
      outcome: change.outcome !== undefined ? copy(change.outcome) : a.outcome,
      ...(change.signature != null ? { decisionSignature: change.signature } : {}),
    };
    this.approvals.set(id, next);
    return this.getApproval(id);
  }

  async prune(options: RetentionOptions | undefined = this.retention, now = Date.now()): Promise<PruneResult> {
    assertOpen(this.closed, 'memory store');
    const result: PruneResult = { audit: 0, idempotency: 0, approvals: 0 };
    if (!options) return result;
    const keep = (r: AuditRecord, i: number, total: number): boolean =>
      (options.maxAgeMs === undefined || r.startedAt >= now - options.maxAgeMs) && (options.maxRecords === undefined || i >= total - options.maxRecords);
    const before = this.audit.length;
    const kept = this.audit.filter((r, i) => keep(r, i, before));
    result.audit = before - kept.length;
    this.audit.splice(0, this.audit.length, ...kept);
    this.auditIds.clear();
    for (const r of kept) this.auditIds.add(r.status === 'interrupted' ? `started:${r.id}` : r.id);
    const idemAge = options.idempotencyMaxAgeMs ?? options.maxAgeMs;
    if (idemAge !== undefined) {
      for (const [k, r] of this.idem) {
        if (r.state === 'done' && (r.completedAt ?? r.createdAt) < now - idemAge) {
          this.idem.delete(k);
          result.idempotency++;
        }
      }
    }
    if (options.maxAgeMs !== undefined) {
      for (const [k, a] of this.approvals) {
        if (a.state !== 'pending' && a.state !== 'approved' && a.createdAt < now - options.maxAgeMs) {
          this.approvals.delete(k);
          result.approvals++;
        }
      }
    }
    return result;
  }

  async checkWritable(): Promise<void> {
    assertOpen(this.closed, 'memory store');
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopRetention();
  }
}

/**
 * Creates an in-memory store (tests, ephemeral use).
 *
 * @example
 * ```ts
 * const store = createMemoryStore();
 * await store.appendAudit([record]);
 * ```
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): Store {
  return new MemoryStore(options.retention);
}
