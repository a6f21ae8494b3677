/**
 * The declarative rule language, compiled once per policy: every glob (tools, principal ids, risk
 * tags, egress hosts) becomes a matcher when the document is compiled, every verdict a rule can
 * give is built then too, so that evaluating a call allocates nothing but a denial's reason. The
 * document must already be checked (`policy-load.ts` does it against `policy.schema.json`).
 */
import { type Issue, type JsonObject, isJsonObject, type ApprovalMode } from 'tool-envelope/core';
import { type CompiledWhen, compileWhen, WHEN_LIMITS, WhenCall, type WhenInput, WhenError, whenIssue } from './policy-cel.js';
import { type BudgetSpec, budgetUses, compileBudgets } from './budgets.js';
import { failPolicy } from './policy-check.js';
import { checkRuleSettings, ruleName } from './policy-rule-checks.js';
import { createHash } from 'node:crypto';
import { canonicalJson } from './idempotency.js';
import type {
  BuiltinPolicyOptions,
  CompiledPolicy,
  HideFacts,
  PolicyContext,
  PolicyDocument,
  PolicyEffect,
  PolicyExplanation,
  PolicyRule,
  PolicyVerdict,
  RuleTrace,
} from './policy-types.js';

type Matcher = (value: string) => boolean;

let regexpsCompiled = 0;

/**
 * How many glob regular expressions this process has compiled so far (policies compile theirs
 * once, when they are compiled; evaluating a call compiles none). For tests and diagnostics.
 */
export function policyRegExpsCompiled(): number {
  return regexpsCompiled;
}

const always: Matcher = () => true;

