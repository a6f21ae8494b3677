/**
 * The approval desk of a governance pipeline (pipeline.ts): approving (signing the decision), rejecting,
 * expiring, and running approved requests exactly once, only when their signatures verify.
 */
import { randomUUID } from 'node:crypto';
import { decodeContextosCall, ToolEnvelopeError, type JsonObject, type ToolCall, type ToolOutcome, toolError, isSuccessStatus } from 'tool-envelope/core';
import type { OperatorKey } from '../store/operator-key.js';
import type { ApprovalRequest, Store } from '../store/types.js';
import type { ApprovalEvents } from './approval-events.js';
import { DecisionNotices } from './approval-notices.js';
import { approveQuorum } from './approval-quorum.js';
import { approvalFacts, quorumApprovers, signApprovalDecision, verifyApproval } from './approval-signature.js';
import { AuditUnavailable } from './audit-unavailable.js';
import type { AuditExtra, AuditedCall } from './pipeline-audit.js';
import type { Execute, GovernanceOptions, SyntheticInit } from './pipeline-types.js';

function jsonCopy<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** True when `approver` names a principal of the chain (`kind:id` or the bare id). */
export function approverInChain(approver: string, chain: readonly { kind: string; id: string }[]): boolean {
  return chain.some((p) => approver === `${p.kind}:${p.id}` || approver === p.id);
}

/**
 * Signs an approver's decision and moves the request from `pending` to `approved`, after checking
 * that the request's own signature verifies (its call was not edited, the row not inserted) and
 * that the approver is not a principal of the call's chain (unless the request allows it). The
 * approving side of the CLI and of the in-process desk. Resolves `{ won }`, `{ invalid: why }`, or
 * `undefined` when someone else decided first; rejects `approval-forbidden` for a self-approval.
 */
export async function signAndApprove(
  store: Store,
  key: OperatorKey,
  a: ApprovalRequest,
  decision: { approver: string; reason?: string | null },
  options: { now?: number } = {},
): Promise<{ won: ApprovalRequest } | { waiting: { approvers: string[]; needed: number } } | { invalid: string } | undefined> {
  const call = decodeContextosCall(a.callEnvelope);
  const why = verifyApproval(key, a, call, false);
  if (why) return { invalid: why };
  const facts = approvalFacts(a, call);
  if (facts.approvers > 1) return approveQuorum(store, key, a, call, facts, decision, options.now ?? Date.now());
  // Whether self-approval is allowed was decided when the call paused, and is covered by the request signature.
  if (!facts.selfApproval && approverInChain(decision.approver, call.principalChain)) {
    throw new ToolEnvelopeError('approval-forbidden', `${decision.approver} is in the principal chain of the call and may not approve it`);
  }
  const signature = signApprovalDecision(key, facts, decision.approver);
  // The conditional update is the gate: among concurrent approvers (any process), one wins and runs the tool.
  const won = await store.transitionApproval(a.id, 'pending', 'approved', {
    at: options.now ?? Date.now(),
    by: decision.approver,
    reason: decision.reason ?? null,
    signature,
  });
  return won ? { won } : undefined;
}

/**
 * What the desk uses of its pipeline (a `GovernancePipeline`, which owns the desk): declared here
 * so that this file does not import the pipeline that imports it.
 */
export interface DeskPipeline {
  readonly store: Store;
  readonly options: Pick<GovernanceOptions, 'executorFor' | 'approvalRunWindowMs'>;
  /** Where this process's approval events go, when anyone listens. */
  readonly events?: ApprovalEvents | undefined;
  /** A synthetic outcome for a call. */
  synth(call: ToolCall, init: SyntheticInit): ToolOutcome;
  /** Writes the record of a call's outcome (never throws). */
  audit(of: AuditedCall, outcome: ToolOutcome, extra?: AuditExtra): Promise<void>;
  /** Records a call as started before it executes: the id its outcome's record completes. */
  begin(of: AuditedCall, approvalId?: string | null): Promise<string | undefined>;
  /** The operator key, loaded once. */
  operatorKey(): Promise<OperatorKey>;
}

/** How long after its decision an approved request may still run, unless the options say otherwise. */
export const DEFAULT_RUN_WINDOW_MS = 15 * 60_000;

