/**
 * The types of approval policy: what a policy sees about a call, what it answers, the decision the
 * pipeline records, and the declarative document format (JSON or YAML files, `policy.schema.json`).
 * The behaviour lives beside it: `policy-resolve.ts` (the decision), `policy-rules.ts` (the rule
 * language, compiled once per policy), `policy-load.ts` (documents: checking, compiling, files).
 */
import type { JsonObject, Principal, ApprovalMode } from 'tool-envelope/core';

/**
 * What a policy decides: run (`allow`), stop (`deny` → `blocked`), or wait for an approver
 * (`require-approval` → `paused`).
 */
export type PolicyEffect = 'allow' | 'deny' | 'require-approval';

/** The facts a policy sees about one call. */
export interface PolicyContext {
  tool: string;
  ceiling: ApprovalMode;
  requested: ApprovalMode;
  args: JsonObject;
  principalChain: readonly Principal[];
  /**
   * How many leading entries of `principalChain` were verified (by authentication or the operator);
   * the rest were declared by the caller. Default: all of them.
   */
  verifiedPrincipals?: number;
  evidenceRefs: readonly string[];
  idempotencyKey: string | null | undefined;
  authRef?: string | null;
  riskTags: readonly string[];
  metadata?: JsonObject;
  now: number;
  /** The verified identity, when authentication gave one (default: from the verified head of the chain). */
  identity?: PolicyIdentity;
  sessionId?: string;
  /** The tool's MCP annotations (`readOnlyHint`, ...), when the caller knows them. */
  toolAnnotations?: JsonObject;
}

/** The verified identity a policy condition sees as `identity` (from the tokens file or an OAuth JWT). */
export interface PolicyIdentity {
  /** `kind:id` of the verified principal. */
  principal: string;
  tenant?: string;
  roles?: readonly string[];
  claims?: JsonObject;
}

/**
 * What a policy function answers. `mode` may lower the effective mode below the requested one; it
 * may never raise it (an answer that tries is invalid, so the call is blocked).
 */
export interface PolicyVerdict {
  effect: PolicyEffect;
  mode?: ApprovalMode;
  reason?: string;
  /** Name of the rule that decided, for the audit log. */
  rule?: string;
  /**
   * With `require-approval`: the originating (verified) user may approve the call itself, e.g.
   * by confirming it in the client that made it.
   */
  selfApproval?: boolean;
  /** With `require-approval`: how many distinct approvers must approve the call (above 1: the two-person rule). */
  approvers?: number;
  /**
   * With `allow`: the budgets the call is counted against when it runs (the rule's rate budget and
   * quotas, keyed for this call). The pipeline counts them in the store, all or none, only for a
   * call about to execute, and refuses the call when one is full.
   */
  budgets?: BudgetUse[];
}

/**
 * What a call is counted per: its tool, its principal (the verified chain), its tenant (of the
 * verified head), or nothing (`global`, one count for every call the rule allows).
 */
export type BudgetScope = 'tool' | 'principal' | 'tenant' | 'global';

/**
 * One budget a call is counted against: at most `calls` per fixed window of `perMs` (aligned to
 * the epoch, so every replica computes the same window), under `key` (the rule, the budget and
 * the call's scope values). `name` says which, for the refusal and the audit log.
 */
export interface BudgetUse {
  key: string;
  calls: number;
  perMs: number;
  name: string;
}

/** A rate budget: at most `calls` allowed calls per `perMs` window, per `scope` (default `tool`). */
export interface RateBudget {
  calls: number;
  perMs: number;
  scope?: BudgetScope | BudgetScope[];
}

/** A quota: at most `calls` allowed calls per UTC minute, hour or day, per `scope` (default `tool`). */
export interface Quota {
  calls: number;
  per: 'minute' | 'hour' | 'day';
  scope?: BudgetScope | BudgetScope[];
}

/** A policy as a plain function (sync or async). */
export type PolicyFunction = (ctx: PolicyContext) => PolicyVerdict | Promise<PolicyVerdict>;

