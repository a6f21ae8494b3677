/**
 * The governed invoker: approval policy, idempotency and the audit log, composed over a runtime.
 *
 * One call: resolve the policy decision → `blocked` (denied, above the ceiling, or the tool needs
 * more than the effective mode) or `paused` (a persisted approval request) without running the
 * handler → otherwise idempotency (at most once per key) → invoke → audit record. Approving a
 * paused call runs the tool once (`completed`/`failed`); rejecting it or letting it expire gives
 * `rejected`. A call that executes is recorded as `started` first; its outcome completes that
 * record. By default a call answers only once its records are committed (group commit across
 * concurrent calls); `audit: { commit: 'background' }` answers once they are queued. A full queue
 * slows callers down (back-pressure) rather than growing without bound.
 */
import { randomUUID } from 'node:crypto';
import { decodeContextosCall, encodeContextosCall, encodeContextosResult } from '../core/contextos.js';
import { ToolEnvelopeError } from '../core/errors.js';
import { type JsonObject, isJsonObject } from '../core/json.js';
import { toJsonSafe } from '../core/json-safe.js';
import { type Principal, type ToolCall, type ToolOutcome, type ToolError, toolError } from '../core/model.js';
import { type ApprovalMode, compareApprovalModes, isApprovalMode, isSuccessStatus } from '../core/taxonomy.js';
import { AuditWriter, type AuditWriterOptions } from '../store/audit-writer.js';
import { freezeAuditRecord, newAuditId, startedAuditRecord } from '../store/shared.js';
import type { ApprovalFilter, ApprovalRequest, AuditRecord, Store } from '../store/types.js';
import type { ToolDefinition } from './define.js';
import { IdempotencyGuard, type IdempotencyOptions, markReplay } from './idempotency.js';
import { newToolCallId, newTraceId } from './ids.js';
import type { InvokeOptions } from './invoke.js';
import { type Policy, type PolicyDecision, defaultPolicy, mayExecute, resolveApproval } from './policy.js';
import type { Runtime } from './runtime.js';

/**
 * Options of {@link createGovernedRuntime}.
 *
 * @example
 * ```ts
 * const o: GovernedRuntimeOptions = { runtime, store, policy: await loadPolicyFile('policy.yaml'), approvalTtlMs: 3_600_000 };
 * ```
 */
export interface GovernedRuntimeOptions {
  runtime: Runtime;
  store: Store;
  /** Default: {@link defaultPolicy} (the ContextOS per-mode defaults). */
  policy?: Policy;
  /** Principal chain of calls that do not give one. */
  principalChain?: Principal[];
  /** Calls whose effective mode is at least this need an idempotency key (default `local_write`; `false`: never). */
  requireIdempotencyKeyFrom?: ApprovalMode | false;
  /** The mode a tool needs for one call (default: its declared ceiling). */
  requiredMode?: (tool: ToolDefinition, args: JsonObject) => ApprovalMode;
  /** How long an approval request stays open (default 24 h; `null`: never expires). */
  approvalTtlMs?: number | null;
  idempotency?: IdempotencyOptions;
  /** Options of the audit writer created for the store, or `false` for no audit log. */
  audit?: AuditWriterOptions | false;
}

/**
 * Per-call options: the runtime's, plus the ContextOS governance fields.
 *
 * @example
 * ```ts
 * await governed.invoke('fs.write', { path: 'a.txt', text: 'hi' }, { idempotencyKey: 'w-1', principalChain: [{ kind: 'user', id: 'u1' }] });
 * ```
 */
export interface GovernedInvokeOptions extends InvokeOptions {
  principalChain?: Principal[];
  /** The mode the call asks for (default: the tool's ceiling). */
  requestedMode?: ApprovalMode;
  idempotencyKey?: string | null;
  evidenceRefs?: string[];
  authRef?: string | null;
  metadata?: JsonObject;
}

/**
 * A governed runtime.
 *
 * @example
 * ```ts
 * const governed = createGovernedRuntime({ runtime, store });
 * const paused = await governed.invoke('repo.delete', { name: 'x' });
 * const final = await governed.approve(paused.metadata!.approvalId as string, { approver: 'alice' });
 * ```
 */
