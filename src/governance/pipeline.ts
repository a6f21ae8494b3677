/**
 * The governance pipeline: policy, identity, idempotency, approval and audit in one place, around
 * any way of executing a call. The governed runtime and the MCP gateway both run every call through
 * {@link GovernancePipeline.run}, each with its own `execute` (a runtime handler, an upstream call).
 *
 * One call: resolve the policy decision (over the principal chain, knowing which entries were
 * verified) → `blocked` without executing, or `paused` with a signed approval request → otherwise
 * idempotency (at most once per tenant + originating principal + tool + key) → `execute` → one
 * audit record. Approving a paused call runs it once through the executor registered for its tool,
 * only when the request's and the decision's signatures verify against the call about to run.
 */
import { randomUUID } from 'node:crypto';
import {
  encodeContextosCall,
  ToolEnvelopeError,
  type JsonObject,
  type ToolCall,
  type ToolError,
  type ToolOutcome,
  toolError,
  type ApprovalMode,
  compareApprovalModes,
  isApprovalMode,
} from 'tool-envelope/core';
import { AuditWriter } from '../store/audit-writer.js';
import { type OperatorKey, loadOperatorKey } from '../store/operator-key.js';
import { freezeAuditRecord } from '../store/audit-body.js';
import { newAuditId } from '../store/ids.js';
import type { ApprovalFilter, ApprovalRequest, AuditRecord, Store } from '../store/types.js';
import { approvalFacts, signApprovalRequest } from './approval-signature.js';
import { ApprovalDesk } from './approvals.js';
import { BudgetRefusal, chargeBudgets } from './budgets.js';
import { IdempotencyGuard, idempotencyKeyError, markReplay, scopedIdempotencyKey } from './idempotency.js';
import { type AuditExtra, auditOptionsFor, outcomeRecord, startedRecord } from './pipeline-audit.js';
import { asThisCall, elevation, stamped, syntheticOutcome } from './pipeline-outcomes.js';
import type { Execute, GovernanceOptions, GovernedCall, RunHooks, SyntheticInit, Synthesize } from './pipeline-types.js';
import { defaultPolicy } from './policy-load.js';
import { isCompiledPolicy, mayExecute, resolveApproval, resolveCompiledApproval } from './policy-resolve.js';
import type { Policy, PolicyDecision, ResolveApprovalInput } from './policy-types.js';

export type { Execute, GovernanceOptions, GovernedCall, RunHooks, SyntheticInit, Synthesize } from './pipeline-types.js';
export { asThisCall } from './pipeline-outcomes.js';

const NONE: readonly string[] = Object.freeze([]);

/**
 * The governance pipeline over a store.
 *
 * @example
 * ```ts
 * const pipeline = new GovernancePipeline({ store, executorFor: (tool) => (call) => upstream.call(tool, call.args) });
 * const outcome = await pipeline.run(call, (c) => upstream.call(c.capabilityId, c.args));
 * ```
 */
export class GovernancePipeline {
  readonly store: Store;
  readonly policy: Policy;
  /** @internal */ readonly writer: AuditWriter | undefined;
  /** @internal */ readonly options: GovernanceOptions;
  private readonly keyFrom: ApprovalMode | false;
  private readonly ttl: number | null;
  private readonly guard: IdempotencyGuard;
  private key: Promise<OperatorKey> | undefined;
  private readonly desk: ApprovalDesk;
  /**
   * Calls in {@link run} that write audit records: at most one, and that call's records are
   * logged `alone` (see AuditLogOptions), committed without waiting for other calls' records.
   */
  private running = 0;

  constructor(options: GovernanceOptions) {
    if (!options?.store) throw new ToolEnvelopeError('invalid-option', 'the governance pipeline needs a store');
    this.options = options;
    this.store = options.store;
    this.policy = options.policy ?? defaultPolicy;
    const keyFrom = options.requireIdempotencyKeyFrom ?? 'local_write';
    if (keyFrom !== false && !isApprovalMode(keyFrom))
      throw new ToolEnvelopeError('invalid-option', `requireIdempotencyKeyFrom: unknown mode ${String(keyFrom)}`);
    this.keyFrom = keyFrom;
    this.ttl = options.approvalTtlMs === undefined ? 86_400_000 : options.approvalTtlMs;
    this.guard = new IdempotencyGuard(options.store, options.idempotency);
    const audit = options.audit === false ? undefined : auditOptionsFor(options.audit, this.policy);
    this.writer = options.audit === false ? undefined : new AuditWriter(options.store, audit);
    this.desk = new ApprovalDesk(this);
  }

