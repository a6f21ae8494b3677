/**
 * The governed invoker: the governance pipeline (policy, identity, idempotency, signed approvals, the
 * audit log) around a runtime's tools; a call's states are in docs/governance.md. A call answers once
 * its records are committed unless `audit: { commit: 'background' }`; a full queue slows callers down
 * rather than growing without bound.
 */
import {
  ToolEnvelopeError,
  type JsonObject,
  isJsonObject,
  isSmallPlainJson,
  toJsonSafe,
  type Principal,
  type ToolCall,
  type ToolError,
  type ToolOutcome,
  type ApprovalMode,
} from 'tool-envelope/core';
import type { IdempotencyOptions } from '../governance/idempotency.js';
import { type GovernanceOptions, type GovernedCall, GovernancePipeline } from '../governance/pipeline.js';
import type { Policy, PolicyIdentity } from '../governance/policy.js';
import type { AuditWriterOptions } from '../store/audit-writer.js';
import type { OperatorKey } from '../store/operator-key.js';
import type { ApprovalFilter, ApprovalRequest, Store } from '../store/types.js';
import type { ToolDefinition } from './define.js';
import { newToolCallId, newTraceId } from './ids.js';
import type { InvokeOptions } from './invoke.js';
import type { Runtime } from './runtime.js';

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
  /** The key approvals are signed with (default: `loadOperatorKey({ create: true })`, on first use). */
  operatorKey?: OperatorKey | (() => Promise<OperatorKey>);
  /** May a principal of a call's own chain approve it? Default `false`. */
  allowSelfApproval?: boolean;
  /** Told when this process opens, decides, expires or runs an approval request (see docs/governance.md); must not throw. */
  onApprovalEvent?: GovernanceOptions['onApprovalEvent'];
  /** How long after its decision an approved request may still run (default 15 min; `null`: any time); later it expires. */
  approvalRunWindowMs?: number | null;
}

/** Per-call options: the runtime's, plus the ContextOS governance fields. */
export interface GovernedInvokeOptions extends InvokeOptions {
  principalChain?: Principal[];
  /** How many leading entries of the chain were verified (default: all: the embedding code vouches for them). */
  verifiedPrincipals?: number;
  /** The mode the call asks for (default: the tool's ceiling). */
  requestedMode?: ApprovalMode;
  idempotencyKey?: string | null;
  evidenceRefs?: string[];
  authRef?: string | null;
  metadata?: JsonObject;
  /**
   * The verified identity policy conditions see as `identity` (principal, tenant, roles, claims):
   * the embedding code vouches for it, as for the chain. Default: the verified head of the chain.
   */
  identity?: PolicyIdentity;
}

