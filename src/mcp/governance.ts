/**
 * Governance of gateway calls: the runtime's approval policy, idempotency, approval gate and audit
 * log (`createGovernedRuntime` of `tool-envelope/runtime`), applied to the tools of the upstreams.
 *
 * Each gateway tool is registered in a private runtime as a proxy whose ceiling is the tool's
 * resolved approval mode and whose handler forwards the call to the upstream. A client's call goes
 * through the governed invoker: `blocked` and `paused` calls never reach the upstream; a repeated
 * idempotency key answers with the stored outcome, marked as a replay. A paused call waits in the
 * store until an operator approves it (`tool-envelope audit approvals approve ID --approver NAME`);
 * the gateway, which owns the upstream connection, watches for approved requests and runs each one
 * exactly once (`GovernedRuntime.watchApprovals`), recording its `completed`/`failed` envelope.
 */
import { createHash } from 'node:crypto';
import { ToolFailure } from '../core/classify.js';
import { ToolEnvelopeError } from '../core/errors.js';
import { isJsonObject, type JsonObject } from '../core/json.js';
import { isOk, toolError, type Principal, type ToolCall, type ToolOutcome } from '../core/model.js';
import type { ApprovalMode } from '../core/taxonomy.js';
import { createGovernedRuntime, type GovernedRuntime } from '../runtime/governed.js';
import { defineTool } from '../runtime/define.js';
import type { ToolContext } from '../runtime/context.js';
import type { IdempotencyOptions } from '../runtime/idempotency.js';
import type { Policy } from '../runtime/policy.js';
import { createRuntime, type Runtime } from '../runtime/runtime.js';
import type { AuditWriterOptions } from '../store/audit-writer.js';
import type { Store } from '../store/types.js';
import type { GatewayCall } from './gateway.js';

/**
 * Options of {@link GatewayGovernance}.
 *
 * @example
 * ```ts
 * const o: GatewayGovernanceOptions = { store, policy: await loadPolicyFile('policy.yaml'), requireIdempotencyKeyFrom: 'local_write' };
 * ```
 */
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
  /** Principal chain of calls whose `_meta` gives none; default: the connected client as an `agent`. */
  principalChain?: Principal[];
  idempotency?: IdempotencyOptions;
  /** Options of the audit writer, or `false` for no audit log. */
  audit?: AuditWriterOptions | false;
  /** Errors of the approval worker (a store that went away, ...). */
  onError?: (err: unknown) => void;
}

/**
 * What the governance needs from the gateway: a way to call a tool when no client is waiting
 * (a call approved after its client got the `paused` answer).
 *
 * @example
 * ```ts
 * const executor: GatewayExecutor = { callDetached: (tool, args) => gateway.callDetached(tool, args) };
 * ```
 */
export interface GatewayExecutor {
  callDetached(tool: string, args: JsonObject, options?: { traceparent?: string }): Promise<ToolOutcome>;
}

const RUNTIME_NAME = /^[A-Za-z0-9_.\-/]{1,128}$/;

/**
 * The name a gateway tool is registered under in the governance runtime: the tool name itself when
 * the runtime accepts it, otherwise a readable, collision-free substitute.
 */
