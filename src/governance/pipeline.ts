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
import { ApprovalEvents } from './approval-events.js';
import { JoinLine, findApprovalToJoin, joinKey, joinKeyDigest } from './approval-join.js';
import { approvalFacts, signApprovalRequest } from './approval-signature.js';
import { ApprovalDesk } from './approvals.js';
import { AuditUnavailable } from './audit-unavailable.js';
import { BudgetRefusal, chargeBudgets } from './budgets.js';
import { IdempotencyGuard, idempotencyKeyError, markReplay, scopedIdempotencyKey } from './idempotency.js';
import { type AuditExtra, type AuditedCall, auditOptionsFor, checkSameRedaction, outcomeRecord, startedRecord } from './pipeline-audit.js';
import { asThisCall, elevation, stamped, syntheticOutcome } from './pipeline-outcomes.js';
import type { Execute, ExecuteStep, Executed, Governed, GovernanceOptions, GovernedCall, RunHooks, SyntheticInit, Synthesize } from './pipeline-types.js';
import { defaultPolicy } from './policy-load.js';
import { executionGate, isCompiledPolicy, mayExecute, resolveApproval, resolveCompiledApproval } from './policy-resolve.js';
import type { Policy, PolicyDecision, ResolveApprovalInput } from './policy-types.js';

export type { Execute, ExecuteStep, Executed, Governed, GovernanceOptions, GovernedCall, RunHooks, SyntheticInit, Synthesize } from './pipeline-types.js';
export { asThisCall } from './pipeline-outcomes.js';

const NONE: readonly string[] = Object.freeze([]);

/**
 * The governance pipeline over a store.
 *
 * @example
 * ```ts
 * const pipeline = new GovernancePipeline({ store, executorFor: (tool) => (call) => runtime.invoke(tool, call.args) });
 * ```
 */
export class GovernancePipeline {
  readonly store: Store;
  /** The policy in force: {@link usePolicy} swaps it whole, and each call decides on the one it read once. */
  get policy(): Policy {
    return this.current;
  }
  private current: Policy;
  /** @internal */ readonly writer: AuditWriter | undefined;
  /** @internal */ readonly options: GovernanceOptions;
  private readonly keyFrom: ApprovalMode | false;
  private readonly ttl: number | null;
  private readonly guard: IdempotencyGuard;
  private key: Promise<OperatorKey> | undefined;
  private readonly desk: ApprovalDesk;
  /** The listener of approval events (options.onApprovalEvent), with the audit log's redaction. */
  readonly events: ApprovalEvents | undefined;
  /** Identical calls that need an approval look for a request to join one at a time (approval-join.ts). */
  private readonly joins = new JoinLine();
  /**
   * Calls in {@link run} that write audit records: at most one, and that call's records are
   * logged `alone` (see AuditLogOptions), committed without waiting for other calls' records.
   */
  private running = 0;

  constructor(options: GovernanceOptions) {
    if (!options?.store) throw new ToolEnvelopeError('invalid-option', 'the governance pipeline needs a store');
    this.options = options;
    this.store = options.store;
    this.current = options.policy ?? defaultPolicy;
    const keyFrom = options.requireIdempotencyKeyFrom ?? 'local_write';
    if (keyFrom !== false && !isApprovalMode(keyFrom))
      throw new ToolEnvelopeError('invalid-option', `requireIdempotencyKeyFrom: unknown mode ${String(keyFrom)}`);
    this.keyFrom = keyFrom;
    this.ttl = options.approvalTtlMs === undefined ? 86_400_000 : options.approvalTtlMs;
    this.guard = new IdempotencyGuard(options.store, options.idempotency);
    const audit = options.audit === false ? undefined : auditOptionsFor(options.audit, this.policy);
    this.writer = options.audit === false ? undefined : new AuditWriter(options.store, audit);
    this.events = options.onApprovalEvent ? new ApprovalEvents(options.onApprovalEvent, audit?.redact) : undefined;
    this.desk = new ApprovalDesk(this);
  }

