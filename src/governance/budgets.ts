/**
 * Rate budgets and quotas of a policy: compiled with its rules, named for a call by the rule that
 * allows it, and counted in the store just before the call executes, so replicas on one store grant a
 * budget once and only calls that run count. Windows are fixed and epoch-aligned (one upsert per check,
 * the same window in every process); a fixed window allows up to twice `calls` across a boundary.
 */
import { createHash } from 'node:crypto';
import { type ToolError, toolError } from 'tool-envelope/core';
import { type BudgetCharge, MAX_BUDGET_KEY } from '../store/budgets.js';
import type { Store } from '../store/types.js';
import type { BudgetScope, BudgetUse, PolicyContext, PolicyRule } from './policy-types.js';

const PER_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/** One budget of a rule, compiled. */
export interface BudgetSpec {
  rule: string;
  /** `rateBudget` or `quotas[i]`. */
  which: string;
  calls: number;
  perMs: number;
  scopes: readonly BudgetScope[];
  /** How the refusal names it. */
  label: string;
}

/** The budgets of a rule (its `rateBudget` and `quotas`), or `undefined` when it has none. */
export function compileBudgets(rule: string, r: Pick<PolicyRule, 'rateBudget' | 'quotas'>): BudgetSpec[] | undefined {
  const out: BudgetSpec[] = [];
  const add = (which: string, calls: number, perMs: number, scope: BudgetScope | BudgetScope[] | undefined, span: string): void => {
    const scopes = [...new Set(scope === undefined ? ['tool' as const] : Array.isArray(scope) ? scope : [scope])];
    // `global` among others adds nothing: the others already name the count.
    const named = scopes.length > 1 ? scopes.filter((s) => s !== 'global') : scopes;
    out.push({ rule, which, calls, perMs, scopes: named, label: `${rule}: ${which} (${calls} calls per ${span} per ${named.join(' and ')})` });
  };
  if (r.rateBudget) add('rateBudget', r.rateBudget.calls, r.rateBudget.perMs, r.rateBudget.scope, `${r.rateBudget.perMs} ms`);
  for (const [i, q] of (r.quotas ?? []).entries()) add(`quotas[${i}]`, q.calls, PER_MS[q.per], q.scope, q.per);
  return out.length > 0 ? out : undefined;
}

/** How many leading entries of the chain are verified (as policy-rules.ts counts them). */
function verified(ctx: PolicyContext): number {
  const n = ctx.principalChain.length;
  const v = ctx.verifiedPrincipals;
  return v === undefined ? n : Math.max(0, Math.min(v, n));
}

function scopeValue(scope: BudgetScope, ctx: PolicyContext): string {
  switch (scope) {
    case 'tool':
      return `tool=${ctx.tool}`;
    case 'principal':
      // Per principal means per verified chain: entries a caller merely declares cannot buy it a fresh budget.
      return `principal=${ctx.principalChain
        .slice(0, verified(ctx))
        .map((p) => `${p.kind}:${p.id}`)
        .join('>')}`;
    case 'tenant':
      return `tenant=${verified(ctx) > 0 ? (ctx.principalChain[0]?.tenant_id ?? '') : ''}`;
    case 'global':
      return 'global';
  }
}

/** The budgets one call is counted against, keyed by rule, budget, window and the call's scope values. */
export function budgetUses(specs: readonly BudgetSpec[], ctx: PolicyContext): BudgetUse[] {
  return specs.map((s) => {
    let key = JSON.stringify([s.rule, s.which, s.perMs, ...s.scopes.map((x) => scopeValue(x, ctx))]);
    // A long principal chain or tool name would make a long key: its digest counts the same.
    if (key.length > MAX_BUDGET_KEY) key = `sha256:${createHash('sha256').update(key).digest('hex')}`;
    return { key, calls: s.calls, perMs: s.perMs, name: s.label };
  });
}

/** True for a well-formed list of budget uses (a policy function's verdict may carry one). */
export function isBudgetUses(v: unknown): v is BudgetUse[] {
  return (
    Array.isArray(v) &&
    v.length <= 64 &&
    v.every(
      (b) =>
        typeof b === 'object' &&
        b !== null &&
        typeof b.key === 'string' &&
        b.key !== '' &&
        b.key.length <= MAX_BUDGET_KEY &&
        Number.isSafeInteger(b.calls) &&
        b.calls >= 1 &&
        Number.isSafeInteger(b.perMs) &&
        b.perMs >= 1 &&
        typeof b.name === 'string',
    ) &&
    new Set(v.map((b) => b.key)).size === v.length
  );
}

const SWEEP_EVERY_MS = 60_000;
const lastSweep = new WeakMap<Store, number>();

/**
 * Counts a call against its budgets in the store, just before it executes. Resolves `undefined`
 * when it may run (every budget counted it), else the error of its refusal: `budget-exhausted`
 * with `retryAfterMs` until the full window ends, or `budget-store-failure` when the store cannot
 * count (the call does not run: a budget that cannot be checked is not granted).
 */
export async function chargeBudgets(store: Store, uses: readonly BudgetUse[], now: number): Promise<ToolError | undefined> {
  const charges: BudgetCharge[] = uses.map((u) => ({ key: u.key, limit: u.calls, windowEnd: (Math.floor(now / u.perMs) + 1) * u.perMs }));
  let full: number;
  try {
    full = await store.budgets.take(charges);
  } catch (e) {
    return toolError('internal', 'budget-store-failure', `The budget store is unavailable, so the call was not run: ${(e as Error)?.message ?? String(e)}`, {
      retryable: true,
    });
  }
  // Rows of ended windows are deleted now and then (any replica may), so idle keys do not stay.
  if ((lastSweep.get(store) ?? 0) + SWEEP_EVERY_MS <= now) {
    lastSweep.set(store, now);
    store.budgets.sweep(now).catch(() => {});
  }
  if (full < 0) return undefined;
  const use = uses[full] as BudgetUse;
  const end = (charges[full] as BudgetCharge).windowEnd;
  const retryAfterMs = Math.max(0, end - now);
  return toolError('elevation', 'budget-exhausted', `Blocked by policy: ${use.name} exhausted; retry after ${retryAfterMs} ms.`, {
    retryable: true,
    retryAfterMs,
    remediation: `Wait ${retryAfterMs} ms (until ${new Date(end).toISOString()}), then retry.`,
    details: { budget: use.name, limit: use.calls, windowMs: use.perMs, retryNotBefore: new Date(end).toISOString() },
  });
}

/**
 * Thrown inside an idempotent execution when the call's budgets refuse it, so that the key's claim
 * is released (the call did not run) rather than recorded with the refusal as its outcome.
 */
export class BudgetRefusal extends Error {
  constructor(readonly error: ToolError) {
    super(error.detail ?? 'budget refused');
  }
}