function runtimeName(tool: string): string {
  if (RUNTIME_NAME.test(tool)) return tool;
  const hash = createHash('sha256').update(tool).digest('hex').slice(0, 12);
  return `${tool.replace(/[^A-Za-z0-9_.\-/]/g, '_').slice(0, 100)}~${hash}`;
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
  /** The governed invoker over the proxy tools. */
  readonly governed: GovernedRuntime;
  private readonly runtime: Runtime;
  private readonly options: GatewayGovernanceOptions;
  /** Runs of calls whose client is waiting, by tool call id: the proxy handler runs these. */
  private readonly live = new Map<string, () => Promise<ToolOutcome>>();
  /** Gateway tool name → [runtime name, registered mode]. */
  private readonly registered = new Map<string, [string, ApprovalMode]>();
  /** Runtime name → gateway tool name. */
  private readonly gatewayNames = new Map<string, string>();
  private executor: GatewayExecutor | undefined;
  private stopWatching: (() => Promise<void>) | undefined;
  private closed = false;

  constructor(options: GatewayGovernanceOptions) {
    if (!options || !options.store) throw new ToolEnvelopeError('invalid-option', 'GatewayGovernance needs a store');
    const poll = options.approvalPollMs ?? 500;
    if (typeof poll !== 'number' || !(poll >= 0)) throw new ToolEnvelopeError('invalid-option', 'approvalPollMs must be a non-negative number');
    this.options = options;
    // The gateway enforces its own deadline on the upstream call; the proxy adds none.
    this.runtime = createRuntime({ defaultTimeoutMs: 0 });
    this.governed = createGovernedRuntime({
      runtime: this.runtime,
      store: options.store,
      requireIdempotencyKeyFrom: options.requireIdempotencyKeyFrom ?? false,
      ...(options.policy !== undefined && { policy: options.policy }),
      ...(options.approvalTtlMs !== undefined && { approvalTtlMs: options.approvalTtlMs }),
      ...(options.principalChain !== undefined && { principalChain: options.principalChain }),
      ...(options.idempotency !== undefined && { idempotency: options.idempotency }),
      ...(options.audit !== undefined && { audit: options.audit }),
    });
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
      this.stopWatching = this.governed.watchApprovals({
        intervalMs: poll,
        onError: (err) => this.options.onError?.(err),
      });
    }
  }

  /**
   * Registers the gateway's tools (name and resolved mode) as proxies; a tool whose mode changed is
   * re-registered, a tool that disappeared is removed. Called by the gateway after each `tools/list`.
   */
  sync(tools: Iterable<{ name: string; mode: ApprovalMode }>): void {
    const seen = new Set<string>();
    for (const { name, mode } of tools) {
      seen.add(name);
      this.ensure(name, mode);
    }
    for (const [name, [rtName]] of this.registered) {
      if (seen.has(name)) continue;
      this.runtime.registry.unregister(rtName);
      this.registered.delete(name);
      this.gatewayNames.delete(rtName);
    }
  }

  private ensure(name: string, mode: ApprovalMode): string {
    const have = this.registered.get(name);
    if (have && have[1] === mode) return have[0];
    const rtName = have?.[0] ?? runtimeName(name);
    if (have) this.runtime.registry.unregister(rtName);
    this.runtime.register(
      defineTool({
        name: rtName,
        description: `Proxy of the gateway tool ${name}`,
        approvalMode: mode,
        handler: (args: Record<string, unknown>, ctx: ToolContext) => this.proxy(name, args, ctx),
      }),
    );
    this.registered.set(name, [rtName, mode]);
    this.gatewayNames.set(rtName, name);
    return rtName;
  }

  /** The proxy tool's handler: the waiting client's run, or a detached upstream call for an approved request. */
  private async proxy(name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<unknown> {
    const run = this.live.get(ctx.toolCallId);
    let outcome: ToolOutcome;
    if (run) outcome = await run();
    else if (this.executor) {
      const traceparent = ctx.call?.metadata?.traceparent;
      outcome = await this.executor.callDetached(name, args as JsonObject, typeof traceparent === 'string' ? { traceparent } : {});
    } else {
      outcome = { status: 'error', error: toolError('internal', 'gateway-not-attached', 'The governance is not attached to a gateway.') };
    }
    // The audit log gets the upstream's outcome as closely as a handler can express it.
    for (const w of outcome.warnings ?? []) ctx.warn(w.code, w.detail);
    for (const a of outcome.artifacts ?? []) ctx.artifact(a);
    for (const m of outcome.mutations ?? []) ctx.mutation(m);
    for (const c of outcome.citations ?? []) ctx.cite(c);
    if (isOk(outcome)) return outcome.result ?? null;
    const { categoryInferred: _i, code, detail, ...error } = outcome.error ?? toolError('internal', 'tool-error', `The call ended with status ${outcome.status}.`);
    throw new ToolFailure({ ...error, code: code ?? 'tool-error', detail: detail ?? `The call ended with status ${outcome.status}.` });
  }

  /**
   * Runs one gateway call under policy, idempotency, approval and audit. `execute` forwards the
   * call to the upstream; it runs at most once, and only when the call is allowed.
   */
  async run(call: GatewayCall, execute: () => Promise<ToolOutcome>): Promise<ToolOutcome> {
    const rtName = this.ensure(call.tool, call.mode);
    let own: ToolOutcome | undefined;
    this.live.set(call.toolCallId, async () => (own = await execute()));
    const principalChain = call.principalChain ?? this.options.principalChain ?? [{ kind: 'agent', id: call.clientName || 'mcp-client' }];
    const metadata: JsonObject = {
      upstream: call.upstream,
      upstream_tool: call.upstreamTool,
      ...(call.traceparent ? { traceparent: call.traceparent } : {}),
      ...(rtName !== call.tool ? { gateway_tool: call.tool } : {}),
    };
    const given: ToolCall = {
      toolCallId: call.toolCallId,
      runId: call.runId,
      traceId: call.traceId,
      ...(call.sessionId !== undefined && { sessionId: call.sessionId }),
      capabilityId: rtName,
      args: call.args,
      principalChain,
      approvalModeRequested: call.mode,
      approvalModeEffective: call.mode,
      approvalModeHighest: call.mode,
      evidenceRefs: call.evidenceRefs ?? [],
      idempotencyKey: call.idempotencyKey ?? null,
      metadata,
    };
    try {
      const outcome = await this.governed.invoke(rtName, call.args, {
        call: given,
        ...(call.requestedMode !== undefined && { requestedMode: call.requestedMode as ApprovalMode }),
      });
      if (!own) {
        // MCEC and Durable Workflow have no metadata: a replay says so in a warning too.
        if (outcome.metadata?.replay !== true) return outcome;
        const original = outcome.metadata.originalToolCallId;
        const detail = `The stored outcome of call ${typeof original === 'string' ? original : 'made earlier'} with the same idempotency key; the tool did not run again.`;
        return { ...outcome, warnings: [...(outcome.warnings ?? []), { code: 'idempotent-replay', detail }] };
      }
      // The client gets the upstream's own outcome (exact status, content), under the decision that allowed it.
      const answered: ToolOutcome = own;
      const extra = (outcome.warnings ?? []).filter((w) => !(answered.warnings ?? []).some((x) => x.code === w.code && x.detail === w.detail));
      return {
        ...answered,
        policyDecisionId: outcome.policyDecisionId ?? null,
        ...(extra.length > 0 && { warnings: [...(answered.warnings ?? []), ...extra] }),
      };
    } finally {
      this.live.delete(call.toolCallId);
    }
  }

  /** The gateway tool name of a name in the audit log (they differ only for names the runtime refuses). */
  gatewayName(recorded: string): string {
    return this.gatewayNames.get(recorded) ?? recorded;
  }

  /** Resolves when every audit record so far is written. */
  flush(): Promise<void> {
    return this.governed.flush();
  }

  /** Stops the approval worker and flushes the audit log. The store stays open (it is the caller's). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.stopWatching?.();
    await this.governed.close();
  }
}

/**
 * Reads a principal chain from a `_meta` value: a non-empty list of `{kind, id, tenant_id?, display?}`.
 * Returns `undefined` when absent and an error message when malformed.
 *
 * @example
 * ```ts
 * parsePrincipalChain([{ kind: 'user', id: 'u1' }, { kind: 'agent', id: 'claude' }]); // the chain
 * parsePrincipalChain([{ kind: 'robot', id: 'x' }]); // 'principal 0: kind must be user, service, agent or automation'
 * ```
 */
export function parsePrincipalChain(value: unknown): Principal[] | string | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0) return 'must be a non-empty list of principals';
  const chain: Principal[] = [];
  for (const [i, p] of value.entries()) {
    if (!isJsonObject(p)) return `principal ${i}: must be an object`;
    if (!['user', 'service', 'agent', 'automation'].includes(p.kind as string)) return `principal ${i}: kind must be user, service, agent or automation`;
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
