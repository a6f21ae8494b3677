/**
 * Resolving a call's approval, as ContextOS defines it: five ordered modes
 * (`read_only < local_write < network < delegated < destructive`); each tool declares its ceiling;
 * each call asks for a mode; a policy (a plain function, or compiled declarative rules) resolves the
 * effective mode and a decision id. Everything fails closed: an unknown mode, a call above the
 * ceiling, a policy that throws or answers something invalid all give `deny`.
 */
import { randomUUID } from 'node:crypto';
import { type ApprovalMode, compareApprovalModes, isApprovalMode, type Principal } from 'tool-envelope/core';
import { isBudgetUses } from './budgets.js';
import { defaultPolicy } from './policy-load.js';
import type { BudgetUse, CompiledPolicy, Policy, PolicyContext, PolicyDecision, PolicyEffect, ResolveApprovalInput } from './policy-types.js';

/** True for a policy compiled from rules (synchronous), false for a policy function. */
export function isCompiledPolicy(p: Policy): p is CompiledPolicy {
  return typeof p === 'object' && p !== null && (p as CompiledPolicy).kind === 'rules';
}

function describeError(e: unknown): string {
  if (e instanceof Error) return e.message;
  try {
    return String(e);
  } catch {
    return 'unprintable value';
  }
}

const EFFECTS: readonly PolicyEffect[] = ['allow', 'deny', 'require-approval'];

/**
 * What every decision of one call shares: the call's modes and principals as read once, and the
 * decisions made from them ({@link Facts.decision}, {@link Facts.deny}).
 */
class Facts {
  readonly ceiling: ApprovalMode | null;
  readonly requested: ApprovalMode | null;
  readonly chain: Principal[];
  readonly verified: number;
  readonly now: number;

  constructor(readonly input: ResolveApprovalInput) {
    const src = input.principalChain;
    const chain: Principal[] = [];
    if (Array.isArray(src)) for (const p of src) chain.push({ ...p });
    const v = input.verifiedPrincipals;
    this.ceiling = isApprovalMode(input.ceiling) ? input.ceiling : null;
    this.requested = isApprovalMode(input.requested) ? input.requested : null;
    this.chain = chain;
    this.verified = v === undefined ? chain.length : Number.isSafeInteger(v) ? Math.max(0, Math.min(v, chain.length)) : 0;
    this.now = input.now ?? Date.now();
  }

  decision(effect: PolicyEffect, effectiveMode: ApprovalMode | null, reason: string, rule?: string): PolicyDecision {
    // Built by assignment in the order the audit log shows: this runs once per call.
    const d: PolicyDecision = {
      id: this.input.newId ? this.input.newId() : `pd_${randomUUID()}`,
      effect,
      effectiveMode,
      reason,
    } as PolicyDecision;
    if (rule !== undefined) d.rule = rule;
    d.ceiling = this.ceiling;
    d.requested = this.requested;
    d.principalChain = this.chain;
    d.verifiedPrincipals = this.verified;
    d.decidedAt = this.now;
    return d;
  }

  /** A `deny`, which grants no mode. */
  deny(reason: string, rule?: string): PolicyDecision {
    return this.decision('deny', null, reason, rule);
  }
}

/** The facts of a call, and its decision already when the modes alone deny it. */
function facts(input: ResolveApprovalInput): Facts | PolicyDecision {
  const f = new Facts(input);
  if (f.ceiling === null) return f.deny(`tool ceiling ${JSON.stringify(input.ceiling)} is not an approval mode`);
  if (f.requested === null) return f.deny(`requested mode ${JSON.stringify(input.requested)} is not an approval mode`);
  if (compareApprovalModes(f.requested, f.ceiling) > 0) {
    return f.deny(`requested mode ${f.requested} exceeds the tool's ceiling ${f.ceiling}`);
  }
  return f;
}

function contextOf(f: Facts): PolicyContext {
  const input = f.input;
  const ctx: PolicyContext = {
    tool: input.tool,
    ceiling: f.ceiling as ApprovalMode,
    requested: f.requested as ApprovalMode,
    args: input.args ?? {},
    principalChain: f.chain,
    verifiedPrincipals: f.verified,
    evidenceRefs: input.evidenceRefs ?? [],
    idempotencyKey: input.idempotencyKey,
    authRef: input.authRef,
    riskTags: input.riskTags ?? [],
    now: f.now,
  };
  if (input.metadata !== undefined) ctx.metadata = input.metadata;
  if (input.identity !== undefined) ctx.identity = input.identity;
  if (input.sessionId !== undefined) ctx.sessionId = input.sessionId;
  if (input.toolAnnotations !== undefined) ctx.toolAnnotations = input.toolAnnotations;
  return ctx;
}

function settle(f: Facts, verdict: unknown): PolicyDecision {
  try {
    return interpretVerdict(f, verdict);
  } catch (e) {
    // A verdict whose getters throw (a hostile proxy, say) is invalid like any other.
    return f.deny(`policy answered an unreadable verdict: ${describeError(e)}`);
  }
}