  /** The operator key, loaded once. */
  operatorKey(): Promise<OperatorKey> {
    if (!this.key) {
      const k = this.options.operatorKey;
      this.key = typeof k === 'function' ? k() : k ? Promise.resolve(k) : loadOperatorKey({ create: true });
      // A failed load is retried on the next use rather than remembered.
      this.key.catch(() => (this.key = undefined));
    }
    return this.key;
  }

  /** A synthetic outcome for a call. */
  synth(call: ToolCall, init: SyntheticInit, synthesize?: Synthesize, riskTags?: readonly string[]): ToolOutcome {
    const make = synthesize ?? this.options.synthesize;
    return make ? make(call, init) : syntheticOutcome(call, init, riskTags);
  }

  /**
   * Writes one audit record: by default resolves once it is committed (group commit across concurrent
   * calls), with `audit: { commit: 'background' }` once it is queued. `extra.auditId` is the id of
   * the call's `started` record, which this one completes. Never throws.
   */
  async audit(call: ToolCall, outcome: ToolOutcome, decision: PolicyDecision | JsonObject | null, startedAt: number, extra: AuditExtra = {}): Promise<void> {
    if (!this.writer) return;
    // Serialised now, once: the caller may change the outcome it got back without changing the log.
    await this.log(() => freezeAuditRecord(outcomeRecord(call, outcome, decision, startedAt, extra, this.options.auditContent !== false)), this.running <= 1);
  }

  /**
   * Records a call as `started` before it executes (committed first, per the commit mode), so a crash
   * mid-call leaves an `interrupted` record; returns the id its outcome's record completes.
   */
  async begin(call: ToolCall, decision: PolicyDecision | JsonObject | null, startedAt: number, approvalId: string | null = null): Promise<string | undefined> {
    if (!this.writer) return undefined;
    const id = newAuditId();
    await this.log(() => startedRecord(id, call, decision, startedAt, approvalId), this.running <= 1);
    return id;
  }

  /** Completes a call's `started` record with its end, once (see {@link RunHooks.goesOn}); the end's latency is the time since the call started. */
  private finisher(call: ToolCall, decision: PolicyDecision, startedAt: number, auditId: string | undefined): (end: ToolOutcome) => Promise<void> {
    let done = false;
    return async (end) => {
      if (done) return;
      done = true;
      const { latencyMs: _l, ...rest } = stamped(end, call);
      await this.audit(call, rest, decision, startedAt, { auditId });
    };
  }

  /** Logs a record per the writer's commit mode; the call goes on whatever happens to the record. */
  private async log(make: () => AuditRecord, alone: boolean): Promise<void> {
    let record: AuditRecord | undefined;
    try {
      record = make();
      await this.writer!.log(record, { alone });
    } catch (e) {
      // The call's outcome stands even when its record cannot be logged; the failure is reported, not thrown.
      const onError = this.options.audit === false ? undefined : this.options.audit?.onError;
      if (onError && record) onError(e, record);
      else process.emitWarning(`tool-envelope: audit record ${record?.id ?? ''} was not written: ${(e as Error)?.message ?? String(e)}`, 'ToolEnvelopeWarning');
    }
  }