/** True when an approved request's decision is older than the run window (`null`: no window). */
function isStale(a: ApprovalRequest, windowMs: number | null | undefined, now: number): boolean {
  const window = windowMs === undefined ? DEFAULT_RUN_WINDOW_MS : windowMs;
  return window !== null && a.decidedAt !== null && now - a.decidedAt > window;
}

/**
 * Approving, rejecting, expiring and running approval requests for one pipeline.
 *
 * @example
 * ```ts
 * const desk = new ApprovalDesk(pipeline);
 * await desk.approve('apr_1', { approver: 'user:alice' });
 * ```
 */
export class ApprovalDesk {
  /** Tells settled requests once across processes; only when someone listens. */
  private readonly notices: DecisionNotices | undefined;

  constructor(private readonly p: DeskPipeline) {
    this.notices = p.events ? new DecisionNotices(p.store, p.events) : undefined;
  }

  private get store(): Store {
    return this.p.store;
  }

  private executor(tool: string): Execute | undefined {
    return this.p.options.executorFor?.(tool);
  }

  private async pending(approvalId: string): Promise<ApprovalRequest> {
    if (typeof approvalId !== 'string' || approvalId === '') throw new ToolEnvelopeError('invalid-option', 'approvalId must be a non-empty string');
    const a = await this.store.getApproval(approvalId);
    if (!a) throw new ToolEnvelopeError('unknown-approval', `no approval request ${JSON.stringify(approvalId)}`);
    if (a.state !== 'pending') throw new ToolEnvelopeError('approval-not-pending', `approval request ${approvalId} is ${a.state}, not pending`);
    return a;
  }

  private static checkDecision(decision: { approver: string; reason?: string } | undefined): void {
    if (!decision || typeof decision.approver !== 'string' || decision.approver === '') {
      throw new ToolEnvelopeError('invalid-option', 'an approver (non-empty string) is required');
    }
    if (decision.reason !== undefined && typeof decision.reason !== 'string') throw new ToolEnvelopeError('invalid-option', 'reason must be a string');
  }

  /** Settles a pending request as rejected (`rejected` or `expired`) with a `rejected` outcome. */
  private async settleRejected(a: ApprovalRequest, state: 'rejected' | 'expired', by: string | null, reason: string | null, now: number): Promise<ToolOutcome> {
    const call = decodeContextosCall(a.callEnvelope);
    const detail =
      state === 'expired'
        ? `The approval request ${a.id} expired before anyone approved it.`
        : `Rejected by ${by ?? 'an approver'}${reason ? `: ${reason}` : '.'}`;
    const outcome = this.p.synth(call, {
      status: 'rejected',
      error: toolError('elevation', state === 'expired' ? 'approval-expired' : 'approval-rejected', detail, { details: { approvalId: a.id } }),
      metadata: { approvalId: a.id, ...(by !== null && { decidedBy: by }) },
    });
    const done = await this.store.transitionApproval(a.id, 'pending', state, { at: now, by, reason, outcome: jsonCopy(outcome) as unknown as JsonObject });
    if (!done) throw new ToolEnvelopeError('approval-not-pending', `approval request ${a.id} was decided by someone else`);
    await this.p.audit(auditedOf(a, call, now), outcome, { approvalId: a.id });
    await this.notices?.notice(done, now);
    return outcome;
  }

  /** A request whose signatures do not verify: settled `failed` with `approval-invalid`, audited, nothing run. */
  private async settleInvalid(a: ApprovalRequest, call: ToolCall, from: 'pending' | 'approved', why: string): Promise<ToolOutcome> {
    const now = Date.now();
    const outcome = this.p.synth(call, {
      status: 'failed',
      error: toolError('elevation', 'approval-invalid', `Approval request ${a.id} was not run: ${why}.`, { details: { approvalId: a.id } }),
      metadata: { approvalId: a.id },
    });
    await this.store.transitionApproval(a.id, from, 'failed', { at: now, outcome: jsonCopy(outcome) as unknown as JsonObject });
    await this.p.audit(auditedOf(a, call, now), outcome, { approvalId: a.id });
    return outcome;
  }