/** A governed runtime. */
export interface GovernedRuntime {
  readonly runtime: Runtime;
  readonly store: Store;
  /** The governance pipeline the calls run through. */
  readonly pipeline: GovernancePipeline;
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

const NO_REFS: readonly string[] = Object.freeze([]);

/**
 * The JSON form of call arguments (`{}` for a non-object, which the runtime's own validation
 * refuses), or the error that says why an object has none: circular, or nested deeper than
 * toJsonSafe's bound.
 */
function argsAsJson(args: unknown): JsonObject | ToolEnvelopeError {
  if (!isJsonObject(args)) return {};
  // The same answer as toJsonSafe (which returns plain JSON as it is), without its walk: isSmallPlainJson
  // is the trick of core/json.ts (bench/README.md), toJsonSafe its reference.
  if (isSmallPlainJson(args)) return args;
  try {
    const { value } = toJsonSafe(args);
    return isJsonObject(value) ? value : {};
  } catch (e) {
    if (e instanceof ToolEnvelopeError) return e;
    throw e;
  }
}

/**
 * The outcome of a call whose arguments have no JSON form: it is not run, since policy, the
 * idempotency fingerprint and the audit record could not see what the tool would get.
 */
function unrepresentableArgs(e: ToolEnvelopeError): ToolError {
  const why = e.message.length > 200 ? `${e.message.slice(0, 200)}...` : e.message;
  return {
    category: 'invalid-argument',
    code: 'invalid-arguments',
    detail: `Invalid arguments: they have no JSON form (${why}), so policy and the audit log could not see them. The tool was not run.`,
    retryable: false,
    details: { reason: e.code },
  };
}

/** The runtime's own options of a governed call (without the governance fields). */
function runtimeOptions(o: GovernedInvokeOptions): InvokeOptions {
  const {
    principalChain: _p,
    requestedMode: _r,
    idempotencyKey: _k,
    evidenceRefs: _e,
    authRef: _a,
    metadata: _m,
    verifiedPrincipals: _v,
    identity: _i,
    ...invokeOptions
  } = o;
  return invokeOptions;
}

/**
 * Creates a governed runtime over a runtime and a store.
 *
 * @example
 * ```ts
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
  const requiredMode = options.requiredMode ?? ((tool: ToolDefinition) => tool.approvalMode);
  const idsOf = (call: ToolCall): NonNullable<InvokeOptions['ids']> => {
    const ids: NonNullable<InvokeOptions['ids']> = { toolCallId: call.toolCallId, runId: call.runId, traceId: call.traceId };
    if (call.sessionId !== undefined) ids.sessionId = call.sessionId;
    ids.policyDecisionId = call.policyDecisionId ?? null;
    return ids;
  };
  const pipeline = new GovernancePipeline({
    store,
    ...(options.policy !== undefined && { policy: options.policy }),
    requireIdempotencyKeyFrom: options.requireIdempotencyKeyFrom ?? 'local_write',
    ...(options.approvalTtlMs !== undefined && { approvalTtlMs: options.approvalTtlMs }),
    ...(options.idempotency !== undefined && { idempotency: options.idempotency }),
    ...(options.audit !== undefined && { audit: options.audit }),
    ...(options.operatorKey !== undefined && { operatorKey: options.operatorKey }),
    ...(options.allowSelfApproval !== undefined && { allowSelfApproval: options.allowSelfApproval }),
    ...(options.onApprovalEvent !== undefined && { onApprovalEvent: options.onApprovalEvent }),
    ...(options.approvalRunWindowMs !== undefined && { approvalRunWindowMs: options.approvalRunWindowMs }),
    executorFor: (name) => (runtime.get(name) === undefined ? undefined : (call) => runtime.invoke(name, call.args, { call, ids: idsOf(call) })),
    synthesize: (call, init) => runtime.outcome(call.capabilityId, { ...init, call, ids: idsOf(call) }),
  });

  async function invoke(name: string, args?: unknown, o?: GovernedInvokeOptions): Promise<ToolOutcome> {
    const def = runtime.get(name);
    if (def === undefined) throw new ToolEnvelopeError('unknown-tool', `no tool named ${JSON.stringify(name)} is registered`);
    const given = o?.call;
    const rawArgs = args === undefined ? (given?.args ?? {}) : args;
    // Policy, fingerprint and envelope see the JSON form of the arguments; the tool gets them as given
    // (so that non-object arguments still fail the runtime's own validation).
    const converted = argsAsJson(rawArgs);
    const refused = converted instanceof ToolEnvelopeError ? unrepresentableArgs(converted) : undefined;
    const jsonArgs = refused === undefined ? (converted as JsonObject) : {};
    const principalChain = o?.principalChain ?? given?.principalChain ?? options.principalChain ?? [];
    const idempotencyKey = o?.idempotencyKey !== undefined ? o.idempotencyKey : given?.idempotencyKey;
    const authRef = o?.authRef !== undefined ? o.authRef : given?.authRef;
    const metadata = o?.metadata ?? given?.metadata;
    const sessionId = o?.session?.id ?? given?.sessionId;
    const invokeOptions = o === undefined ? undefined : runtimeOptions(o);
    // Built by assignment (not conditional spreads): this runs once per call.
    const call: GovernedCall = {
      tool: def.name,
      ceiling: def.approvalMode,
      requiredMode: requiredMode(def, jsonArgs),
      riskTags: def.riskTags,
      args: jsonArgs,
      requestedMode: o?.requestedMode ?? given?.approvalModeRequested ?? def.approvalMode,
      principalChain,
      evidenceRefs: o?.evidenceRefs ?? given?.evidenceRefs ?? NO_REFS,
      toolCallId: o?.ids?.toolCallId ?? given?.toolCallId ?? newToolCallId(),
      runId: o?.ids?.runId ?? given?.runId ?? runtime.runId,
      traceId: o?.ids?.traceId ?? given?.traceId ?? newTraceId(),
    };
    if (o?.verifiedPrincipals !== undefined) call.verifiedPrincipals = o.verifiedPrincipals;
    if (idempotencyKey !== undefined) call.idempotencyKey = idempotencyKey;
    if (authRef !== undefined) call.authRef = authRef;
    if (metadata !== undefined) call.metadata = metadata;
    if (sessionId !== undefined) call.sessionId = sessionId;
    if (o?.identity !== undefined) call.identity = o.identity;
    // The tool's own annotations (defined by the embedding code, not by a remote server) for `tool.annotations`.
    call.toolAnnotations = def.annotations as JsonObject;
    const execute = (c: ToolCall): Promise<ToolOutcome> =>
      refused !== undefined
        ? Promise.resolve(runtime.outcome(def.name, { status: 'error', error: refused, call: c, ids: idsOf(c) }))
        : runtime.invoke(def.name, rawArgs, invokeOptions === undefined ? { call: c, ids: idsOf(c) } : { ...invokeOptions, call: c, ids: idsOf(c) });
    if (!o?.session) return pipeline.run(call, execute);
    const session = o.session;
    return pipeline.run(call, execute, { synthesize: (c, init) => runtime.outcome(c.capabilityId, { ...init, call: c, ids: idsOf(c), session }) });
  }

  return {
    runtime,
    store,
    pipeline,
    invoke,
    approve: (id, decision) => pipeline.approve(id, decision),
    reject: (id, decision) => pipeline.reject(id, decision),
    runApproved: (id) => pipeline.runApproved(id),
    watchApprovals: (watch) => pipeline.watchApprovals(watch),
    expireApprovals: (now) => pipeline.expireApprovals(now),
    approvals: (filter) => pipeline.approvals(filter),
    flush: () => pipeline.flush(),
    close: () => pipeline.close(),
  };
}
