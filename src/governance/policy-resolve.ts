/**
 * Resolving a call's approval, as ContextOS defines it: five ordered modes
 * (`read_only < local_write < network < delegated < destructive`); each tool declares its ceiling;
 * each call asks for a mode; a policy (a plain function, or compiled declarative rules) resolves the
 * effective mode and a decision id. Everything fails closed: an unknown mode, a call above the
 * ceiling, a policy that throws or answers something invalid all give `deny`.
 */
import { randomUUID } from 'node:crypto';
import { type ApprovalMode, compareApprovalModes, isApprovalMode } from '../core/taxonomy.js';
import { defaultPolicy } from './policy-load.js';
import type { CompiledPolicy, Policy, PolicyDecision, PolicyEffect, ResolveApprovalInput, PolicyContext } from './policy-types.js';

function isCompiled(p: Policy): p is CompiledPolicy {
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
 * Resolves a call's approval: validates modes, applies the ceiling, asks the policy, validates its
 * answer. Never throws; every failure is a `deny` with the reason.
 *
 * Guarantees: `effectiveMode` is never above `ceiling` nor above `requested`; a `deny` is returned
 * for an unknown mode, a request above the ceiling, a throwing policy or an invalid answer.
 *
 * @example
 * ```ts
 * const d = await resolveApproval({
 *   tool: 'fs.delete', ceiling: 'destructive', requested: 'destructive',
 *   principalChain: [{ kind: 'user', id: 'u1' }, { kind: 'agent', id: 'a1' }],
 * });
 * d.effect; // 'require-approval' (the default policy gates destructive calls)
 * ```
 */
export async function resolveApproval(input: ResolveApprovalInput): Promise<PolicyDecision> {
  const now = input.now ?? Date.now();
  const chain = Array.isArray(input.principalChain) ? input.principalChain.map((p) => ({ ...p })) : [];
  const ceiling = isApprovalMode(input.ceiling) ? input.ceiling : null;
  const requested = isApprovalMode(input.requested) ? input.requested : null;
  const v = input.verifiedPrincipals;
  const verifiedPrincipals = v === undefined ? chain.length : Number.isSafeInteger(v) ? Math.max(0, Math.min(v, chain.length)) : 0;
  const decide = (effect: PolicyEffect, effectiveMode: ApprovalMode | null, reason: string, rule?: string): PolicyDecision => ({
    id: (input.newId ?? (() => `pd_${randomUUID()}`))(),
    effect,
    effectiveMode,
    reason,
    ...(rule !== undefined && { rule }),
    ceiling,
    requested,
    principalChain: chain,
    verifiedPrincipals,
    decidedAt: now,
  });
  if (ceiling === null) return decide('deny', null, `tool ceiling ${JSON.stringify(input.ceiling)} is not an approval mode`);
  if (requested === null) return decide('deny', null, `requested mode ${JSON.stringify(input.requested)} is not an approval mode`);
  if (compareApprovalModes(requested, ceiling) > 0) {
    return decide('deny', null, `requested mode ${requested} exceeds the tool's ceiling ${ceiling}`);
  }
  const ctx: PolicyContext = {
    tool: input.tool,
    ceiling,
    requested,
    args: input.args ?? {},
    principalChain: chain,
    verifiedPrincipals,
    evidenceRefs: input.evidenceRefs ?? [],
    idempotencyKey: input.idempotencyKey,
    authRef: input.authRef,
    riskTags: input.riskTags ?? [],
    ...(input.metadata !== undefined && { metadata: input.metadata }),
    now,
  };
  const policy = input.policy ?? defaultPolicy;
  let verdict: unknown;
  try {
    verdict = isCompiled(policy) ? policy.evaluate(ctx) : await policy(ctx);
  } catch (e) {
    return decide('deny', null, `policy threw: ${describeError(e)}`);
  }
  try {
    return interpretVerdict(verdict, requested, decide);
  } catch (e) {
    // A verdict whose getters throw (a hostile proxy, say) is invalid like any other.
    return decide('deny', null, `policy answered an unreadable verdict: ${describeError(e)}`);
  }
}

function interpretVerdict(
  verdict: unknown,
  requested: ApprovalMode,
  decide: (effect: PolicyEffect, mode: ApprovalMode | null, reason: string, rule?: string) => PolicyDecision,
): PolicyDecision {
  if (typeof verdict !== 'object' || verdict === null || Array.isArray(verdict)) {
    return decide('deny', null, `policy answered ${describeError(verdict)}, not a verdict object`);
  }
  const v = verdict as Record<string, unknown>;
  const effect = v.effect;
  if (!EFFECTS.includes(effect as PolicyEffect)) {
    return decide('deny', null, `policy answered an invalid effect ${JSON.stringify(effect) ?? 'undefined'}`);
  }
  if (v.reason !== undefined && typeof v.reason !== 'string') return decide('deny', null, 'policy answered a non-string reason');
  const rule = typeof v.rule === 'string' ? v.rule : undefined;
  let mode: ApprovalMode = requested;
  const asked = v.mode;
  if (asked !== undefined) {
    if (!isApprovalMode(asked)) return decide('deny', null, `policy answered an unknown mode ${JSON.stringify(asked) ?? 'undefined'}`, rule);
    if (compareApprovalModes(asked, requested) > 0) {
      return decide('deny', null, `policy tried to raise the mode from ${requested} to ${asked}; policy may lower, never raise`, rule);
    }
    mode = asked;
  }
  const reason = (v.reason as string | undefined) ?? `${String(effect)} at ${mode}`;
  const d = decide(effect as PolicyEffect, effect === 'deny' ? null : mode, reason, rule);
  if (effect === 'require-approval' && v.selfApproval === true) d.selfApproval = true;
  return d;
}

/**
 * The execution gate: true only when the decision allows the call and the mode the tool needs
 * for it is within the effective mode. The runtime runs a handler only when this is true.
 *
 * @example
 * ```ts
 * mayExecute({ effect: 'allow', effectiveMode: 'read_only' }, 'local_write'); // false
 * ```
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
