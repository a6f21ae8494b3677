/**
 * Governance of gateway calls: the governance pipeline (`tool-envelope/governance`: policy,
 * identity, idempotency, signed approvals, audit) applied to the tools of the upstreams.
 *
 * A client's call goes straight through the pipeline with the upstream call as its `execute`:
 * `blocked` and `paused` calls never reach the upstream; a repeated idempotency key (scoped to the
 * tenant, the authenticated principal and the tool) answers with the stored outcome, marked as a
 * replay. A paused call waits in the store until an approver signs it (`tool-envelope audit
 * approvals approve ID`); the gateway, which owns the upstream connection, watches for approved
 * requests and runs each one exactly once, recording its `completed`/`failed` envelope.
 */
import {
  ToolEnvelopeError,
  isJsonObject,
  type JsonObject,
  type Principal,
  type ToolOutcome,
  type ApprovalMode,
  isPrincipalKind,
  PRINCIPAL_KINDS,
} from 'tool-envelope/core';
import type { IdempotencyOptions } from '../../governance/idempotency.js';
import { type ExecuteStep, type Executed, type Governed, GovernancePipeline, type GovernanceOptions, type RunHooks } from '../../governance/pipeline.js';
import type { Policy } from '../../governance/policy.js';
import type { AuditWriterOptions } from '../../store/audit-writer.js';
import type { OperatorKey } from '../../store/operator-key.js';
import type { Store } from '../../store/types.js';
import { CONFIRM_INPUT_KEY, ConfirmStates, confirmElicitation } from '../rounds/confirm.js';
import type { ConfirmReply, GatewayCall } from '../call.js';

export interface GatewayGovernanceOptions {
  /** Where approval requests, idempotency records and audit records live. */
  store: Store;
  /** Default: the ContextOS per-mode defaults (`defaultPolicy`). */
  policy?: Policy;
  /** Calls at or above this effective mode need an idempotency key; default `false` (never). */
  requireIdempotencyKeyFrom?: ApprovalMode | false;
  /** How long an approval request stays open; default 24 h, `null`: forever. */
  approvalTtlMs?: number | null;
  /** How often the store is polled for approved requests; default 500 ms, `0`: not at all. */
  approvalPollMs?: number;
  /**
   * The verified principal chain of calls on sessions without authentication (stdio, loopback
   * HTTP): the operator's `--principal`. Default: the OS user running the gateway.
   */
  principalChain?: Principal[];
  idempotency?: IdempotencyOptions;
  /** Options of the audit writer, or `false` for no audit log. */
  audit?: AuditWriterOptions | false;
  /** The key approvals are signed with (default: `loadOperatorKey({ create: true })`). */
  operatorKey?: OperatorKey | (() => Promise<OperatorKey>);
  /** May a principal of a call's own chain approve it? Default `false`. */
  allowSelfApproval?: boolean;
  /** Errors of the approval worker (a store that went away, ...). */
  onError?: (err: unknown) => void;
  /** How long a modern-era client may take to answer a confirmation round; default 10 min (and never past the approval's own expiry). */
  confirmWindowMs?: number;
  /** Told when this gateway opens, decides, expires or runs an approval request (governance/approval-events.ts). */
  onApprovalEvent?: GovernanceOptions['onApprovalEvent'];
  /** How long after its decision an approved request may still run (default 15 min); later it expires. */
  approvalRunWindowMs?: number | null;
  /** How long a paused call is held open for its decision (`--approval-wait`, gateway/approval-wait.ts); default 0: answered `paused` at once. */
  approvalWaitMs?: number;
}

/**
 * What the governance needs from the gateway: a way to call a tool when no client is waiting
 * (a call approved after its client got the `paused` answer).
 */
export interface GatewayExecutor {
  callDetached(tool: string, args: JsonObject, options?: { traceparent?: string; principal?: Principal }): Promise<ToolOutcome>;
}

/**
 * Policy, idempotency, approvals and audit for a {@link Gateway}. Pass it as the gateway's
 * `governance` option; the gateway registers its tools and starts the approval worker.
 *
 * @example
 * ```ts
 * const store = await openStore('./tool-envelope.db');
 * const governance = new GatewayGovernance({ store, policy: await loadPolicyFile('policy.yaml') });
 * const gw = await Gateway.start({ upstreams, governance });
 * ```
 */