/**
 * Resolves a call's approval: validates modes, applies the ceiling, asks the policy, validates its
 * answer. Never throws; every failure is a `deny` with the reason.
 *
 * Guarantees: `effectiveMode` is never above `ceiling` nor above `requested`; a `deny` is returned
 * for an unknown mode, a request above the ceiling, a throwing policy or an invalid answer.
 */
export async function resolveApproval(input: ResolveApprovalInput): Promise<PolicyDecision> {
  const f = facts(input);
  if (!(f instanceof Facts)) return f;
  const ctx = contextOf(f);
  const policy = input.policy ?? defaultPolicy;
  let verdict: unknown;
  try {
    verdict = isCompiledPolicy(policy) ? policy.evaluate(ctx) : await policy(ctx);
  } catch (e) {
    return f.deny(`policy threw: ${describeError(e)}`);
  }
  return settle(f, verdict);
}

/**
 * {@link resolveApproval} for a compiled (synchronous) policy, without a promise: the same
 * decision, returned at once. The governance pipeline takes it for rule policies.
 *
 * Speed trick (bench/README.md): pays for `governance: pipeline vs the governed path it replaced`
 * (the await of the async reference costs a promise and a microtask turn per call); its reference
 * is `resolveApproval`, and src/governance/policy.test.ts checks that the two agree on generated inputs.
 */
export function resolveCompiledApproval(input: ResolveApprovalInput, policy: CompiledPolicy): PolicyDecision {
  const f = facts(input);
  if (!(f instanceof Facts)) return f;
  let verdict: unknown;
  try {
    verdict = policy.evaluate(contextOf(f));
  } catch (e) {
    return f.deny(`policy threw: ${describeError(e)}`);
  }
  return settle(f, verdict);
}

function interpretVerdict(f: Facts, verdict: unknown): PolicyDecision {
  const requested = f.requested as ApprovalMode;
  if (typeof verdict !== 'object' || verdict === null || Array.isArray(verdict)) {
    return f.deny(`policy answered ${describeError(verdict)}, not a verdict object`);
  }
  const v = verdict as Record<string, unknown>;
  const effect = v.effect;
  if (!EFFECTS.includes(effect as PolicyEffect)) {
    return f.deny(`policy answered an invalid effect ${JSON.stringify(effect) ?? 'undefined'}`);
  }
  if (v.reason !== undefined && typeof v.reason !== 'string') return f.deny('policy answered a non-string reason');
  const rule = typeof v.rule === 'string' ? v.rule : undefined;
  let mode: ApprovalMode = requested;
  const asked = v.mode;
  if (asked !== undefined) {
    if (!isApprovalMode(asked)) return f.deny(`policy answered an unknown mode ${JSON.stringify(asked) ?? 'undefined'}`, rule);
    if (compareApprovalModes(asked, requested) > 0) {
      return f.deny(`policy tried to raise the mode from ${requested} to ${asked}; policy may lower, never raise`, rule);
    }
    mode = asked;
  }
  const reason = (v.reason as string | undefined) ?? `${String(effect)} at ${mode}`;
  const budgets = v.budgets;
  // A grant with budgets the pipeline cannot count is no grant.
  if (effect === 'allow' && budgets !== undefined && !isBudgetUses(budgets)) return f.deny('policy answered malformed budgets', rule);
  const d = f.decision(effect as PolicyEffect, effect === 'deny' ? null : mode, reason, rule);
  const approvers = v.approvers;
  if (effect === 'require-approval' && approvers !== undefined && approvers !== 1) {
    // A quorum the desk cannot count is no quorum: a malformed one denies rather than asking one approver.
    if (typeof approvers !== 'number' || !Number.isSafeInteger(approvers) || approvers < 1 || approvers > 10) {
      return f.deny('policy answered an invalid number of approvers', rule);
    }
    d.approvers = approvers;
  } else if (effect === 'require-approval' && v.selfApproval === true) d.selfApproval = true;
  if (effect === 'allow' && budgets !== undefined)
    d.budgets = (budgets as BudgetUse[]).map((b) => ({ key: b.key, calls: b.calls, perMs: b.perMs, name: b.name }));
  return d;
}

/**
 * Why an allowing decision still does not run the call: the tool needs a mode above the effective
 * one (the gateway answers it blocked with this reason). `undefined` when it runs, or is not allowed.
 */
export function executionGate(decision: Pick<PolicyDecision, 'effect' | 'effectiveMode'>, needed: ApprovalMode): string | undefined {
  if (decision.effect !== 'allow' || mayExecute(decision, needed)) return undefined;
  return `the tool needs ${needed} for this call but the effective mode is ${decision.effectiveMode ?? 'none'}`;
}

/**
 * The execution gate: true only when the decision allows the call and the mode the tool needs
 * for it is within the effective mode. The runtime runs a handler only when this is true.
 */
export function mayExecute(decision: Pick<PolicyDecision, 'effect' | 'effectiveMode'>, required: ApprovalMode): boolean {
  return (
    decision.effect === 'allow' &&
    decision.effectiveMode !== null &&
    isApprovalMode(decision.effectiveMode) &&
    isApprovalMode(required) &&
    compareApprovalModes(required, decision.effectiveMode) <= 0
  );
}