export interface GovernedRuntime {
  readonly runtime: Runtime;
  readonly store: Store;
  /** Invokes a tool under policy, idempotency and audit. Rejects only for library misuse (unknown tool, ...). */
  invoke(name: string, args?: unknown, options?: GovernedInvokeOptions): Promise<ToolOutcome>;
  /** Approves a paused call and runs it once: `completed` or `failed` (or `rejected` when it had expired). */
  approve(approvalId: string, decision: { approver: string; reason?: string }): Promise<ToolOutcome>;
  /** Rejects a paused call: `rejected`. */
  reject(approvalId: string, decision: { approver: string; reason?: string }): Promise<ToolOutcome>;
  /**
   * Runs a request that was approved elsewhere (e.g. `tool-envelope audit approvals approve` moved it
   * to `approved`) and settles it `completed`/`failed`. Exactly once across processes: the run is
   * claimed in the store first; resolves `undefined` when another process holds the claim, the
   * request is not `approved`, or its tool is not registered here.
   */
  runApproved(approvalId: string): Promise<ToolOutcome | undefined>;
  /**
   * Polls the store for requests approved elsewhere whose tool is registered here, and runs each once
   * (see {@link GovernedRuntime.runApproved}). Returns the function that stops polling.
   */
  watchApprovals(options?: { intervalMs?: number; onError?: (err: unknown) => void }): () => Promise<void>;
  /** Rejects every pending request whose time ran out; returns how many. */
  expireApprovals(now?: number): Promise<number>;
  /** Approval requests (default: pending ones), newest first. */
  approvals(filter?: ApprovalFilter): Promise<ApprovalRequest[]>;
  /** Resolves when every audit record so far is durably written. */
  flush(): Promise<void>;
  /** Flushes and stops the audit writer. The store stays open (it is the caller's). */
  close(): Promise<void>;
}

/** A JSON copy: what the store will hold and give back. */
function jsonCopy<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

function argsAsJson(args: unknown): JsonObject {
  if (!isJsonObject(args)) return {};
  try {
    const { value } = toJsonSafe(args);
    return isJsonObject(value) ? value : {};
  } catch {
    // Circular or too deep: the runtime reports it when it validates the arguments.
    return {};
  }
}

function elevation(code: string, detail: string, details?: JsonObject): ToolError {
  return toolError('elevation', code, detail, details ? { details } : undefined);
}

function decisionJson(d: PolicyDecision): JsonObject {
  return jsonCopy(d) as unknown as JsonObject;
}

/**
 * Creates a governed runtime over a runtime and a store.
 *
 * @example
 * ```ts
 * import { createRuntime, createGovernedRuntime, defineTool } from 'tool-envelope/runtime';
 * import { openSqliteStore } from 'tool-envelope/store/sqlite';
 * const store = await openSqliteStore({ path: './tool-envelope.db' });
 * const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [writeFile] }), store });
 * await governed.invoke('fs.write', { path: 'a.txt' }, { idempotencyKey: 'job-7:a.txt' });
 * ```
 */