export class GatewayGovernance {
  /** The pipeline every call runs through. */
  readonly pipeline: GovernancePipeline;
  readonly options: GatewayGovernanceOptions;
  /** Gateway tool name → resolved mode (the tools an approved request may run here). */
  private readonly tools = new Map<string, ApprovalMode>();
  private executor: GatewayExecutor | undefined;
  /** The states of modern-era confirmation rounds (rounds/confirm.ts). */
  private readonly confirmStates: ConfirmStates;
  private stopWatching: (() => Promise<void>) | undefined;
  private closed = false;

  constructor(options: GatewayGovernanceOptions) {
    if (!options?.store) throw new ToolEnvelopeError('invalid-option', 'GatewayGovernance needs a store');
    const poll = options.approvalPollMs ?? 500;
    if (typeof poll !== 'number' || !(poll >= 0)) throw new ToolEnvelopeError('invalid-option', 'approvalPollMs must be a non-negative number');
    this.options = options;
    this.pipeline = new GovernancePipeline({
      store: options.store,
      requireIdempotencyKeyFrom: options.requireIdempotencyKeyFrom ?? false,
      ...(options.policy !== undefined && { policy: options.policy }),
      ...(options.approvalTtlMs !== undefined && { approvalTtlMs: options.approvalTtlMs }),
      ...(options.idempotency !== undefined && { idempotency: options.idempotency }),
      ...(options.audit !== undefined && { audit: options.audit }),
      ...(options.operatorKey !== undefined && { operatorKey: options.operatorKey }),
      ...(options.allowSelfApproval !== undefined && { allowSelfApproval: options.allowSelfApproval }),
      ...(options.onApprovalEvent !== undefined && { onApprovalEvent: options.onApprovalEvent }),
      ...(options.approvalRunWindowMs !== undefined && { approvalRunWindowMs: options.approvalRunWindowMs }),
      // The upstream's content blocks go to the client; the audit log keeps the envelope's facts.
      auditContent: false,
      executorFor: (tool) => {
        const executor = this.executor;
        if (!executor || !this.tools.has(tool)) return undefined;
        return (call) => {
          const traceparent = call.metadata?.traceparent;
          const principal = call.principalChain[0];
          return executor.callDetached(tool, call.args, { ...(typeof traceparent === 'string' && { traceparent }), ...(principal && { principal }) });
        };
      },
    });
    this.confirmStates = new ConfirmStates(this.pipeline, options.confirmWindowMs);
  }

  /**
   * Connects the governance to the gateway that executes calls, and starts the approval worker.
   * Called by `Gateway.start`.
   */
  attach(executor: GatewayExecutor): void {
    if (this.closed) throw new ToolEnvelopeError('closed', 'the gateway governance is closed');
    if (this.executor && this.executor !== executor) throw new ToolEnvelopeError('invalid-option', 'a GatewayGovernance serves one gateway');
    this.executor = executor;
    const poll = this.options.approvalPollMs ?? 500;
    if (poll > 0 && !this.stopWatching) {
      this.stopWatching = this.pipeline.watchApprovals({ intervalMs: poll, onError: (err) => this.options.onError?.(err) });
    }
  }

  /** Records the gateway's tools (name and resolved mode). Called by the gateway after each `tools/list`. */
  sync(tools: Iterable<{ name: string; mode: ApprovalMode }>): void {
    this.tools.clear();
    for (const { name, mode } of tools) this.tools.set(name, mode);
  }

  /**
   * Runs one gateway call under policy, identity, idempotency, approval and audit. The call is
   * already in the pipeline's shape (`GatewayCall` extends `GovernedCall`): it is handed over as it
   * is. `execute` forwards the call to the upstream; it runs at most once, and only when the call is
   * allowed; its value comes back in `answer`. `hooks` are the pipeline's (a task call completes its
   * audit record at the task's end).
   */
  async run<R extends Executed>(call: GatewayCall, execute: ExecuteStep<R>, hooks?: RunHooks<R>): Promise<Governed<R>> {
    this.tools.set(call.tool, call.ceiling);
    if (call.confirmReply) return { outcome: await this.answerConfirmation(call, call.confirmReply) };
    const governed = await this.pipeline.govern(call, execute, hooks);
    const outcome = governed.outcome;
    if (outcome.status === 'paused') governed.outcome = await this.confirmInClient(call, outcome);
    else if (outcome.metadata?.replay === true) governed.outcome = withReplayWarning(outcome);
    return governed;
  }