  async approve(approvalId: string, decision: { approver: string; reason?: string }): Promise<ToolOutcome> {
    ApprovalDesk.checkDecision(decision);
    const a = await this.pending(approvalId);
    const now = Date.now();
    if (a.expiresAt !== null && a.expiresAt <= now) return this.settleRejected(a, 'expired', null, null, now);
    if (!this.executor(a.tool)) throw new ToolEnvelopeError('unknown-tool', `no tool named ${JSON.stringify(a.tool)} is registered`);
    const r = await signAndApprove(this.store, await this.p.operatorKey(), a, decision, { now });
    if (r && 'invalid' in r) return this.settleInvalid(a, decodeContextosCall(a.callEnvelope), 'pending', r.invalid);
    if (!r) throw new ToolEnvelopeError('approval-not-pending', `approval request ${a.id} was decided by someone else`);
    if ('waiting' in r) return this.stillPaused(a, r.waiting);
    const won = r.won;
    const outcome = await this.runClaimed(won);
    if (!outcome) throw new ToolEnvelopeError('approval-not-pending', `approval request ${a.id} is being run by another process`);
    return outcome;
  }

  /** A multi-approver request with this approval recorded and more needed: still `paused`, saying how many. */
  private stillPaused(a: ApprovalRequest, w: { approvers: string[]; needed: number }): ToolOutcome {
    const left = w.needed - w.approvers.length;
    return this.p.synth(decodeContextosCall(a.callEnvelope), {
      status: 'paused',
      error: toolError(
        'elevation',
        'approval-required',
        `Approved by ${w.approvers.join(', ')}; waiting for ${left} more distinct approver${left === 1 ? '' : 's'} (${a.id}).`,
        { details: { approvalId: a.id, approvals: w.approvers.length, approvalsNeeded: w.needed } },
      ),
      metadata: { approvalId: a.id, approvedBy: w.approvers, approvalsNeeded: w.needed },
    });
  }

  /**
   * Runs an `approved` request once. The approval worker of another process may see the same
   * `approved` row, so the run itself is claimed (an idempotency record keyed by the approval id):
   * only the claimant executes. A claimant that dies mid-run leaves the request `approved` and the
   * claim pending: the call is never run twice.
   */
  private async runClaimed(a: ApprovalRequest): Promise<ToolOutcome | undefined> {
    const execute = this.executor(a.tool);
    if (!execute) return undefined;
    const key = `tool-envelope/approval-run:${a.id}`;
    const claimToken = randomUUID();
    const claim = await this.store.claimIdempotency({ key, fingerprint: a.id, tool: a.tool, toolCallId: a.toolCallId, claimToken, createdAt: Date.now() });
    if (!claim.claimed) return undefined;
    const startedAt = Date.now();
    const call = decodeContextosCall(a.callEnvelope);
    const why = verifyApproval(await this.p.operatorKey(), a, call, true);
    let outcome: ToolOutcome;
    let auditId: string | undefined;
    const stale = !why && isStale(a, this.p.options.approvalRunWindowMs, startedAt);
    if (why) outcome = await this.settleInvalid(a, call, 'approved', why);
    else if (stale) outcome = await this.settleStale(a, call, startedAt);
    else {
      try {
        auditId = await this.p.begin(auditedOf(a, call, startedAt), a.id);
      } catch (e) {
        // The log cannot show the run: not run now, and the claim freed so that a later pickup (the
        // log back) runs it within its run window.
        if (e instanceof AuditUnavailable) await this.store.releaseIdempotency(key, claimToken).catch(() => {});
        throw e;
      }
      this.p.events?.emit('approved', a, { at: startedAt });
      const ran = await execute(call);
      outcome = {
        ...ran,
        status: isSuccessStatus(ran.status) ? 'completed' : 'failed',
        metadata: { ...ran.metadata, approvalId: a.id, approvedBy: quorumApprovers(a.decidedBy) ?? a.decidedBy ?? 'unknown' },
      };
      const ranRow = await this.store.transitionApproval(a.id, 'approved', outcome.status === 'completed' ? 'completed' : 'failed', {
        at: Date.now(),
        outcome: jsonCopy(outcome) as unknown as JsonObject,
      });
      this.p.events?.emit('run', ranRow ?? a, { status: outcome.status });
    }
    await this.store.completeIdempotency(key, claimToken, jsonCopy(outcome) as unknown as JsonObject, Date.now());
    if (!why && !stale) await this.p.audit(auditedOf(a, call, startedAt), outcome, { approvalId: a.id, auditId });
    return outcome;
  }