/** One glob (`*` for any run of characters, nothing else special) as a matcher. */
function globMatcher(glob: string): Matcher {
  if (!glob.includes('*')) return (v) => v === glob;
  if (/^\*+$/.test(glob)) return always;
  regexpsCompiled++;
  const re = new RegExp(
    `^${glob
      .split('*')
      .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  );
  return (v) => re.test(v);
}

function list<T>(v: T | T[] | undefined): T[] | undefined {
  return v === undefined ? undefined : Array.isArray(v) ? v : [v];
}

/** Any of the globs, as one matcher. */
function globsMatcher(globs: string | string[] | undefined, lower = false): Matcher | undefined {
  const each = list(globs)?.map((g) => globMatcher(lower ? g.toLowerCase() : g));
  if (each === undefined) return undefined;
  if (each.length === 1) return each[0];
  return (v) => {
    for (const m of each) if (m(v)) return true;
    return false;
  };
}

function get(obj: JsonObject, path: readonly string[]): unknown {
  let cur: unknown = obj;
  for (const part of path) {
    if (!isJsonObject(cur) || !Object.hasOwn(cur, part)) return undefined;
    cur = cur[part];
  }
  return cur;
}

function hostOf(value: string): string {
  try {
    return new URL(value).hostname.toLowerCase();
  } catch {
    return value.toLowerCase();
  }
}

interface Requirements {
  idempotencyKey: boolean;
  userDelegation: boolean;
  evidence: boolean;
  egress: { allow: Matcher; argPaths: string[][] } | undefined;
  /** Only rules that allow have budgets (counted in the store when the call runs, governance/budgets.ts). */
  budgets: BudgetSpec[] | undefined;
}

function requirements(
  r: Partial<Pick<PolicyRule, 'requireIdempotencyKey' | 'requireUserDelegation' | 'requireEvidence' | 'egress' | 'rateBudget' | 'quotas'>>,
  budgetsOf: string | undefined,
): Requirements {
  const e = r.egress;
  return {
    idempotencyKey: r.requireIdempotencyKey === true,
    userDelegation: r.requireUserDelegation === true,
    evidence: r.requireEvidence === true,
    egress: e ? { allow: globsMatcher(e.allow, true) ?? (() => false), argPaths: (list(e.argPaths) ?? []).map((p) => p.split('.')) } : undefined,
    budgets: budgetsOf === undefined ? undefined : compileBudgets(budgetsOf, r),
  };
}

/** How many leading entries of the chain a grant may rely on. */
function verifiedCount(ctx: PolicyContext): number {
  const n = ctx.principalChain.length;
  const v = ctx.verifiedPrincipals;
  return v === undefined ? n : Math.max(0, Math.min(v, n));
}

/** The hosts a call reaches, from its arguments and `metadata.egress`. */
function egressHosts(ctx: PolicyContext, argPaths: readonly string[][]): string[] {
  const hosts: string[] = [];
  const add = (v: unknown): void => {
    if (typeof v === 'string') hosts.push(hostOf(v));
    else if (Array.isArray(v)) v.forEach(add);
  };
  for (const p of argPaths) add(get(ctx.args, p));
  if (ctx.metadata) add(ctx.metadata.egress);
  return hosts;
}

/** Checks a rule's requirements; returns the reason of the first that fails. Budgets are not among them: the pipeline counts those. */
function unmet(req: Requirements, ctx: PolicyContext): string | undefined {
  if (req.idempotencyKey && !ctx.idempotencyKey) return 'an idempotency key is required';
  if (req.userDelegation) {
    const head = ctx.principalChain[0];
    if (head?.kind !== 'user' || typeof head.id !== 'string' || head.id === '') {
      return 'a valid user delegation is required: the principal chain must start with a user';
    }
    // A delegation counts only when it was granted to a verified identity, never when the caller declares it.
    if (verifiedCount(ctx) < 1) return 'a valid user delegation is required: the user at the head of the chain is not verified';
  }
  if (req.evidence && ctx.evidenceRefs.length === 0) return 'per-call evidence is required (evidence_refs is empty)';
  if (req.egress) {
    const hosts = egressHosts(ctx, req.egress.argPaths);
    if (hosts.length === 0) return 'egress target unknown: no host found in the call';
    const bad = hosts.find((h) => !req.egress!.allow(h));
    if (bad !== undefined) return `egress to ${bad} is not in the allow-list`;
  }
  return undefined;
}

interface CompiledRule {
  name: string;
  effect: PolicyEffect;
  tool: Matcher | undefined;
  modes: readonly ApprovalMode[] | undefined;
  kinds: readonly string[] | undefined;
  principalId: Matcher | undefined;
  tenants: readonly string[] | undefined;
  riskTag: Matcher | undefined;
  when: CompiledWhen | undefined;
  hide: boolean;
  req: Requirements;
  /** The verdict when the rule matches and its requirements hold (built once, frozen). */
  verdict: PolicyVerdict;
}

function compileRule(rule: PolicyRule, i: number, when: CompiledWhen | undefined): CompiledRule {
  const name = ruleName(rule, i);
  const m = rule.match ?? {};
  const verdict: PolicyVerdict = { effect: rule.effect };
  if (rule.mode) verdict.mode = rule.mode;
  verdict.reason = rule.reason ?? `${name}: ${rule.effect}`;
  verdict.rule = name;
  const approvers = rule.effect === 'require-approval' ? (rule.approvers ?? 1) : 1;
  // Several approvers are several other people: the caller's own approval never counts toward them.
  if (rule.selfApproval === true && rule.effect === 'require-approval' && approvers === 1) verdict.selfApproval = true;
  if (approvers > 1) verdict.approvers = approvers;
  return {
    name,
    effect: rule.effect,
    tool: globsMatcher(m.tool),
    modes: list(m.mode),
    kinds: list(m.principalKind),
    principalId: globsMatcher(m.principalId),
    tenants: list(m.tenant),
    riskTag: globsMatcher(m.riskTag),
    when,
    hide: rule.hide === true,
    req: requirements(rule, rule.effect === 'allow' ? name : undefined),
    verdict: Object.freeze(verdict),
  };
}

/** The first `match` condition of a rule that the call does not meet; `undefined` when it meets them all. */
function mismatch(r: CompiledRule, ctx: PolicyContext, modes = true): string | undefined {
  if (r.tool !== undefined && !r.tool(ctx.tool)) return 'tool';
  if (modes && r.modes !== undefined && !r.modes.includes(ctx.requested)) return 'mode';
  const chain = ctx.principalChain;
  // A deny rule matches any entry of the chain; a rule that grants (allow, approval) only the verified
  // ones, so that a principal the caller merely declares can trigger a refusal but never a grant.
  const verified = r.effect === 'deny' ? chain.length : verifiedCount(ctx);
  const head = verified > 0 ? chain[0] : undefined;
  if (r.kinds !== undefined && (head === undefined || !r.kinds.includes(head.kind))) return 'principalKind';
  if (r.principalId !== undefined) {
    let any = false;
    for (let i = 0; i < verified && !any; i++) any = r.principalId((chain[i] as { id: string }).id);
    if (!any) return 'principalId';
  }
  if (r.tenants !== undefined && (head?.tenant_id === undefined || !r.tenants.includes(head.tenant_id))) return 'tenant';
  if (r.riskTag !== undefined && !ctx.riskTags.some(r.riskTag)) return 'riskTag';
  return undefined;
}

const NO_ROLES: readonly string[] = Object.freeze([]);
const EMPTY: JsonObject = Object.freeze({}) as JsonObject;

/**
 * What a condition sees of a call. The identity is the one authentication gave, else the verified
 * head of the chain (no roles, no claims); an unverified head is no identity (`principal` empty).
 */
function whenInput(ctx: PolicyContext): WhenInput {
  const verified = verifiedCount(ctx);
  const head = verified > 0 ? ctx.principalChain[0] : undefined;
  const id = ctx.identity;
  return {
    args: ctx.args,
    tool: { name: ctx.tool, annotations: ctx.toolAnnotations ?? EMPTY },
    mode: ctx.requested,
    chain: ctx.principalChain.map((p, i) => ({ kind: p.kind, id: p.id, tenant: p.tenant_id ?? '', verified: i < verified })),
    identity: id
      ? { principal: id.principal, tenant: id.tenant ?? '', roles: id.roles ?? NO_ROLES, claims: id.claims ?? EMPTY }
      : { principal: head ? `${head.kind}:${head.id}` : '', tenant: head?.tenant_id ?? '', roles: NO_ROLES, claims: EMPTY },
    session: { id: ctx.sessionId ?? '' },
    riskTags: ctx.riskTags,
    now: ctx.now,
  };
}

const BUILTIN_ALLOW: Readonly<Record<'read_only' | 'local_write' | 'network' | 'delegated', PolicyVerdict>> = Object.freeze({
  read_only: Object.freeze({ effect: 'allow', reason: 'read_only: allow with audit', rule: 'builtin:read_only' }),
  // The idempotency key itself is enforced by the runtime (a missing key is an invalid argument, not a policy denial).
  local_write: Object.freeze({ effect: 'allow', reason: 'local_write: allow with idempotency key and audit', rule: 'builtin:local_write' }),
  network: Object.freeze({ effect: 'allow', reason: 'network: allow within the egress allow-list and rate budget', rule: 'builtin:network' }),
  delegated: Object.freeze({ effect: 'allow', reason: 'delegated: valid user delegation with per-call evidence', rule: 'builtin:delegated' }),
} as const);
const BUILTIN_DESTRUCTIVE: PolicyVerdict = Object.freeze({
  effect: 'require-approval',
  reason: 'destructive: does not run until an approval gate signs it',
  rule: 'builtin:destructive',
});
const DELEGATION: Requirements = requirements({ requireUserDelegation: true, requireEvidence: true }, undefined);

/** A rule's verdict with the budgets this call is counted against (a fresh object: the rule's is frozen). */
function withBudgets(verdict: PolicyVerdict, specs: readonly BudgetSpec[], ctx: PolicyContext): PolicyVerdict {
  return { ...verdict, budgets: budgetUses(specs, ctx) };
}

/** The ContextOS per-mode defaults, with the network options of the document compiled. */
function builtinFallback(opts: BuiltinPolicyOptions): (ctx: PolicyContext) => PolicyVerdict {
  const network = requirements(opts, 'builtin:network');
  return (ctx) => {
    const requested = ctx.requested;
    if (requested === 'destructive') return BUILTIN_DESTRUCTIVE;
    const why = requested === 'network' ? unmet(network, ctx) : requested === 'delegated' ? unmet(DELEGATION, ctx) : undefined;
    if (why === undefined)
      return requested === 'network' && network.budgets ? withBudgets(BUILTIN_ALLOW.network, network.budgets, ctx) : BUILTIN_ALLOW[requested];
    return { effect: 'deny', reason: `${requested}: ${why}`, rule: `builtin:${requested}` };
  };
}

/**
 * Compiles a checked policy document into a policy (use `compilePolicy`, which checks it first).
 * Patterns are compiled here, once; `evaluate` compiles none.
 */
export function compileRules(doc: PolicyDocument): CompiledPolicy {
  const whens = compileWhens(doc.rules ?? []);
  checkHides(doc.rules ?? [], whens);
  checkRuleSettings(doc.rules ?? []);
  const rules = (doc.rules ?? []).map((r, i) => compileRule(r, i, whens[i]));
  const hides = rules.some((r) => r.hide) ? hider(rules) : () => false;
  const fallbackEffect = doc.default ?? 'builtin';
  const fixed: PolicyVerdict | undefined =
    fallbackEffect === 'builtin' ? undefined : Object.freeze({ effect: fallbackEffect, reason: `no rule matched: default ${fallbackEffect}`, rule: 'default' });
  const builtin = builtinFallback(doc.builtin ?? {});
  /** The one decision loop of `evaluate` and `explain`: with `trace`, each rule looked at is told there. */
  const decide = (ctx: PolicyContext, trace?: RuleTrace[]): PolicyVerdict => {
    // Built when a rule's other matchers first hold, once per call, shared by its conditions.
    let call: WhenCall | undefined;
    for (let i = 0; i < rules.length; i++) {
      const r = rules[i] as CompiledRule;
      const miss = mismatch(r, ctx);
      const step: RuleTrace | undefined = trace ? { index: i, name: r.name, matched: false } : undefined;
      if (step) trace!.push(step);
      if (miss !== undefined) {
        if (step) step.mismatch = miss;
        continue;
      }
      const when = r.when;
      if (when !== undefined) {
        call ??= new WhenCall(whenInput(ctx));
        const out = when.evaluate(call);
        if (step) step.when = { source: when.source, ...out };
        // A condition that cannot be evaluated for this call denies it: the rule's author did not foresee the call.
        if ('error' in out) return { effect: 'deny', reason: `${r.name}: condition failed: ${out.error}`, rule: r.name };
        if (!out.value) continue;
      }
      if (step) step.matched = true;
      const why = unmet(r.req, ctx);
      if (why !== undefined) {
        if (step) step.unmet = why;
        return { effect: 'deny', reason: `${r.name}: ${why}`, rule: r.name };
      }
      return r.req.budgets === undefined ? r.verdict : withBudgets(r.verdict, r.req.budgets, ctx);
    }
    return fixed ?? builtin(ctx);
  };
  return Object.freeze({
    kind: 'rules' as const,
    document: doc,
    digest: createHash('sha256')
      .update(canonicalJson(doc as unknown as JsonObject))
      .digest('hex'),
    hides,
    evaluate: (ctx: PolicyContext): PolicyVerdict => decide(ctx),
    explain(ctx: PolicyContext): PolicyExplanation {
      const rulesSeen: RuleTrace[] = [];
      const verdict = decide(ctx, rulesSeen);
      const last = rulesSeen[rulesSeen.length - 1];
      const decided = last !== undefined && (last.matched || last.when?.error !== undefined);
      return { rules: rulesSeen, deciding: decided ? last.index : -1, verdict };
    },
  });
}

/** Each rule's condition compiled, or every problem of them as one located error of the document. */
function compileWhens(rules: readonly PolicyRule[]): (CompiledWhen | undefined)[] {
  const issues: Issue[] = [];
  let total = 0;
  let over = false;
  const out = rules.map((r, i) => {
    if (r.when === undefined || over) return undefined;
    total += r.when.length;
    if (total > WHEN_LIMITS.maxTotalLength) {
      // The rest is not even parsed: a document cannot buy unbounded load time with many conditions.
      over = true;
      issues.push({ code: 'too-large', path: `/rules/${i}/when`, message: `the conditions together are longer than ${WHEN_LIMITS.maxTotalLength} characters` });
      return undefined;
    }
    try {
      return compileWhen(r.when);
    } catch (e) {
      if (!(e instanceof WhenError)) throw e;
      issues.push(whenIssue(e, `/rules/${i}/when`));
      return undefined;
    }
  });
  if (issues.length > 0) failPolicy(issues.some((x) => x.code === 'too-large') ? 'too-large' : 'invalid-option', issues);
  return out;
}

/** What a `when` may name and still be decided before any call: the tool and the caller. */
const STATIC_VARIABLES: ReadonlySet<string> = new Set(['tool', 'identity']);

function isStatic(when: CompiledWhen | undefined): boolean {
  if (when === undefined) return true;
  for (const v of when.variables) if (!STATIC_VARIABLES.has(v)) return false;
  return true;
}

/**
 * `hide` only where it can mean something: on a deny rule that decides on the tool and the caller
 * alone. A hide on an allow would hide a granted tool; one that depends on the call could never hide.
 */
function checkHides(rules: readonly PolicyRule[], whens: readonly (CompiledWhen | undefined)[]): void {
  const issues: Issue[] = [];
  rules.forEach((r, i) => {
    if (r.hide !== true) return;
    const path = `/rules/${i}/hide`;
    if (r.effect !== 'deny') issues.push({ code: 'hide', path, message: `is only for deny rules (this rule's effect is ${r.effect})` });
    else if (r.match?.mode !== undefined)
      issues.push({ code: 'hide', path, message: 'needs a rule that decides on the tool and the caller alone: this one matches the requested mode' });
    else if (!isStatic(whens[i]))
      issues.push({
        code: 'hide',
        path,
        message: `needs a rule that decides on the tool and the caller alone: its when names ${[...(whens[i]?.variables ?? [])].filter((v) => !STATIC_VARIABLES.has(v)).join(', ')} (only tool and identity may be named)`,
      });
  });
  if (issues.length > 0) failPolicy('invalid-option', issues);
}