export function createGovernedRuntime(options: GovernedRuntimeOptions): GovernedRuntime {
  const { runtime, store } = options;
  if (!runtime || typeof runtime.invoke !== 'function' || !store) {
    throw new ToolEnvelopeError('invalid-option', 'createGovernedRuntime needs a runtime and a store');
  }
  const policy = options.policy ?? defaultPolicy;
  const keyFrom = options.requireIdempotencyKeyFrom ?? 'local_write';
  if (keyFrom !== false && !isApprovalMode(keyFrom)) throw new ToolEnvelopeError('invalid-option', `requireIdempotencyKeyFrom: unknown mode ${String(keyFrom)}`);
  const ttl = options.approvalTtlMs === undefined ? 86_400_000 : options.approvalTtlMs;
  const requiredMode = options.requiredMode ?? ((tool: ToolDefinition) => tool.approvalMode);
  const guard = new IdempotencyGuard(store, options.idempotency);
  const writer = options.audit === false ? undefined : new AuditWriter(store, options.audit);

  function toolOf(name: string): ToolDefinition {
    const def = runtime.get(name);
    if (def === undefined) throw new ToolEnvelopeError('unknown-tool', `no tool named ${JSON.stringify(name)} is registered`);
    return def;
  }

  async function audit(
    def: ToolDefinition,
    call: ToolCall,
    outcome: ToolOutcome,
    decision: PolicyDecision | JsonObject | null,
    startedAt: number,
    extra: { replay?: boolean; approvalId?: string | null; auditId?: string | undefined } = {},
  ): Promise<void> {
    if (!writer) return;
    const endedAt = Date.now();
    const record: AuditRecord = {
      // The started record's id when the call executed: this record completes it.
      id: extra.auditId ?? newAuditId(),
      tool: def.name,
      status: outcome.status,
      category: outcome.error ? outcome.error.category : null,
      errorCode: outcome.error?.code ?? null,
      toolCallId: call.toolCallId,
      runId: call.runId,
      traceId: call.traceId,
      sessionId: typeof outcome.sessionId === 'string' ? outcome.sessionId : (call.sessionId ?? null),
      startedAt,
      endedAt,
      latencyMs: outcome.latencyMs ?? endedAt - startedAt,
      callEnvelope: encodeContextosCall(call) as unknown as JsonObject,
      resultEnvelope: encodeContextosResult(outcome) as unknown as JsonObject,
      outcome: outcome as unknown as JsonObject,
      principalChain: call.principalChain,
      policyDecision: decision as AuditRecord['policyDecision'],
      idempotencyKey: call.idempotencyKey ?? null,
      replay: extra.replay === true,
      approvalId: extra.approvalId ?? null,
    };
    // Serialised now, once: the caller may change the outcome it got back without changing the log.
    await log(() => freezeAuditRecord(record));
  }

  /** Logs a record (per the writer's commit mode); the call goes on whatever happens to it. */
  async function log(make: () => AuditRecord): Promise<void> {
    let record: AuditRecord | undefined;
    try {
      record = make();
      await writer!.log(record);
    } catch (e) {
      // The call's outcome stands even when its record cannot be logged; the failure is reported, not thrown.
      if (options.audit && options.audit.onError && record) options.audit.onError(e, record);
      else process.emitWarning(`tool-envelope: audit record ${record?.id ?? ''} was not written: ${(e as Error)?.message ?? String(e)}`, 'ToolEnvelopeWarning');
    }
  }

  /** Records a call as started before it executes; returns the id its outcome's record completes. */
  async function begin(def: ToolDefinition, call: ToolCall, decision: PolicyDecision | JsonObject | null, startedAt: number, approvalId: string | null = null): Promise<string | undefined> {
    if (!writer) return undefined;
    const id = newAuditId();
    await log(() =>
      startedAuditRecord({
        id,
        tool: def.name,
        toolCallId: call.toolCallId,
        runId: call.runId,
        traceId: call.traceId,
        sessionId: call.sessionId ?? null,
        startedAt,
        callEnvelope: encodeContextosCall(call) as unknown as JsonObject,
        principalChain: call.principalChain,
        policyDecision: decision as AuditRecord['policyDecision'],
        idempotencyKey: call.idempotencyKey ?? null,
        approvalId,
      }),
    );
    return id;
  }

  /** A synthesized outcome (the handler did not run), with the call's ids and the decision id. */
  function synth(def: ToolDefinition, call: ToolCall, o: GovernedInvokeOptions | undefined, init: Omit<Parameters<Runtime['outcome']>[1], 'call' | 'ids'>): ToolOutcome {
    return runtime.outcome(def.name, {
      ...init,
      call,
      ids: { toolCallId: call.toolCallId, runId: call.runId, traceId: call.traceId, ...(call.sessionId !== undefined && { sessionId: call.sessionId }), policyDecisionId: call.policyDecisionId ?? null },
      ...(o?.session && { session: o.session }),
    });
  }

  /** Runs the tool for an allowed (or approved) call. */
  async function execute(def: ToolDefinition, call: ToolCall, o: GovernedInvokeOptions | undefined, args: unknown = call.args): Promise<ToolOutcome> {
    const { principalChain: _p, requestedMode: _r, idempotencyKey: _k, evidenceRefs: _e, authRef: _a, metadata: _m, ...invokeOptions } = o ?? {};
    return runtime.invoke(def.name, args, {
      ...invokeOptions,
      call,
      ids: { toolCallId: call.toolCallId, runId: call.runId, traceId: call.traceId, ...(call.sessionId !== undefined && { sessionId: call.sessionId }), policyDecisionId: call.policyDecisionId ?? null },
    });
  }

  /** The idempotency guard refused to run the call (key reused, still in flight, store down): give that failure this call's ids. */
  function refused(def: ToolDefinition, call: ToolCall, o: GovernedInvokeOptions | undefined, failed: ToolOutcome, latencyMs: number): ToolOutcome {
    return synth(def, call, o, { status: failed.status, error: failed.error ?? null, latencyMs });
  }

  /** The outcome a replay gives to *this* call: the stored result under the new call's ids. */
  function asThisCall(stored: ToolOutcome, call: ToolCall, latencyMs: number): ToolOutcome {
    const o: ToolOutcome = { ...stored, toolCallId: call.toolCallId, runId: call.runId, traceId: call.traceId, policyDecisionId: call.policyDecisionId ?? null, latencyMs };
    if (call.sessionId !== undefined) o.sessionId = call.sessionId;
    return o;
  }

  async function invoke(name: string, args?: unknown, o?: GovernedInvokeOptions): Promise<ToolOutcome> {
    const def = toolOf(name);
    const startedAt = Date.now();
    const t0 = performance.now();
    const given = o?.call;
    const rawArgs = args === undefined ? (given?.args ?? {}) : args;
    // Policy, fingerprint and envelope see the JSON form of the arguments; the tool gets them as given
    // (so that non-object arguments still fail the runtime's own validation).
    const jsonArgs = argsAsJson(rawArgs);
    const requested: unknown = o?.requestedMode ?? given?.approvalModeRequested ?? def.approvalMode;
    const principalChain = o?.principalChain ?? given?.principalChain ?? options.principalChain ?? [];
    const idempotencyKey = o?.idempotencyKey !== undefined ? o.idempotencyKey : given?.idempotencyKey;
    const evidenceRefs = o?.evidenceRefs ?? given?.evidenceRefs ?? [];
    const authRef = o?.authRef !== undefined ? o.authRef : given?.authRef;
    const metadata = o?.metadata ?? given?.metadata;

    const decision = await resolveApproval({
      tool: def.name,
      ceiling: def.approvalMode,
      requested,
      principalChain,
      args: jsonArgs,
      evidenceRefs,
      idempotencyKey: idempotencyKey ?? null,
      authRef: authRef ?? null,
      riskTags: def.riskTags,
      ...(metadata !== undefined && { metadata }),
      policy,
      now: startedAt,
    });

    const sessionId = o?.session?.id ?? given?.sessionId;
    const call: ToolCall = {
      toolCallId: o?.ids?.toolCallId ?? given?.toolCallId ?? newToolCallId(),
      runId: o?.ids?.runId ?? given?.runId ?? runtime.runId,
      traceId: o?.ids?.traceId ?? given?.traceId ?? newTraceId(),
      ...(sessionId !== undefined && { sessionId }),
      capabilityId: def.name,
      args: jsonArgs,
      principalChain: principalChain.map((p) => ({ ...p })),
      // An unknown requested mode cannot go on the wire; it is kept in the decision's reason instead.
      approvalModeRequested: isApprovalMode(requested) ? requested : 'read_only',
      // Nothing is granted to a denied call: its effective mode is recorded as the lowest.
      approvalModeEffective: decision.effectiveMode ?? 'read_only',
      approvalModeHighest: def.approvalMode,
      policyDecisionId: decision.id,
      evidenceRefs: [...evidenceRefs],
      ...(idempotencyKey !== undefined && { idempotencyKey }),
      ...(authRef !== undefined && { authRef }),
      ...(metadata !== undefined && { metadata }),
    };
    const elapsed = (): number => performance.now() - t0;

    const needed = requiredMode(def, jsonArgs);
    if (decision.effect === 'deny' || (decision.effect === 'allow' && !mayExecute(decision, needed))) {
      const reason =
        decision.effect === 'deny'
          ? decision.reason
          : `the tool needs ${needed} for this call but the effective mode is ${decision.effectiveMode ?? 'none'}`;
      const outcome = synth(def, call, o, {
        status: 'blocked',
        error: elevation('policy-denied', `Blocked by policy: ${reason}`, { policyDecisionId: decision.id, ...(decision.rule !== undefined && { rule: decision.rule }) }),
        latencyMs: elapsed(),
      });
      await audit(def, call, outcome, decision, startedAt);
      return outcome;
    }

    if (decision.effect === 'require-approval') {
      const pause = async (): Promise<ToolOutcome> => {
        const approvalId = `apr_${randomUUID()}`;
        const outcome = synth(def, call, o, {
          status: 'paused',
          error: elevation('approval-required', `Waiting for an approver (${approvalId}): ${decision.reason}`, { approvalId }),
          metadata: { approvalId },
          latencyMs: elapsed(),
        });
        await store.createApproval({
          id: approvalId,
          state: 'pending',
          tool: def.name,
          toolCallId: call.toolCallId,
          runId: call.runId,
          sessionId: call.sessionId ?? null,
          callEnvelope: encodeContextosCall(call) as unknown as JsonObject,
          principalChain: call.principalChain,
          policyDecision: decisionJson(decision) as unknown as ApprovalRequest['policyDecision'],
          reason: decision.reason,
          createdAt: startedAt,
          expiresAt: ttl === null ? null : startedAt + ttl,
          decidedAt: null,
          decidedBy: null,
          decisionReason: null,
          outcome: null,
        });
        return outcome;
      };
      let outcome: ToolOutcome;
      let replay = false;
      if (idempotencyKey) {
        // The same key asks for the same approval: a repeat gets the request's current answer, not a second request.
        const r = await guard.run({ key: idempotencyKey, tool: def.name, args: jsonArgs, toolCallId: call.toolCallId }, pause);
        replay = r.replay;
        outcome = r.replay ? await currentAnswer(r.outcome, call, elapsed()) : r.executed ? r.outcome : refused(def, call, o, r.outcome, elapsed());
      } else {
        outcome = await pause();
      }
      const approvalId = outcome.metadata?.approvalId;
      await audit(def, call, outcome, decision, startedAt, { replay, approvalId: typeof approvalId === 'string' ? approvalId : null });
      return outcome;
    }

    // Allowed.
    if (keyFrom !== false && !idempotencyKey && compareApprovalModes(decision.effectiveMode as ApprovalMode, keyFrom) >= 0) {
      const outcome = synth(def, call, o, {
        status: 'error',
        error: toolError(
          'invalid-argument',
          'idempotency-key-required',
          `Calls at ${decision.effectiveMode} need an idempotency key, so that a retry cannot repeat the side effect.`,
        ),
        latencyMs: elapsed(),
      });
      await audit(def, call, outcome, decision, startedAt);
      return outcome;
    }
    if (!idempotencyKey) {
      const auditId = await begin(def, call, decision, startedAt);
      const outcome = await execute(def, call, o, rawArgs);
      await audit(def, call, outcome, decision, startedAt, { auditId });
      return outcome;
    }
    let auditId: string | undefined;
    const r = await guard.run({ key: idempotencyKey, tool: def.name, args: jsonArgs, toolCallId: call.toolCallId }, async () => {
      auditId = await begin(def, call, decision, startedAt);
      return execute(def, call, o, rawArgs);
    });
    let outcome = r.outcome;
    if (r.replay) outcome = asThisCall(outcome, call, Math.round(elapsed()));
    else if (!r.executed) outcome = refused(def, call, o, outcome, elapsed());
    await audit(def, call, outcome, decision, startedAt, { replay: r.replay, auditId });
    return outcome;
  }

  /** A replayed `paused` outcome answers with the approval's final outcome once it has one. */
  async function currentAnswer(replayed: ToolOutcome, call: ToolCall, latencyMs: number): Promise<ToolOutcome> {
    const approvalId = replayed.metadata?.approvalId;
    if (replayed.status === 'paused' && typeof approvalId === 'string') {
      const a = await store.getApproval(approvalId);
      if (a?.outcome) return asThisCall(markReplay(a.outcome as unknown as ToolOutcome, a.toolCallId), call, Math.round(latencyMs));
    }
    return asThisCall(replayed, call, Math.round(latencyMs));
  }

  async function pendingRequest(approvalId: string): Promise<ApprovalRequest> {
    if (typeof approvalId !== 'string' || approvalId === '') throw new ToolEnvelopeError('invalid-option', 'approvalId must be a non-empty string');
    const a = await store.getApproval(approvalId);
    if (!a) throw new ToolEnvelopeError('unknown-approval', `no approval request ${JSON.stringify(approvalId)}`);
    if (a.state !== 'pending') throw new ToolEnvelopeError('approval-not-pending', `approval request ${approvalId} is ${a.state}, not pending`);
    return a;
  }

  function checkApprover(decision: { approver: string; reason?: string } | undefined): void {
    if (!decision || typeof decision.approver !== 'string' || decision.approver === '') {
      throw new ToolEnvelopeError('invalid-option', 'an approver (non-empty string) is required');
    }
    if (decision.reason !== undefined && typeof decision.reason !== 'string') throw new ToolEnvelopeError('invalid-option', 'reason must be a string');
  }

  /** Settles a pending request as rejected (`rejected` or `expired`) with a `rejected` outcome. */
  async function settleRejected(a: ApprovalRequest, state: 'rejected' | 'expired', by: string | null, reason: string | null, now: number): Promise<ToolOutcome> {
    const def = toolOf(a.tool);
    const call = decodeContextosCall(a.callEnvelope);
    const detail =
      state === 'expired'
        ? `The approval request ${a.id} expired before anyone approved it.`
        : `Rejected by ${by ?? 'an approver'}${reason ? `: ${reason}` : '.'}`;
    const outcome = synth(def, call, undefined, {
      status: 'rejected',
      error: elevation(state === 'expired' ? 'approval-expired' : 'approval-rejected', detail, { approvalId: a.id }),
      metadata: { approvalId: a.id, ...(by !== null && { decidedBy: by }) },
    });
    const done = await store.transitionApproval(a.id, 'pending', state, { at: now, by, reason, outcome: jsonCopy(outcome) as unknown as JsonObject });
    if (!done) throw new ToolEnvelopeError('approval-not-pending', `approval request ${a.id} was decided by someone else`);
    await audit(def, call, outcome, a.policyDecision as JsonObject | null, now, { approvalId: a.id });
    return outcome;
  }

  async function approve(approvalId: string, decision: { approver: string; reason?: string }): Promise<ToolOutcome> {
    checkApprover(decision);
    const a = await pendingRequest(approvalId);
    const now = Date.now();
    if (a.expiresAt !== null && a.expiresAt <= now) return settleRejected(a, 'expired', null, null, now);
    const def = toolOf(a.tool);
    // The conditional update is the gate: among concurrent approvers (any process), one wins and runs the tool.
    const won = await store.transitionApproval(a.id, 'pending', 'approved', { at: now, by: decision.approver, reason: decision.reason ?? null });
    if (!won) throw new ToolEnvelopeError('approval-not-pending', `approval request ${a.id} was decided by someone else`);
    const outcome = await runClaimed(def, won);
    if (!outcome) throw new ToolEnvelopeError('approval-not-pending', `approval request ${a.id} is being run by another process`);
    return outcome;
  }

  /**
   * Runs an `approved` request once. The approval worker of another process may see the same
   * `approved` row, so the run itself is claimed (an idempotency record keyed by the approval id):
   * only the claimant executes. A claimant that dies mid-run leaves the request `approved` and the
   * claim pending: the call is never run twice.
   */
  async function runClaimed(def: ToolDefinition, a: ApprovalRequest): Promise<ToolOutcome | undefined> {
    const key = `tool-envelope/approval-run:${a.id}`;
    const claimToken = randomUUID();
    const claim = await store.claimIdempotency({ key, fingerprint: a.id, tool: def.name, toolCallId: a.toolCallId, claimToken, createdAt: Date.now() });
    if (!claim.claimed) return undefined;
    const startedAt = Date.now();
    const call = decodeContextosCall(a.callEnvelope);
    const auditId = await begin(def, call, a.policyDecision as JsonObject | null, startedAt, a.id);
    const ran = await execute(def, call, undefined);
    const approver = a.decidedBy ?? 'unknown';
    const outcome: ToolOutcome = {
      ...ran,
      status: isSuccessStatus(ran.status) ? 'completed' : 'failed',
      metadata: { ...ran.metadata, approvalId: a.id, approvedBy: approver },
    };
    const json = jsonCopy(outcome) as unknown as JsonObject;
    await store.transitionApproval(a.id, 'approved', outcome.status === 'completed' ? 'completed' : 'failed', { at: Date.now(), outcome: json });
    await store.completeIdempotency(key, claimToken, json, Date.now());
    await audit(def, call, outcome, a.policyDecision as JsonObject | null, startedAt, { approvalId: a.id, auditId });
    return outcome;
  }

  async function runApproved(approvalId: string): Promise<ToolOutcome | undefined> {
    const a = await store.getApproval(approvalId);
    if (!a || a.state !== 'approved') return undefined;
    const def = runtime.get(a.tool);
    if (def === undefined) return undefined;
    return runClaimed(def, a);
  }

  function watchApprovals(watch: { intervalMs?: number; onError?: (err: unknown) => void } = {}): () => Promise<void> {
    const intervalMs = watch.intervalMs ?? 500;
    if (!(intervalMs > 0)) throw new ToolEnvelopeError('invalid-option', 'intervalMs must be a positive number');
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    let tick: Promise<void> = Promise.resolve();
    const poll = async (): Promise<void> => {
      let cursor: string | null = null;
      do {
        const page: Awaited<ReturnType<Store['listApprovals']>> = await store.listApprovals({ state: 'approved', limit: 100, cursor });
        for (const a of page.approvals) {
          if (stopped) return;
          if (runtime.get(a.tool) !== undefined) await runApproved(a.id);
        }
        cursor = page.nextCursor;
      } while (cursor && !stopped);
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

  async function reject(approvalId: string, decision: { approver: string; reason?: string }): Promise<ToolOutcome> {
    checkApprover(decision);
    const a = await pendingRequest(approvalId);
    return settleRejected(a, 'rejected', decision.approver, decision.reason ?? null, Date.now());
  }

  async function expireApprovals(now = Date.now()): Promise<number> {
    let n = 0;
    let cursor: string | null = null;
    const due: ApprovalRequest[] = [];
    do {
      const page: Awaited<ReturnType<Store['listApprovals']>> = await store.listApprovals({ state: 'pending', limit: 500, cursor });
      due.push(...page.approvals.filter((a) => a.expiresAt !== null && a.expiresAt <= now));
      cursor = page.nextCursor;
    } while (cursor);
    for (const a of due) {
      try {
        await settleRejected(a, 'expired', null, null, now);
        n++;
      } catch (e) {
        // Decided meanwhile by someone else: not ours to expire.
        if (!(e instanceof ToolEnvelopeError && e.code === 'approval-not-pending')) throw e;
      }
    }
    return n;
  }

  return {
    runtime,
    store,
    invoke,
    approve,
    reject,
    runApproved,
    watchApprovals,
    expireApprovals,
    approvals: async (filter = { state: 'pending' }) => (await store.listApprovals(filter)).approvals,
    flush: async () => writer?.flush(),
    close: async () => writer?.close(),
  };
}