/** The resolved decision, recorded with the call and its result. */
export interface PolicyDecision {
  /** ContextOS `policy_decision_id`. */
  id: string;
  effect: PolicyEffect;
  /** The mode the call may run at; `null` when the decision failed closed before one was resolved. */
  effectiveMode: ApprovalMode | null;
  reason: string;
  rule?: string;
  ceiling: ApprovalMode | null;
  requested: ApprovalMode | null;
  principalChain: Principal[];
  /** How many leading entries of the chain were verified; the rest were declared by the caller. */
  verifiedPrincipals: number;
  decidedAt: number;
  /** With `allow`: the budgets the call is counted against when it runs (see {@link PolicyVerdict.budgets}). */
  budgets?: BudgetUse[];
  /** SHA-256 of the policy document that decided (a rule policy; set by the pipeline), for the audit log. */
  policyDigest?: string;
  [extra: string]: unknown;
}

export interface ResolveApprovalInput {
  tool: string;
  /** The tool's declared ceiling (`approval_mode_highest`). */
  ceiling: unknown;
  /** The mode the call asks for (`approval_mode_requested`). */
  requested: unknown;
  principalChain: readonly Principal[];
  /** How many leading entries of the chain were verified (default: all). */
  verifiedPrincipals?: number;
  args?: JsonObject;
  evidenceRefs?: readonly string[];
  idempotencyKey?: string | null;
  authRef?: string | null;
  riskTags?: readonly string[];
  metadata?: JsonObject;
  identity?: PolicyIdentity;
  sessionId?: string;
  toolAnnotations?: JsonObject;
  /** Default: {@link defaultPolicy}. */
  policy?: Policy;
  now?: number;
  /** Decision id factory (default `pd_<uuid>`). */
  newId?: () => string;
}

/** A policy: a function, or compiled declarative rules (see {@link compilePolicy}). */
export type Policy = PolicyFunction | CompiledPolicy;

/** Rules compiled from a policy document; call {@link CompiledPolicy.evaluate} or pass it as a policy. */
export interface CompiledPolicy {
  readonly kind: 'rules';
  readonly document: PolicyDocument;
  evaluate(ctx: PolicyContext): PolicyVerdict;
  /** The same decision as `evaluate`, with how each rule up to the deciding one fared (`policy explain`). */
  explain(ctx: PolicyContext): PolicyExplanation;
  /** SHA-256 (hex) of the canonical JSON of `document`: which policy decided, in the audit log. */
  readonly digest: string;
  /** True when a `hide` rule denies the tool outright for this caller (see {@link PolicyRule.hide}). */
  hides(facts: HideFacts): boolean;
}

/** What {@link CompiledPolicy.hides} knows of a caller before any call: the tool and who asks. */
export interface HideFacts {
  tool: string;
  toolAnnotations?: JsonObject;
  /** The verified chain (every entry verified). */
  principalChain: readonly Principal[];
  identity?: PolicyIdentity;
  riskTags?: readonly string[];
}

/**
 * How a compiled policy reached its verdict for one call: each rule it looked at, in order, up to
 * the one that decided (`deciding`, -1 when the default did).
 */
export interface PolicyExplanation {
  rules: RuleTrace[];
  deciding: number;
  verdict: PolicyVerdict;
}

/** One rule in a {@link PolicyExplanation}. */
export interface RuleTrace {
  index: number;
  name: string;
  /** Its `match` conditions and `when` all held. */
  matched: boolean;
  /** The first `match` condition that did not hold (`tool`, `mode`, `principalKind`, `principalId`, `tenant`, `riskTag`). */
  mismatch?: string;
  /** Its condition, when it has one and the `match` conditions held: the value, or the error (which denies). */
  when?: { source: string; value?: boolean; error?: string };
  /** The requirement that failed (which denies). */
  unmet?: string;
}

/** Conditions of a rule; every given one must hold. Globs use `*` for any run of characters. */
export interface RuleMatch {
  tool?: string | string[];
  /** Requested mode(s). */
  mode?: ApprovalMode | ApprovalMode[];
  /** Kind of the originating (first) principal. */
  principalKind?: Principal['kind'] | Principal['kind'][];
  /** Glob(s) one principal id in the chain must match. */
  principalId?: string | string[];
  /** Tenant of the originating principal. */
  tenant?: string | string[];
  /** A risk tag the tool carries. */
  riskTag?: string | string[];
}

/**
 * One declarative rule. The first rule that matches decides; its requirements must then hold or the
 * call is denied with the failed requirement as reason.
 */