const NO_ARGS: JsonObject = Object.freeze({}) as JsonObject;

/**
 * Whether a caller is denied a tool outright by a hide rule: the rules are walked as `decide` walks
 * them, with only what is known before any call (the tool, the verified chain and identity). A rule
 * that could go either way for some call (its mode, a condition on the call, a deny on a principal
 * the caller may still declare) ends the walk with "listed": hiding is never a guess.
 */
function hider(rules: readonly CompiledRule[]): (facts: HideFacts) => boolean {
  return (facts) => {
    const ctx: PolicyContext = {
      tool: facts.tool,
      ceiling: 'read_only',
      requested: 'read_only',
      args: NO_ARGS,
      principalChain: facts.principalChain,
      verifiedPrincipals: facts.principalChain.length,
      evidenceRefs: NO_ROLES,
      idempotencyKey: undefined,
      riskTags: facts.riskTags ?? NO_ROLES,
      now: Date.now(),
    };
    if (facts.identity !== undefined) ctx.identity = facts.identity;
    if (facts.toolAnnotations !== undefined) ctx.toolAnnotations = facts.toolAnnotations;
    let call: WhenCall | undefined;
    for (const r of rules) {
      const miss = mismatch(r, ctx, false);
      // A deny rule also matches principals a call declares after the verified ones: unknown here.
      if (miss === 'principalId' && r.effect === 'deny') return false;
      if (miss !== undefined) continue;
      if (r.modes !== undefined || !isStatic(r.when)) return false;
      if (r.when !== undefined) {
        call ??= new WhenCall(whenInput(ctx));
        const out = r.when.evaluate(call);
        if ('error' in out) return false;
        if (!out.value) continue;
      }
      return r.hide;
    }
    return false;
  };
}