  /**
   * An approved request found past its run window (no process ran it in time, e.g. no gateway served
   * the store): settled `expired` with a `rejected` outcome, audited and told, never run.
   */
  private async settleStale(a: ApprovalRequest, call: ToolCall, now: number): Promise<ToolOutcome> {
    const window = this.p.options.approvalRunWindowMs ?? DEFAULT_RUN_WINDOW_MS;
    const outcome = this.p.synth(call, {
      status: 'rejected',
      error: toolError(
        'elevation',
        'approval-expired',
        `The approval request ${a.id} was approved at ${new Date(a.decidedAt ?? now).toISOString()} but no process ran it within ${window} ms of the decision; it was not run.`,
        { details: { approvalId: a.id, runWindowMs: window } },
      ),
      metadata: { approvalId: a.id, ...(a.decidedBy !== null && { decidedBy: a.decidedBy }) },
    });
    const done = await this.store.transitionApproval(a.id, 'approved', 'expired', { at: now, outcome: jsonCopy(outcome) as unknown as JsonObject });
    await this.p.audit(auditedOf(a, call, now), outcome, { approvalId: a.id });
    if (done) await this.notices?.notice(done, now);
    return outcome;
  }

  async runApproved(approvalId: string): Promise<ToolOutcome | undefined> {
    const a = await this.store.getApproval(approvalId);
    if (a?.state !== 'approved') return undefined;
    return this.runClaimed(a);
  }

  watch(watch: { intervalMs?: number; onError?: (err: unknown) => void } = {}): () => Promise<void> {
    const intervalMs = watch.intervalMs ?? 500;
    if (!(intervalMs > 0)) throw new ToolEnvelopeError('invalid-option', 'intervalMs must be a positive number');
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    let tick: Promise<void> = Promise.resolve();
    // Requests settled elsewhere before this worker started are history, not news.
    const since = Date.now();
    const poll = async (): Promise<void> => {
      let cursor: string | null = null;
      do {
        const page: Awaited<ReturnType<Store['listApprovals']>> = await this.store.listApprovals({ state: 'approved', limit: 100, cursor });
        for (const a of page.approvals) {
          if (stopped) return;
          if (this.executor(a.tool)) await this.runApproved(a.id);
        }
        cursor = page.nextCursor;
      } while (cursor && !stopped);
      if (!stopped) await this.notices?.sweep(since);
    };
    const schedule = (): void => {
      if (stopped) return;
      timer = setTimeout(() => {
        tick = poll()
          .catch((err: unknown) => watch.onError?.(err))
          .finally(schedule);
      }, intervalMs);
    };
    tick = poll()
      .catch((err: unknown) => watch.onError?.(err))
      .finally(schedule);
    return async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await tick;
    };
  }

  async reject(approvalId: string, decision: { approver: string; reason?: string }): Promise<ToolOutcome> {
    ApprovalDesk.checkDecision(decision);
    const a = await this.pending(approvalId);
    return this.settleRejected(a, 'rejected', decision.approver, decision.reason ?? null, Date.now());
  }

  async expire(now = Date.now()): Promise<number> {
    let n = 0;
    let cursor: string | null = null;
    const due: ApprovalRequest[] = [];
    do {
      const page: Awaited<ReturnType<Store['listApprovals']>> = await this.store.listApprovals({ state: 'pending', limit: 500, cursor });
      due.push(...page.approvals.filter((a) => a.expiresAt !== null && a.expiresAt <= now));
      cursor = page.nextCursor;
    } while (cursor);
    for (const a of due) {
      try {
        await this.settleRejected(a, 'expired', null, null, now);
        n++;
      } catch (e) {
        // Decided meanwhile by someone else: not ours to expire.
        if (!(e instanceof ToolEnvelopeError && e.code === 'approval-not-pending')) throw e;
      }
    }
    return n;
  }
}

/** A request's call as its audit records are of: under the request's decision, started at `startedAt`. */
function auditedOf(a: ApprovalRequest, call: ToolCall, startedAt: number): AuditedCall {
  return { call, decision: a.policyDecision as JsonObject | null, startedAt };
}