export interface PolicyRule {
  name?: string;
  match?: RuleMatch;
  effect: PolicyEffect;
  /** Lowers the effective mode (never raises it). */
  mode?: ApprovalMode;
  reason?: string;
  /** The call must carry an idempotency key. */
  requireIdempotencyKey?: boolean;
  /** The originating principal must be a user (a valid user delegation). */
  requireUserDelegation?: boolean;
  /** The call must carry at least one evidence ref. */
  requireEvidence?: boolean;
  /** With `require-approval`: the originating verified user may approve it (from its client, by elicitation). */
  selfApproval?: boolean;
  /**
   * With `require-approval`: how many distinct approvers (1 to 10, default 1) must approve the call
   * before it runs, none from its own chain (`selfApproval` then does not apply); one rejection ends it.
   */
  approvers?: number;
  /** Hosts the call may reach: taken from `args` at `argPaths` (URLs or host names) and `metadata.egress`. */
  egress?: { allow: string[]; argPaths?: string[] };
  /**
   * At most `calls` allowed calls per `perMs` window, per `scope` (default `tool`); counted in the
   * store, so replicas on one store share it, and only for calls that run.
   */
  rateBudget?: RateBudget;
  /** Quotas (calls per UTC minute, hour or day), counted like `rateBudget`; a call needs room in all. */
  quotas?: Quota[];
  /**
   * On a deny rule: a caller it denies outright does not see the tool in `tools/list`, and a call to
   * it is answered as for a tool no upstream has. Outright: the rule, and every rule before it that
   * could apply, decides on the tool and the caller alone (no `match.mode`, a `when` naming only
   * `tool` and `identity`); anything that depends on the call's arguments leaves the tool listed.
   */
  hide?: boolean;
  /**
   * A CEL condition (cel.dev) the call must also meet for the rule to match, over `args`, `tool`,
   * `mode`, `chain`, `identity`, `session`, `riskTags`, `now` and the helpers `within`, `host`,
   * `glob`, `toNumber`. Checked when the policy is compiled; one that errs for a call denies it.
   */
  when?: string;
}

/**
 * One test case of a policy document: a call, and the effect the policy must decide for it
 * (`tool-envelope policy check` runs them).
 */
export interface PolicyTestCase {
  name?: string;
  call: PolicyTestCall;
  expect: PolicyEffect;
}

/**
 * A call as a policy test case or `policy explain --call` gives it. `mode` is the requested mode
 * (default: the ceiling, default `read_only`); `now` an ISO 8601 time (default: now);
 * `verifiedPrincipals` defaults to the whole chain.
 */
export interface PolicyTestCall {
  tool: string;
  ceiling?: ApprovalMode;
  mode?: ApprovalMode;
  args?: JsonObject;
  principalChain?: Principal[];
  verifiedPrincipals?: number;
  riskTags?: string[];
  evidenceRefs?: string[];
  idempotencyKey?: string;
  sessionId?: string;
  identity?: PolicyIdentity;
  toolAnnotations?: JsonObject;
  metadata?: JsonObject;
  now?: string;
}

/** A policy document (the JSON or YAML file format). */
export interface PolicyDocument {
  /** The schema an editor checks the file with (ignored). */
  $schema?: string;
  version: 1;
  /** When no rule matches: `builtin` (the ContextOS per-mode defaults, the default), or a fixed effect. */
  default?: 'builtin' | PolicyEffect;
  rules?: PolicyRule[];
  /** Options of the built-in per-mode defaults. */
  builtin?: BuiltinPolicyOptions;
  /**
   * Per tool, JSON pointers (under `/args` or `/result`) of values the audit log never stores: the
   * pipeline's audit writer redacts them (beside the secrets it always redacts).
   */
  redact?: Record<string, string[]>;
  /** Test cases `tool-envelope policy check` runs (ignored when the policy is enforced). */
  tests?: PolicyTestCase[];
}

/** Options of the built-in per-mode defaults. */
export interface BuiltinPolicyOptions {
  /** Egress allow-list for `network` calls (absent: unrestricted). */
  egress?: PolicyRule['egress'];
  /** Rate budget for `network` calls (absent: unlimited). */
  rateBudget?: PolicyRule['rateBudget'];
}