  /**
   * Approve from the client: when the policy let the call's verified user approve it and the client
   * supports elicitation, ask it; accept runs the call once (through the signed approval path),
   * decline rejects it, cancel (or no answer) leaves it paused. A modern-era client is asked in an
   * input round (rounds/confirm.ts): its call is answered with the question now, and decided when
   * its retry brings the answer, on whichever replica it reaches.
   */
  private async confirmInClient(call: GatewayCall, paused: ToolOutcome): Promise<ToolOutcome> {
    const approvalId = paused.metadata?.approvalId;
    const head = call.principalChain?.[0];
    if (
      !(call.confirm || call.confirmRound) ||
      typeof approvalId !== 'string' ||
      !head ||
      (call.verifiedPrincipals ?? 0) < 1 ||
      paused.metadata?.replay === true
    )
      return paused;
    const request = await this.pipeline.store.getApproval(approvalId);
    if (request?.state !== 'pending' || request.policyDecision?.selfApproval !== true) return paused;
    const shown = JSON.stringify(call.args);
    const message = `Approve ${call.tool} (${call.ceiling}) with ${shown.length > 500 ? `${shown.slice(0, 500)}…` : shown}? Approval ${approvalId}.`;
    if (call.confirmRound) {
      const state = await this.confirmStates.issue(call.confirmRound.caller, request, call.args);
      call.confirmRound.ask({ [CONFIRM_INPUT_KEY]: { method: 'elicitation/create', params: confirmElicitation(message) } }, state);
      return paused;
    }
    if (!call.confirm) return paused;
    let answer: 'accept' | 'decline' | 'cancel';
    try {
      answer = await call.confirm(message);
    } catch {
      // The client could not answer: the request stays pending for another approver.
      return paused;
    }
    const approver = `${head.kind}:${head.id}`;
    try {
      if (answer === 'accept') return await this.pipeline.approve(approvalId, { approver, reason: 'confirmed in the client' });
      if (answer === 'decline') return await this.pipeline.reject(approvalId, { approver, reason: 'declined in the client' });
    } catch (err) {
      // Decided meanwhile by another approver: the client keeps the paused answer and can retry with its key.
      if (!(err instanceof ToolEnvelopeError)) throw err;
    }
    return paused;
  }

  /** A modern-era client's answer to a confirmation round, from its verified user. */
  private answerConfirmation(call: GatewayCall, reply: ConfirmReply): Promise<ToolOutcome> {
    const head = call.principalChain?.[0];
    if (!head || (call.verifiedPrincipals ?? 0) < 1) throw new ToolEnvelopeError('approval-forbidden', 'a confirmation is answered only by a verified user');
    return this.confirmStates.answer(call, reply, `${head.kind}:${head.id}`);
  }

  /** The gateway tool name of a name in the audit log (the same name: kept for callers of earlier versions). */
  gatewayName(recorded: string): string {
    return recorded;
  }

  /** Resolves when every audit record so far is written. */
  flush(): Promise<void> {
    return this.pipeline.flush();
  }

  /** Stops the approval worker and flushes the audit log. The store stays open (it is the caller's). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.stopWatching?.();
    await this.pipeline.close();
  }
}

/**
 * Reads a principal chain from a `_meta` value: a non-empty list of `{kind, id, tenant_id?, display?}`.
 * Returns `undefined` when absent and an error message when malformed.
 */
export function parsePrincipalChain(value: unknown): Principal[] | string | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0) return 'must be a non-empty list of principals';
  const chain: Principal[] = [];
  for (const [i, p] of value.entries()) {
    if (!isJsonObject(p)) return `principal ${i}: must be an object`;
    if (!isPrincipalKind(p.kind)) return `principal ${i}: kind must be one of ${PRINCIPAL_KINDS.join(', ')}`;
    if (typeof p.id !== 'string' || p.id === '') return `principal ${i}: id must be a non-empty string`;
    if (p.tenant_id !== undefined && typeof p.tenant_id !== 'string') return `principal ${i}: tenant_id must be a string`;
    if (p.display !== undefined && typeof p.display !== 'string') return `principal ${i}: display must be a string`;
    chain.push({
      kind: p.kind as Principal['kind'],
      id: p.id,
      ...(typeof p.tenant_id === 'string' && { tenant_id: p.tenant_id }),
      ...(typeof p.display === 'string' && { display: p.display }),
    });
  }
  return chain;
}

/** MCEC and Durable Workflow have no metadata: a replay says so in a warning too. */
function withReplayWarning(outcome: ToolOutcome): ToolOutcome {
  const original = outcome.metadata?.originalToolCallId;
  const detail = `The stored outcome of call ${typeof original === 'string' ? original : 'made earlier'} with the same idempotency key; the tool did not run again.`;
  return { ...outcome, warnings: [...(outcome.warnings ?? []), { code: 'idempotent-replay', detail }] };
}