  /**
   * Puts `next` in force for the calls that start from now (a reload): calls already past their
   * decision keep theirs. Throws `invalid-option` when it redacts other values than the policy in
   * force (the audit writer's redaction is set when the pipeline is made).
   */
  usePolicy(next: Policy): void {
    checkSameRedaction(this.current, next);
    this.current = next;
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
   * Writes one audit record of `of` (the call, its decision and start: a run of the pipeline is one)
   * ending in `outcome`: by default resolves once it is committed (group commit across concurrent
   * calls), with `audit: { commit: 'background' }` once it is queued. `extra.auditId` is the id of
   * the call's `started` record, which this one completes. Never throws.
   */
  async audit(of: AuditedCall, outcome: ToolOutcome, extra: AuditExtra = {}): Promise<void> {
    if (!this.writer) return;
    // Serialised now, once: the caller may change the outcome it got back without changing the log.
    await this.log(() => freezeAuditRecord(outcomeRecord(of, outcome, extra, this.options.auditContent !== false)), this.running <= 1);
  }

  /**
   * Records a call as `started` before it executes (committed first, per the commit mode), so a crash
   * mid-call leaves an `interrupted` record; returns the id its outcome's record completes. Throws
   * {@link AuditUnavailable} when, committing before answer, the record could not be committed: the
   * call must then not run (with `background` commits it runs, and the failure is only reported).
   */
  async begin(of: AuditedCall, approvalId: string | null = null): Promise<string | undefined> {
    if (!this.writer) return undefined;
    const id = newAuditId();
    const failed = await this.log(() => startedRecord(id, of, approvalId), this.running <= 1);
    if (failed !== undefined && this.writer.commitMode === 'before-answer') throw new AuditUnavailable(failed);
    return id;
  }

  /** Completes a call's `started` record with its end, once (see {@link RunHooks.goesOn}); the end's latency is the time since the call started. */
  private finisher(of: AuditedCall, auditId: string | undefined): (end: ToolOutcome) => Promise<void> {
    let done = false;
    return async (end) => {
      if (done) return;
      done = true;
      const { latencyMs: _l, ...rest } = stamped(end, of.call);
      await this.audit(of, rest, { auditId });
    };
  }

  /**
   * Logs a record per the writer's commit mode. Never throws: a record that cannot be written is
   * reported (the writer's `onError`, else a process warning) and its error returned, so that
   * {@link begin} can keep the call from running; an outcome's record failing leaves the outcome as it is.
   */
  private async log(make: () => AuditRecord, alone: boolean): Promise<unknown> {
    const writer = this.writer!;
    let record: AuditRecord | undefined;
    let submitted = false;
    try {
      record = make();
      const { committed } = await writer.submit(record, { alone });
      submitted = true;
      if (writer.commitMode === 'before-answer') await committed;
      return undefined;
    } catch (e) {
      // A commit that failed was already told to the writer's onError; the rest is told here.
      const onError = this.options.audit === false ? undefined : this.options.audit?.onError;
      if (!(submitted && onError)) {
        if (onError && record) onError(e, record);
        else
          process.emitWarning(`tool-envelope: audit record ${record?.id ?? ''} was not written: ${(e as Error)?.message ?? String(e)}`, 'ToolEnvelopeWarning');
      }
      return e ?? new Error('audit record not written');
    }
  }

  /**
   * Runs one call under policy, identity, idempotency, approval and audit. `execute` runs at most
   * once, and only when the call is allowed. Resolves to the outcome (blocked, paused, refused,
   * replayed or executed); rejects only when `execute` rejects. The same path as {@link govern},
   * for an executor that gives back the outcome alone.
   */
  async run(input: GovernedCall, execute: Execute, hooks?: RunHooks): Promise<ToolOutcome> {
    return (await this.govern(input, (call) => execute(call).then(executedOf), hooks)).outcome;
  }

  /**
   * Runs one call under policy, identity, idempotency, approval and audit: decide, then blocked,
   * paused, refused or replayed, or execute; then record. `execute` runs at most once, and only when
   * the call is allowed; its value (the outcome and whatever the caller carries beside it) comes back
   * whole in {@link Governed.answer}. Rejects only when `execute` rejects. `hooks.goesOn` lets a call
   * that goes on past its outcome (a task) complete its audit record at its end.
   */
  async govern<R extends Executed>(input: GovernedCall, execute: ExecuteStep<R>, hooks?: RunHooks<R>): Promise<Governed<R>> {
    const startedAt = Date.now();
    const t0 = performance.now();
    const facts = resolveInputOf(input, startedAt);
    const policy = this.policy;
    // A rule policy decides synchronously: no promise for the decision (resolveCompiledApproval; its reference is resolveApproval).
    const decision = isCompiledPolicy(policy) ? resolveCompiledApproval(facts, policy) : await resolveApproval({ ...facts, policy });
    // Which policy decided, in every record of the call (a reload may put another in force meanwhile).
    if (isCompiledPolicy(policy)) decision.policyDigest = policy.digest;
    const run: Run<R> = { input, call: toolCallOf(input, decision), decision, needed: input.requiredMode ?? input.ceiling, startedAt, t0, execute, hooks };
    const common = decision.effect === 'allow' && !input.idempotencyKey && mayExecute(decision, run.needed) && !this.needsKey(decision);
    if (common && decision.budgets !== undefined) {
      // Counted only for a call allowed to run: a refusal is the call's end.
      const refusal = await chargeBudgets(this.store, decision.budgets, Date.now());
      if (refusal) return { outcome: await this.refuse(run, refusal) };
    }
    if (!this.writer) return common ? this.executed(run, await execute(run.call)) : this.gate(run);
    this.running++;
    try {
      // Allowed, no key: the common call, executed between its `started` record and its outcome's.
      return common ? await this.executeRecorded(run) : await this.gate(run);
    } finally {
      this.running--;
    }
  }

  /** True when the decision's effective mode needs an idempotency key (`requireIdempotencyKeyFrom`). */
  private needsKey(decision: PolicyDecision): boolean {
    return this.keyFrom !== false && compareApprovalModes(decision.effectiveMode as ApprovalMode, this.keyFrom) >= 0;
  }

  /** The executed value as the run's end: its outcome stamped with the call's ids (a copy only when they are missing). */
  private executed<R extends Executed>(run: Run<R>, executed: R): Governed<R> {
    return { outcome: stamped(executed.outcome, run.call), answer: executed };
  }

  /** An allowed call with an audit log: `started` (committed first, per the commit mode), execute, then the outcome's record. */
  private async executeRecorded<R extends Executed>(run: Run<R>): Promise<Governed<R>> {
    let auditId: string | undefined;
    try {
      auditId = await this.begin(run);
    } catch (e) {
      if (e instanceof AuditUnavailable) return this.ended(run, { status: 'error', error: e.error });
      throw e;
    }
    if (auditId !== undefined) run.hooks?.begun?.(auditId);
    const governed = this.executed(run, await run.execute(run.call));
    if (this.goesOn(run, governed, auditId)) return governed;
    await this.audit(run, governed.outcome, { auditId });
    return governed;
  }

  /** True when the executed call goes on past its outcome (hooks.goesOn): its record is then completed at its end. */
  private goesOn<R extends Executed>(run: Run<R>, governed: Governed<R>, auditId: string | undefined): boolean {
    const goesOn = run.hooks?.goesOn;
    if (!goesOn || !governed.answer || !goesOn(governed.answer, this.finisher(run, auditId), auditId)) return false;
    if (auditId !== undefined) governed.auditId = auditId;
    return true;
  }

  /** A synthetic outcome of this run (blocked, paused, refused), with the time spent so far. */
  private synthOf<R extends Executed>(run: Run<R>, init: Omit<SyntheticInit, 'latencyMs'>): ToolOutcome {
    return this.synth(run.call, { ...init, latencyMs: performance.now() - run.t0 }, run.hooks?.synthesize, run.input.riskTags ?? NONE);
  }

  /** A synthetic outcome, recorded: the run's end when the call does not execute. */
  private async ended<R extends Executed>(run: Run<R>, init: Omit<SyntheticInit, 'latencyMs'>): Promise<Governed<R>> {
    const outcome = this.synthOf(run, init);
    await this.audit(run, outcome);
    return { outcome };
  }

  /** Every call but an allowed one without a key: blocked, refused, paused, keyed. */
  private async gate<R extends Executed>(run: Run<R>): Promise<Governed<R>> {
    const { decision, needed, input } = run;
    if (decision.effect === 'deny' || (decision.effect === 'allow' && !mayExecute(decision, needed))) {
      const reason = decision.effect === 'deny' ? decision.reason : (executionGate(decision, needed) as string);
      const details: JsonObject = { policyDecisionId: decision.id };
      if (decision.rule !== undefined) details.rule = decision.rule;
      return this.ended(run, { status: 'blocked', error: elevation('policy-denied', `Blocked by policy: ${reason}`, details) });
    }
    const scoped = input.idempotencyKey ? this.scopedKey(run.call, input.idempotencyKey) : undefined;
    if (scoped !== undefined && typeof scoped !== 'string') return this.ended(run, { status: 'error', error: scoped });
    if (decision.effect === 'require-approval') return this.approvalGate(run, scoped);
    if (!scoped && this.needsKey(decision)) {
      const detail = `Calls at ${decision.effectiveMode} need an idempotency key, so that a retry cannot repeat the side effect.`;
      return this.ended(run, { status: 'error', error: toolError('invalid-argument', 'idempotency-key-required', detail) });
    }
    // An allowed call without a key never gets here: run() executes those itself.
    return this.executeOnce(run, scoped as string);
  }

  /** A call that needs an approval: paused with a signed request; the same key asks for the same approval. */
  private async approvalGate<R extends Executed>(run: Run<R>, scoped: string | undefined): Promise<Governed<R>> {
    const { call } = run;
    const pause = async (): Promise<ToolOutcome> => (await this.pause(run))!;
    let outcome: ToolOutcome;
    let replay = false;
    if (scoped) {
      // A repeat gets the request's current answer, not a second request.
      const r = await this.guard.run({ key: scoped, tool: call.capabilityId, args: call.args, toolCallId: call.toolCallId }, pause);
      replay = r.replay;
      outcome = r.replay
        ? await this.currentAnswer(r.outcome, call, performance.now() - run.t0)
        : r.executed
          ? r.outcome
          : this.synthOf(run, { status: r.outcome.status, error: r.outcome.error ?? null });
    } else {
      ({ outcome, replay } = await this.joinOrPause(run));
    }
    const approvalId = outcome.metadata?.approvalId;
    await this.audit(run, outcome, { replay, approvalId: typeof approvalId === 'string' ? approvalId : null });
    return { outcome };
  }

  /**
   * A call without a key that needs an approval joins the request an identical call of the same
   * verified principal opened (approval-join.ts): while it waits, its `paused` outcome (same approval
   * id); once settled, its final outcome as a replay; otherwise the call pauses with a new request.
   */
  private async joinOrPause<R extends Executed>(run: Run<R>): Promise<{ outcome: ToolOutcome; replay: boolean }> {
    const { call, decision } = run;
    const key = joinKey(call, decision.verifiedPrincipals);
    if (key === undefined) return { outcome: (await this.pause(run))!, replay: false };
    const joining = { tool: call.capabilityId, key };
    return this.joins.serial(key, async () => {
      // Without the operator key no request verifies: pause() answers why.
      const operatorKey = await this.operatorKey().catch(() => undefined);
      // The store opens one pending request per key: a replica that lost the race finds the winner's
      // on the second look; should that one not join (expired, unverifiable), a keyless request opens.
      for (const digest of [joinKeyDigest(key), undefined]) {
        const join = operatorKey && (await findApprovalToJoin(this.store, operatorKey, joining, Date.now()));
        if (join && 'waiting' in join) return { outcome: this.pausedOf(run, join.waiting.id), replay: true };
        if (join) return { outcome: this.settledAs(join.settled, call, performance.now() - run.t0), replay: true };
        const paused = await this.pause(run, digest);
        if (paused) return { outcome: paused, replay: false };
      }
      return { outcome: (await this.pause(run))!, replay: false };
    });
  }

  /** An allowed call with an idempotency key: executed once per key; a repeat replays the stored outcome. */
  private async executeOnce<R extends Executed>(run: Run<R>, scoped: string): Promise<Governed<R>> {
    const { call, decision, hooks } = run;
    let auditId: string | undefined;
    let governed: Governed<R> | undefined;
    let r: Awaited<ReturnType<IdempotencyGuard['run']>>;
    try {
      r = await this.guard.run({ key: scoped, tool: call.capabilityId, args: call.args, toolCallId: call.toolCallId }, async () => {
        // Counted once the key is claimed, so a replay is not; a refusal frees the key (the call did not run).
        if (decision.budgets !== undefined) {
          const refusal = await chargeBudgets(this.store, decision.budgets, Date.now());
          if (refusal) throw new BudgetRefusal(refusal);
        }
        auditId = await this.begin(run);
        if (auditId !== undefined) hooks?.begun?.(auditId);
        governed = this.executed(run, await run.execute(call));
        return governed.outcome;
      });
    } catch (e) {
      if (e instanceof BudgetRefusal) return { outcome: await this.refuse(run, e.error) };
      if (e instanceof AuditUnavailable) return this.ended(run, { status: 'error', error: e.error });
      throw e;
    }
    if (r.replay) {
      const current = hooks?.replayed ? await hooks.replayed(r.outcome) : undefined;
      const outcome = asThisCall(current?.outcome ?? r.outcome, call, Math.round(performance.now() - run.t0));
      await this.audit(run, outcome, { replay: true, auditId });
      return current ? { outcome, answer: current } : { outcome };
    }
    if (!r.executed || !governed) return this.ended(run, { status: r.outcome.status, error: r.outcome.error ?? null });
    if (this.goesOn(run, governed, auditId)) return governed;
    await this.audit(run, governed.outcome, { auditId });
    return governed;
  }

  /** A call its budgets refused (governance/budgets.ts): `blocked`, with when to retry; audited. */
  private async refuse<R extends Executed>(run: Run<R>, error: ToolError): Promise<ToolOutcome> {
    const { decision } = run;
    const details: JsonObject = { ...error.details, policyDecisionId: decision.id };
    if (decision.rule !== undefined) details.rule = decision.rule;
    const status = error.code === 'budget-exhausted' ? 'blocked' : 'error';
    const outcome = this.synthOf(run, { status, error: { ...error, details } });
    await this.audit(run, outcome);
    return outcome;
  }

  /** The store key of a call's idempotency key (scoped to tenant, originating principal and tool), or why the key is bad. */
  private scopedKey(call: ToolCall, key: string): string | ToolError {
    const bad = idempotencyKeyError(key);
    if (bad) return bad;
    const head = call.principalChain[0];
    return scopedIdempotencyKey({ tenant: head?.tenant_id ?? null, principal: head ? `${head.kind}:${head.id}` : null, tool: call.capabilityId, key });
  }

  /** A signed approval request for the call, and its `paused` outcome; `undefined` when a pending request holds `joinKey` (see Store.createApproval). */
  private async pause<R extends Executed>(run: Run<R>, joinKey?: string): Promise<ToolOutcome | undefined> {
    const { call, decision, startedAt } = run;
    const approvalId = `apr_${randomUUID()}`;
    const expiresAt = this.ttl === null ? null : startedAt + this.ttl;
    // The policy (or the operator) may let the originating user approve; a caller-declared user never may.
    const selfApproval = this.options.allowSelfApproval === true || (decision.selfApproval === true && decision.verifiedPrincipals > 0);
    const policyDecision = { ...(JSON.parse(JSON.stringify(decision)) as PolicyDecision), selfApproval } as unknown as ApprovalRequest['policyDecision'];
    let signature: string;
    try {
      signature = signApprovalRequest(await this.operatorKey(), approvalFacts({ id: approvalId, tool: call.capabilityId, expiresAt, policyDecision }, call));
    } catch (e) {
      return this.synthOf(run, {
        status: 'error',
        error: toolError(
          'internal',
          'operator-key-unavailable',
          `The call needs an approval, but the operator key to sign the request is unavailable: ${(e as Error)?.message ?? String(e)}`,
        ),
      });
    }
    const outcome = this.pausedOf(run, approvalId);
    const request: ApprovalRequest = {
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
    };
    if ((await this.store.createApproval(request, joinKey === undefined ? undefined : { joinKey })) === false) return undefined;
    this.events?.emit('requested', request, { at: startedAt });
    return outcome;
  }

  /** The `paused` outcome of a call waiting for the approval request `approvalId`. */
  private pausedOf<R extends Executed>(run: Run<R>, approvalId: string): ToolOutcome {
    return this.synthOf(run, {
      status: 'paused',
      error: elevation('approval-required', `Waiting for an approver (${approvalId}): ${run.decision.reason}`, { approvalId }),
      metadata: { approvalId },
    });
  }

  /** A settled request's final outcome as this call's answer, marked as a replay of the call that ran (or was rejected). */
  private settledAs(a: ApprovalRequest, call: ToolCall, latencyMs: number): ToolOutcome {
    return asThisCall(markReplay(a.outcome as unknown as ToolOutcome, a.toolCallId), call, Math.round(latencyMs));
  }

  /** A replayed `paused` outcome answers with the approval's final outcome once it has one. */
  private async currentAnswer(replayed: ToolOutcome, call: ToolCall, latencyMs: number): Promise<ToolOutcome> {
    const approvalId = replayed.metadata?.approvalId;
    if (replayed.status === 'paused' && typeof approvalId === 'string') {
      const a = await this.store.getApproval(approvalId);
      if (a?.outcome) return this.settledAs(a, call, latencyMs);
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

/** One call on its way through the pipeline: made once when it is decided, read by every step after. */
interface Run<R extends Executed> {
  input: GovernedCall;
  /** The call as the contracts name it, with the decision's copy of the chain. */
  call: ToolCall;
  decision: PolicyDecision;
  /** The mode the tool needs for this call. */
  needed: ApprovalMode;
  startedAt: number;
  t0: number;
  execute: ExecuteStep<R>;
  hooks: RunHooks<R> | undefined;
}

/** The facts a policy decides on, from the call (built by assignment: conditional spreads are V8's slow path, and this runs per call). */
function resolveInputOf(input: GovernedCall, now: number): ResolveApprovalInput {
  const facts: ResolveApprovalInput = {
    tool: input.tool,
    ceiling: input.ceiling,
    requested: input.requestedMode ?? input.ceiling,
    principalChain: input.principalChain,
    args: input.args,
    evidenceRefs: input.evidenceRefs ?? NONE,
    idempotencyKey: input.idempotencyKey ?? null,
    authRef: input.authRef ?? null,
    riskTags: input.riskTags ?? NONE,
    now,
  };
  if (input.verifiedPrincipals !== undefined) facts.verifiedPrincipals = input.verifiedPrincipals;
  if (input.metadata !== undefined) facts.metadata = input.metadata;
  if (input.sessionId !== undefined) facts.sessionId = input.sessionId;
  if (input.identity !== undefined) facts.identity = input.identity;
  if (input.toolAnnotations !== undefined) facts.toolAnnotations = input.toolAnnotations;
  return facts;
}

/** The call as the contracts name it, under its decision. */
function toolCallOf(input: GovernedCall, decision: PolicyDecision): ToolCall {
  const requested: unknown = input.requestedMode ?? input.ceiling;
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
    evidenceRefs: [...(input.evidenceRefs ?? NONE)],
  };
  if (input.sessionId !== undefined) call.sessionId = input.sessionId;
  if (input.idempotencyKey !== undefined) call.idempotencyKey = input.idempotencyKey;
  if (input.authRef !== undefined) call.authRef = input.authRef;
  if (input.metadata !== undefined) call.metadata = input.metadata;
  return call;
}

/** An executor's outcome as the execute step's value. */
function executedOf(outcome: ToolOutcome): Executed {
  return { outcome };
}