  /**
   * Runs one call under policy, identity, idempotency, approval and audit. `execute` runs at most
   * once, and only when the call is allowed. Resolves to the outcome (blocked, paused, refused,
   * replayed or executed); rejects only when `execute` rejects. `hooks.goesOn` lets a call that
   * goes on past its outcome (a task) complete its audit record at its end.
   */
  async run(input: GovernedCall, execute: Execute, hooks?: RunHooks): Promise<ToolOutcome> {
    const startedAt = Date.now();
    const t0 = performance.now();
    const requested: unknown = input.requestedMode ?? input.ceiling;
    const idempotencyKey = input.idempotencyKey;
    const evidenceRefs = input.evidenceRefs ?? NONE;
    // Built by assignment rather than conditional spreads: this runs once per call.
    const facts: ResolveApprovalInput = {
      tool: input.tool,
      ceiling: input.ceiling,
      requested,
      principalChain: input.principalChain,
      args: input.args,
      evidenceRefs,
      idempotencyKey: idempotencyKey ?? null,
      authRef: input.authRef ?? null,
      riskTags: input.riskTags ?? NONE,
      now: startedAt,
    };
    if (input.verifiedPrincipals !== undefined) facts.verifiedPrincipals = input.verifiedPrincipals;
    if (input.metadata !== undefined) facts.metadata = input.metadata;
    if (input.sessionId !== undefined) facts.sessionId = input.sessionId;
    if (input.identity !== undefined) facts.identity = input.identity;
    if (input.toolAnnotations !== undefined) facts.toolAnnotations = input.toolAnnotations;
    const policy = this.policy;
    // A rule policy decides synchronously: no promise for the decision (resolveCompiledApproval; its reference is resolveApproval).
    const decision = isCompiledPolicy(policy) ? resolveCompiledApproval(facts, policy) : await resolveApproval({ ...facts, policy });
    const call: ToolCall = {
      toolCallId: input.toolCallId,
      runId: input.runId,
      traceId: input.traceId,
      capabilityId: input.tool,
      args: input.args,
      // The decision's copy of the chain: the call and its decision name the same principals.
      principalChain: decision.principalChain,
      // An unknown requested mode cannot go on the wire; it is kept in the decision's reason instead.
      approvalModeRequested: isApprovalMode(requested) ? requested : 'read_only',
      // Nothing is granted to a denied call: its effective mode is recorded as the lowest.
      approvalModeEffective: decision.effectiveMode ?? 'read_only',
      approvalModeHighest: input.ceiling,
      policyDecisionId: decision.id,
      evidenceRefs: [...evidenceRefs],
    };
    if (input.sessionId !== undefined) call.sessionId = input.sessionId;
    if (idempotencyKey !== undefined) call.idempotencyKey = idempotencyKey;
    if (input.authRef !== undefined) call.authRef = input.authRef;
    if (input.metadata !== undefined) call.metadata = input.metadata;
    const needed = input.requiredMode ?? input.ceiling;
    const keyFrom = this.keyFrom;
    if (
      decision.effect === 'allow' &&
      !idempotencyKey &&
      mayExecute(decision, needed) &&
      (keyFrom === false || compareApprovalModes(decision.effectiveMode as ApprovalMode, keyFrom) < 0)
    ) {
      // Allowed, no key: the common call. Its records, when there is an audit log: `started` (committed
      // first, per the commit mode) before it executes, then its outcome.
      if (decision.budgets !== undefined) {
        const refusal = await chargeBudgets(this.store, decision.budgets, Date.now());
        if (refusal) return this.refuse(call, decision, refusal, startedAt, t0, hooks, input.riskTags);
      }
      if (!this.writer) return stamped(await execute(call), call);
      this.running++;
      try {
        const auditId = await this.begin(call, decision, startedAt);
        if (auditId !== undefined) hooks?.begun?.(auditId);
        const outcome = stamped(await execute(call), call);
        if (hooks?.goesOn?.(outcome, this.finisher(call, decision, startedAt, auditId), auditId)) return outcome;
        await this.audit(call, outcome, decision, startedAt, { auditId });
        return outcome;
      } finally {
        this.running--;
      }
    }
    if (!this.writer) return this.govern(input, call, decision, needed, startedAt, t0, execute, hooks);
    this.running++;
    try {
      return await this.govern(input, call, decision, needed, startedAt, t0, execute, hooks);
    } finally {
      this.running--;
    }
  }

  /** Every call but an allowed one without a key: blocked, refused, paused, keyed. */
  private async govern(
    input: GovernedCall,
    call: ToolCall,
    decision: PolicyDecision,
    needed: ApprovalMode,
    startedAt: number,
    t0: number,
    execute: Execute,
    hooks: RunHooks | undefined,
  ): Promise<ToolOutcome> {
    const synthesize = hooks?.synthesize;
    const idempotencyKey = input.idempotencyKey;
    const riskTags = input.riskTags ?? NONE;
    const elapsed = (): number => performance.now() - t0;
    const synth = (init: SyntheticInit): ToolOutcome => this.synth(call, init, synthesize, riskTags);

    if (decision.effect === 'deny' || (decision.effect === 'allow' && !mayExecute(decision, needed))) {
      const reason =
        decision.effect === 'deny' ? decision.reason : `the tool needs ${needed} for this call but the effective mode is ${decision.effectiveMode ?? 'none'}`;
      const details: JsonObject = { policyDecisionId: decision.id };
      if (decision.rule !== undefined) details.rule = decision.rule;
      const outcome = synth({ status: 'blocked', error: elevation('policy-denied', `Blocked by policy: ${reason}`, details), latencyMs: elapsed() });
      await this.audit(call, outcome, decision, startedAt);
      return outcome;
    }

    const scoped = idempotencyKey ? this.scopedKey(call, idempotencyKey) : undefined;
    if (scoped !== undefined && typeof scoped !== 'string') {
      const outcome = synth({ status: 'error', error: scoped, latencyMs: elapsed() });
      await this.audit(call, outcome, decision, startedAt);
      return outcome;
    }

    if (decision.effect === 'require-approval') {
      const pause = (): Promise<ToolOutcome> => this.pause(call, decision, startedAt, elapsed, synth);
      let outcome: ToolOutcome;
      let replay = false;
      if (scoped) {
        // The same key asks for the same approval: a repeat gets the request's current answer, not a second request.
        const r = await this.guard.run({ key: scoped, tool: call.capabilityId, args: call.args, toolCallId: call.toolCallId }, pause);
        replay = r.replay;
        outcome = r.replay
          ? await this.currentAnswer(r.outcome, call, elapsed())
          : r.executed
            ? r.outcome
            : synth({ status: r.outcome.status, error: r.outcome.error ?? null, latencyMs: elapsed() });
      } else {
        outcome = await pause();
      }
      const approvalId = outcome.metadata?.approvalId;
      await this.audit(call, outcome, decision, startedAt, { replay, approvalId: typeof approvalId === 'string' ? approvalId : null });
      return outcome;
    }

    if (this.keyFrom !== false && !scoped && compareApprovalModes(decision.effectiveMode as ApprovalMode, this.keyFrom) >= 0) {
      const outcome = synth({
        status: 'error',
        error: toolError(
          'invalid-argument',
          'idempotency-key-required',
          `Calls at ${decision.effectiveMode} need an idempotency key, so that a retry cannot repeat the side effect.`,
        ),
        latencyMs: elapsed(),
      });
      await this.audit(call, outcome, decision, startedAt);
      return outcome;
    }
    // An allowed call without a key never gets here: run() executes those itself.
    let auditId: string | undefined;
    let r: Awaited<ReturnType<IdempotencyGuard['run']>>;
    try {
      r = await this.guard.run({ key: scoped as string, tool: call.capabilityId, args: call.args, toolCallId: call.toolCallId }, async () => {
        // Counted once the key is claimed, so a replay is not; a refusal frees the key (the call did not run).
        if (decision.budgets !== undefined) {
          const refusal = await chargeBudgets(this.store, decision.budgets, Date.now());
          if (refusal) throw new BudgetRefusal(refusal);
        }
        auditId = await this.begin(call, decision, startedAt);
        if (auditId !== undefined) hooks?.begun?.(auditId);
        return stamped(await execute(call), call);
      });
    } catch (e) {
      if (e instanceof BudgetRefusal) return this.refuse(call, decision, e.error, startedAt, t0, hooks, input.riskTags);
      throw e;
    }
    let outcome = r.outcome;
    if (r.replay) outcome = asThisCall(hooks?.replayed ? await hooks.replayed(outcome) : outcome, call, Math.round(elapsed()));
    else if (!r.executed) outcome = synth({ status: outcome.status, error: outcome.error ?? null, latencyMs: elapsed() });
    else if (hooks?.goesOn?.(outcome, this.finisher(call, decision, startedAt, auditId), auditId)) return outcome;
    await this.audit(call, outcome, decision, startedAt, { replay: r.replay, auditId });
    return outcome;
  }

  /** A call its budgets refused (governance/budgets.ts): `blocked`, with when to retry; audited. */
  private async refuse(
    call: ToolCall,
    decision: PolicyDecision,
    error: ToolError,
    startedAt: number,
    t0: number,
    hooks: RunHooks | undefined,
    riskTags: readonly string[] | undefined,
  ): Promise<ToolOutcome> {
    const details: JsonObject = { ...error.details, policyDecisionId: decision.id };
    if (decision.rule !== undefined) details.rule = decision.rule;
    const status = error.code === 'budget-exhausted' ? 'blocked' : 'error';
    const outcome = this.synth(call, { status, error: { ...error, details }, latencyMs: performance.now() - t0 }, hooks?.synthesize, riskTags ?? NONE);
    await this.audit(call, outcome, decision, startedAt);
    return outcome;
  }

  /** The store key of a call's idempotency key (scoped to tenant, originating principal and tool), or why the key is bad. */
  private scopedKey(call: ToolCall, key: string): string | ToolError {
    const bad = idempotencyKeyError(key);
    if (bad) return bad;
    const head = call.principalChain[0];
    return scopedIdempotencyKey({ tenant: head?.tenant_id ?? null, principal: head ? `${head.kind}:${head.id}` : null, tool: call.capabilityId, key });
  }

  private async pause(
    call: ToolCall,
    decision: PolicyDecision,
    startedAt: number,
    elapsed: () => number,
    synth: (init: SyntheticInit) => ToolOutcome,
  ): Promise<ToolOutcome> {
    const approvalId = `apr_${randomUUID()}`;
    const expiresAt = this.ttl === null ? null : startedAt + this.ttl;
    // The policy (or the operator) may let the originating user approve; a caller-declared user never may.
    const selfApproval = this.options.allowSelfApproval === true || (decision.selfApproval === true && decision.verifiedPrincipals > 0);
    const policyDecision = { ...(JSON.parse(JSON.stringify(decision)) as PolicyDecision), selfApproval } as unknown as ApprovalRequest['policyDecision'];
    let signature: string;
    try {
      signature = signApprovalRequest(await this.operatorKey(), approvalFacts({ id: approvalId, tool: call.capabilityId, expiresAt, policyDecision }, call));
    } catch (e) {
      return synth({
        status: 'error',
        error: toolError(
          'internal',
          'operator-key-unavailable',
          `The call needs an approval, but the operator key to sign the request is unavailable: ${(e as Error)?.message ?? String(e)}`,
        ),
        latencyMs: elapsed(),
      });
    }
    const outcome = synth({
      status: 'paused',
      error: elevation('approval-required', `Waiting for an approver (${approvalId}): ${decision.reason}`, { approvalId }),
      metadata: { approvalId },
      latencyMs: elapsed(),
    });
    await this.store.createApproval({
      id: approvalId,
      state: 'pending',
      tool: call.capabilityId,
      toolCallId: call.toolCallId,
      runId: call.runId,
      sessionId: call.sessionId ?? null,
      callEnvelope: encodeContextosCall(call) as unknown as JsonObject,
      principalChain: call.principalChain,
      policyDecision,
      reason: decision.reason,
      createdAt: startedAt,
      expiresAt,
      decidedAt: null,
      decidedBy: null,
      decisionReason: null,
      outcome: null,
      requestSignature: signature,
    });
    return outcome;
  }

  /** A replayed `paused` outcome answers with the approval's final outcome once it has one. */
  private async currentAnswer(replayed: ToolOutcome, call: ToolCall, latencyMs: number): Promise<ToolOutcome> {
    const approvalId = replayed.metadata?.approvalId;
    if (replayed.status === 'paused' && typeof approvalId === 'string') {
      const a = await this.store.getApproval(approvalId);
      if (a?.outcome) return asThisCall(markReplay(a.outcome as unknown as ToolOutcome, a.toolCallId), call, Math.round(latencyMs));
    }
    return asThisCall(replayed, call, Math.round(latencyMs));
  }

  /** Approves a paused call (signing the decision) and runs it once: `completed`/`failed`, `rejected` when expired. */
  approve(approvalId: string, decision: { approver: string; reason?: string }): Promise<ToolOutcome> {
    return this.desk.approve(approvalId, decision);
  }

  /** Rejects a paused call: `rejected`. */
  reject(approvalId: string, decision: { approver: string; reason?: string }): Promise<ToolOutcome> {
    return this.desk.reject(approvalId, decision);
  }

  /** Runs a request approved elsewhere, once across processes; `undefined` when not ours to run. */
  runApproved(approvalId: string): Promise<ToolOutcome | undefined> {
    return this.desk.runApproved(approvalId);
  }

  /** Polls for requests approved elsewhere and runs each once; returns the function that stops polling. */
  watchApprovals(options?: { intervalMs?: number; onError?: (err: unknown) => void }): () => Promise<void> {
    return this.desk.watch(options);
  }

  /** Rejects every pending request whose time ran out; returns how many. */
  expireApprovals(now?: number): Promise<number> {
    return this.desk.expire(now);
  }

  /** Approval requests (default: pending ones), newest first. */
  async approvals(filter: ApprovalFilter = { state: 'pending' }): Promise<ApprovalRequest[]> {
    return (await this.store.listApprovals(filter)).approvals;
  }

  /** Resolves when every audit record so far is durably written. */
  async flush(): Promise<void> {
    await this.writer?.flush();
  }

  /** Flushes and stops the audit writer. The store stays open (it is the caller's). */
  async close(): Promise<void> {
    await this.writer?.close();
  }
}
