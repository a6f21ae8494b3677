/**
 * Approval policy, as ContextOS defines it: five ordered modes
 * (`read_only < local_write < network < delegated < destructive`); each tool declares its ceiling;
 * each call asks for a mode; a policy (a plain function, or declarative rules from a JSON or YAML
 * file) resolves the effective mode and a decision id. Everything fails closed: an unknown mode,
 * a call above the ceiling, a policy that throws or answers something invalid all give `deny`.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { ToolEnvelopeError, type Issue } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { isJsonObject } from '../core/json.js';
import type { Principal } from '../core/model.js';
import { APPROVAL_MODES, type ApprovalMode, PRINCIPAL_KINDS, compareApprovalModes, isApprovalMode, isPrincipalKind } from '../core/taxonomy.js';

/**
 * What a policy decides: run (`allow`), stop (`deny` → `blocked`), or wait for an approver
 * (`require-approval` → `paused`).
 *
 * @example
 * ```ts
 * const e: PolicyEffect = 'require-approval';
 * ```
 */
export type PolicyEffect = 'allow' | 'deny' | 'require-approval';

/**
 * The facts a policy sees about one call.
 *
 * @example
 * ```ts
 * const ctx: PolicyContext = { tool: 'fs.write', ceiling: 'local_write', requested: 'local_write', args: {},
 *   principalChain: [{ kind: 'user', id: 'u1' }], evidenceRefs: [], idempotencyKey: 'k1', riskTags: [], now: Date.now() };
 * ```
 */
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
}

/**
 * What a policy function answers. `mode` may lower the effective mode below the requested one; it
 * may never raise it (an answer that tries is invalid, so the call is blocked).
 *
 * @example
 * ```ts
 * const v: PolicyVerdict = { effect: 'allow', mode: 'read_only', reason: 'dry run only' };
 * ```
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
}

/**
 * A policy as a plain function (sync or async).
 *
 * @example
 * ```ts
 * const onlyReads: PolicyFunction = (ctx) => ctx.requested === 'read_only' ? { effect: 'allow' } : { effect: 'deny', reason: 'reads only' };
 * ```
 */
export type PolicyFunction = (ctx: PolicyContext) => PolicyVerdict | Promise<PolicyVerdict>;

/**
 * The resolved decision, recorded with the call and its result.
 *
 * @example
 * ```ts
 * const d = await resolveApproval({ tool: 't', ceiling: 'read_only', requested: 'read_only', principalChain: [] });
 * d.effect; // 'allow'
 * ```
 */
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
  [extra: string]: unknown;
}

/**
 * Input of {@link resolveApproval}.
 *
 * @example
 * ```ts
 * const input: ResolveApprovalInput = { tool: 'fs.rm', ceiling: 'destructive', requested: 'destructive', principalChain: [] };
 * ```
 */
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
  /** Default: {@link defaultPolicy}. */
  policy?: Policy;
  now?: number;
  /** Decision id factory (default `pd_<uuid>`). */
  newId?: () => string;
}

/**
 * A policy: a function, or compiled declarative rules (see {@link compilePolicy}).
 *
 * @example
 * ```ts
 * const p: Policy = compilePolicy({ version: 1, rules: [{ match: { tool: 'fs.*' }, effect: 'allow' }] });
 * ```
 */
export type Policy = PolicyFunction | CompiledPolicy;

/**
 * Rules compiled from a policy document; call {@link CompiledPolicy.evaluate} or pass it as a policy.
 *
 * @example
 * ```ts
 * const p = compilePolicy(doc); p.evaluate(ctx);
 * ```
 */
export interface CompiledPolicy {
  readonly kind: 'rules';
  readonly document: PolicyDocument;
  evaluate(ctx: PolicyContext): PolicyVerdict;
}

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

// ---------------------------------------------------------------------------------------------
// Declarative rules

/**
 * Conditions of a rule; every given one must hold. Globs use `*` for any run of characters.
 *
 * @example
 * ```ts
 * const m: RuleMatch = { tool: ['fs.*', 'git.*'], mode: ['local_write'], principalId: 'u-*' };
 * ```
 */
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
 *
 * @example
 * ```ts
 * const r: PolicyRule = { name: 'http', match: { mode: 'network' }, effect: 'allow',
 *   egress: { allow: ['api.example.com', '*.internal'], argPaths: ['url'] }, rateBudget: { calls: 60, perMs: 60_000 } };
 * ```
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
  /** Hosts the call may reach: taken from `args` at `argPaths` (URLs or host names) and `metadata.egress`. */
  egress?: { allow: string[]; argPaths?: string[] };
  /** At most `calls` allowed calls per `perMs` window, per `scope` (default `tool`); counted in this process. */
  rateBudget?: { calls: number; perMs: number; scope?: 'tool' | 'principal' | 'global' };
}

/**
 * A policy document (the JSON or YAML file format).
 *
 * @example
 * ```ts
 * const doc: PolicyDocument = { version: 1, default: 'builtin', rules: [{ match: { tool: 'danger.*' }, effect: 'deny' }] };
 * ```
 */
export interface PolicyDocument {
  version: 1;
  /** When no rule matches: `builtin` (the ContextOS per-mode defaults, the default), or a fixed effect. */
  default?: 'builtin' | PolicyEffect;
  rules?: PolicyRule[];
  /** Options of the built-in per-mode defaults. */
  builtin?: BuiltinPolicyOptions;
}

/**
 * Options of the built-in per-mode defaults.
 *
 * @example
 * ```ts
 * const o: BuiltinPolicyOptions = { egress: { allow: ['api.example.com'], argPaths: ['url'] }, rateBudget: { calls: 100, perMs: 60_000 } };
 * ```
 */
export interface BuiltinPolicyOptions {
  /** Egress allow-list for `network` calls (absent: unrestricted). */
  egress?: PolicyRule['egress'];
  /** Rate budget for `network` calls (absent: unlimited). */
  rateBudget?: PolicyRule['rateBudget'];
}

function globToRegExp(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .split('*')
      .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  );
}

function list<T>(v: T | T[] | undefined): T[] | undefined {
  return v === undefined ? undefined : Array.isArray(v) ? v : [v];
}

function get(obj: JsonObject, dotted: string): unknown {
  let cur: unknown = obj;
  for (const part of dotted.split('.')) {
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

/** The hosts a call reaches, from its arguments and `metadata.egress`. */
function egressHosts(ctx: PolicyContext, argPaths: readonly string[]): string[] {
  const hosts: string[] = [];
  const add = (v: unknown): void => {
    if (typeof v === 'string') hosts.push(hostOf(v));
    else if (Array.isArray(v)) v.forEach(add);
  };
  for (const p of argPaths) add(get(ctx.args, p));
  if (ctx.metadata) add(ctx.metadata.egress);
  return hosts;
}

class RateBudget {
  private readonly windows = new Map<string, number[]>();
  constructor(
    private readonly calls: number,
    private readonly perMs: number,
  ) {}
  take(key: string, now: number): boolean {
    const times = (this.windows.get(key) ?? []).filter((t) => t > now - this.perMs);
    if (times.length >= this.calls) {
      this.windows.set(key, times);
      return false;
    }
    times.push(now);
    this.windows.set(key, times);
    return true;
  }
}

interface Requirements {
  requireIdempotencyKey?: boolean;
  requireUserDelegation?: boolean;
  requireEvidence?: boolean;
  egress?: PolicyRule['egress'];
  rateBudget?: PolicyRule['rateBudget'];
}

/** Checks a rule's requirements; returns the reason of the first that fails. Takes a rate token last. */
function unmet(req: Requirements, ctx: PolicyContext, budget: RateBudget | undefined): string | undefined {
  if (req.requireIdempotencyKey && !ctx.idempotencyKey) return 'an idempotency key is required';
  if (req.requireUserDelegation) {
    const head = ctx.principalChain[0];
    if (!head || head.kind !== 'user' || typeof head.id !== 'string' || head.id === '') {
      return 'a valid user delegation is required: the principal chain must start with a user';
    }
    // A delegation counts only when it was granted to a verified identity, never when the caller declares it.
    if ((ctx.verifiedPrincipals ?? ctx.principalChain.length) < 1) {
      return 'a valid user delegation is required: the user at the head of the chain is not verified';
    }
  }
  if (req.requireEvidence && ctx.evidenceRefs.length === 0) return 'per-call evidence is required (evidence_refs is empty)';
  if (req.egress) {
    const hosts = egressHosts(ctx, req.egress.argPaths ?? []);
    if (hosts.length === 0) return 'egress target unknown: no host found in the call';
    const allowed = req.egress.allow.map((g) => globToRegExp(g.toLowerCase()));
    const bad = hosts.find((h) => !allowed.some((re) => re.test(h)));
    if (bad !== undefined) return `egress to ${bad} is not in the allow-list`;
  }
  if (budget && req.rateBudget) {
    const scope = req.rateBudget.scope ?? 'tool';
    const key = scope === 'global' ? '*' : scope === 'principal' ? ctx.principalChain.map((p) => `${p.kind}:${p.id}`).join('>') : ctx.tool;
    if (!budget.take(key, ctx.now)) return `rate budget exhausted (${req.rateBudget.calls} calls per ${req.rateBudget.perMs} ms)`;
  }
  return undefined;
}

function builtinVerdict(ctx: PolicyContext, opts: BuiltinPolicyOptions, budget: RateBudget | undefined): PolicyVerdict {
  const rule = `builtin:${ctx.requested}`;
  const deny = (reason: string): PolicyVerdict => ({ effect: 'deny', reason: `${ctx.requested}: ${reason}`, rule });
  switch (ctx.requested) {
    case 'read_only':
      return { effect: 'allow', reason: 'read_only: allow with audit', rule };
    case 'local_write':
      // The idempotency key itself is enforced by the runtime (a missing key is an invalid argument, not a policy denial).
      return { effect: 'allow', reason: 'local_write: allow with idempotency key and audit', rule };
    case 'network': {
      const why = unmet({ ...(opts.egress && { egress: opts.egress }), ...(opts.rateBudget && { rateBudget: opts.rateBudget }) }, ctx, budget);
      return why ? deny(why) : { effect: 'allow', reason: 'network: allow within the egress allow-list and rate budget', rule };
    }
    case 'delegated': {
      const why = unmet({ requireUserDelegation: true, requireEvidence: true }, ctx, undefined);
      return why ? deny(why) : { effect: 'allow', reason: 'delegated: valid user delegation with per-call evidence', rule };
    }
    case 'destructive':
      return { effect: 'require-approval', reason: 'destructive: does not run until an approval gate signs it', rule };
  }
}

// --- document validation ---

const MODE_LIST = APPROVAL_MODES.join(', ');

function checkDocument(doc: unknown): Issue[] {
  const issues: Issue[] = [];
  const issue = (path: string, message: string): void => void issues.push({ code: 'invalid-policy', path, message });
  const allowedKeys = (obj: Record<string, unknown>, keys: string[], path: string): void => {
    for (const k of Object.keys(obj)) if (!keys.includes(k)) issue(`${path}/${k}`, `unknown property ${JSON.stringify(k)}`);
  };
  const strings = (v: unknown, path: string, pred: (s: string) => boolean = () => true, what = 'a string'): void => {
    const items = Array.isArray(v) ? v : [v];
    if (Array.isArray(v) && v.length === 0) issue(path, 'must not be an empty list');
    items.forEach((s, i) => {
      if (typeof s !== 'string' || !pred(s)) issue(Array.isArray(v) ? `${path}/${i}` : path, `must be ${what}`);
    });
  };
  const posInt = (v: unknown, path: string): void => {
    if (!Number.isInteger(v) || (v as number) < 1) issue(path, 'must be a positive integer');
  };
  const checkEgress = (e: unknown, path: string): void => {
    if (!isJsonObject(e)) return issue(path, 'must be an object');
    allowedKeys(e, ['allow', 'argPaths'], path);
    if (!Array.isArray(e.allow)) issue(`${path}/allow`, 'must be a list of host globs');
    else strings(e.allow, `${path}/allow`);
    if (e.argPaths !== undefined) strings(e.argPaths, `${path}/argPaths`);
  };
  const checkRate = (r: unknown, path: string): void => {
    if (!isJsonObject(r)) return issue(path, 'must be an object');
    allowedKeys(r, ['calls', 'perMs', 'scope'], path);
    posInt(r.calls, `${path}/calls`);
    posInt(r.perMs, `${path}/perMs`);
    if (r.scope !== undefined && !['tool', 'principal', 'global'].includes(r.scope as string)) issue(`${path}/scope`, 'must be tool, principal or global');
  };
  if (!isJsonObject(doc)) return [{ code: 'invalid-policy', path: '', message: 'a policy document must be an object' }];
  allowedKeys(doc, ['version', 'default', 'rules', 'builtin'], '');
  if (doc.version !== 1) issue('/version', 'must be 1');
  if (doc.default !== undefined && !['builtin', ...EFFECTS].includes(doc.default as string)) {
    issue('/default', `must be builtin, ${EFFECTS.join(', ')}`);
  }
  if (doc.builtin !== undefined) {
    if (!isJsonObject(doc.builtin)) issue('/builtin', 'must be an object');
    else {
      allowedKeys(doc.builtin, ['egress', 'rateBudget'], '/builtin');
      if (doc.builtin.egress !== undefined) checkEgress(doc.builtin.egress, '/builtin/egress');
      if (doc.builtin.rateBudget !== undefined) checkRate(doc.builtin.rateBudget, '/builtin/rateBudget');
    }
  }
  if (doc.rules !== undefined && !Array.isArray(doc.rules)) issue('/rules', 'must be a list');
  (Array.isArray(doc.rules) ? doc.rules : []).forEach((rule: unknown, i: number) => {
    const p = `/rules/${i}`;
    if (!isJsonObject(rule)) return issue(p, 'must be an object');
    allowedKeys(
      rule,
      [
        'name',
        'match',
        'effect',
        'mode',
        'reason',
        'requireIdempotencyKey',
        'requireUserDelegation',
        'requireEvidence',
        'selfApproval',
        'egress',
        'rateBudget',
      ],
      p,
    );
    if (!EFFECTS.includes(rule.effect as PolicyEffect)) issue(`${p}/effect`, `must be one of ${EFFECTS.join(', ')}`);
    if (rule.mode !== undefined && !isApprovalMode(rule.mode)) issue(`${p}/mode`, `must be one of ${MODE_LIST}`);
    for (const k of ['name', 'reason'] as const) if (rule[k] !== undefined && typeof rule[k] !== 'string') issue(`${p}/${k}`, 'must be a string');
    for (const k of ['requireIdempotencyKey', 'requireUserDelegation', 'requireEvidence', 'selfApproval'] as const) {
      if (rule[k] !== undefined && typeof rule[k] !== 'boolean') issue(`${p}/${k}`, 'must be true or false');
    }
    if (rule.egress !== undefined) checkEgress(rule.egress, `${p}/egress`);
    if (rule.rateBudget !== undefined) checkRate(rule.rateBudget, `${p}/rateBudget`);
    if (rule.match !== undefined) {
      if (!isJsonObject(rule.match)) return issue(`${p}/match`, 'must be an object');
      const m = rule.match;
      allowedKeys(m, ['tool', 'mode', 'principalKind', 'principalId', 'tenant', 'riskTag'], `${p}/match`);
      if (m.tool !== undefined) strings(m.tool, `${p}/match/tool`);
      if (m.mode !== undefined) strings(m.mode, `${p}/match/mode`, isApprovalMode, `one of ${MODE_LIST}`);
      if (m.principalKind !== undefined) {
        strings(m.principalKind, `${p}/match/principalKind`, isPrincipalKind, `one of ${PRINCIPAL_KINDS.join(', ')}`);
      }
      for (const k of ['principalId', 'tenant', 'riskTag'] as const) if (m[k] !== undefined) strings(m[k], `${p}/match/${k}`);
    }
  });
  return issues;
}

function matches(m: RuleMatch | undefined, ctx: PolicyContext, effect: PolicyEffect): boolean {
  if (!m) return true;
  const anyGlob = (globs: string[] | undefined, values: string[]): boolean =>
    globs === undefined || globs.some((g) => values.some((v) => globToRegExp(g).test(v)));
  // A deny rule matches any entry of the chain; a rule that grants (allow, approval) only the verified
  // ones, so that a principal the caller merely declares can trigger a refusal but never a grant.
  const verified = effect === 'deny' ? ctx.principalChain.length : (ctx.verifiedPrincipals ?? ctx.principalChain.length);
  const head = verified > 0 || effect === 'deny' ? ctx.principalChain[0] : undefined;
  return (
    anyGlob(list(m.tool), [ctx.tool]) &&
    (list(m.mode) === undefined || list(m.mode)!.includes(ctx.requested)) &&
    (list(m.principalKind) === undefined || (head !== undefined && list(m.principalKind)!.includes(head.kind))) &&
    anyGlob(
      list(m.principalId),
      ctx.principalChain.slice(0, verified).map((p) => p.id),
    ) &&
    (list(m.tenant) === undefined || (head?.tenant_id !== undefined && list(m.tenant)!.includes(head.tenant_id))) &&
    anyGlob(list(m.riskTag), [...ctx.riskTags])
  );
}

/**
 * Compiles a policy document into a policy. Throws `invalid-option` with located issues for a bad
 * document (unknown keys, unknown modes, bad effects): a policy that cannot be read never half-applies.
 *
 * @example
 * ```ts
 * const policy = compilePolicy({
 *   version: 1,
 *   rules: [
 *     { name: 'no-prod-deletes', match: { tool: 'db.*', mode: 'destructive', tenant: 'prod' }, effect: 'deny' },
 *     { name: 'http', match: { mode: 'network' }, effect: 'allow', egress: { allow: ['api.example.com'], argPaths: ['url'] } },
 *   ],
 * });
 * ```
 */
export function compilePolicy(document: unknown): CompiledPolicy {
  const issues = checkDocument(document);
  if (issues.length > 0) {
    throw new ToolEnvelopeError('invalid-option', `invalid policy document: ${issues.map((i) => `${i.path || '/'} ${i.message}`).join('; ')}`, { issues });
  }
  const doc = document as PolicyDocument;
  const rules = (doc.rules ?? []).map((rule) => ({
    rule,
    budget: rule.rateBudget ? new RateBudget(rule.rateBudget.calls, rule.rateBudget.perMs) : undefined,
  }));
  const builtin = doc.builtin ?? {};
  const builtinBudget = builtin.rateBudget ? new RateBudget(builtin.rateBudget.calls, builtin.rateBudget.perMs) : undefined;
  const fallback = doc.default ?? 'builtin';
  return Object.freeze({
    kind: 'rules' as const,
    document: doc,
    evaluate(ctx: PolicyContext): PolicyVerdict {
      for (const [i, { rule, budget }] of rules.entries()) {
        if (!matches(rule.match, ctx, rule.effect)) continue;
        const name = rule.name ?? `rules[${i}]`;
        const why = unmet(rule, ctx, rule.effect === 'allow' ? budget : undefined);
        if (why !== undefined) return { effect: 'deny', reason: `${name}: ${why}`, rule: name };
        return {
          effect: rule.effect,
          ...(rule.mode && { mode: rule.mode }),
          reason: rule.reason ?? `${name}: ${rule.effect}`,
          rule: name,
          ...(rule.selfApproval === true && rule.effect === 'require-approval' && { selfApproval: true }),
        };
      }
      if (fallback === 'builtin') return builtinVerdict(ctx, builtin, builtinBudget);
      return { effect: fallback, reason: `no rule matched: default ${fallback}`, rule: 'default' };
    },
  });
}

/**
 * The ContextOS default treatment by mode: `read_only` allow with audit; `local_write` allow (the
 * runtime requires the idempotency key); `network` allow (give an egress allow-list and rate budget
 * with {@link createDefaultPolicy}); `delegated` only with a user at the head of the principal chain
 * and per-call evidence refs; `destructive` waits for an approval gate.
 *
 * @example
 * ```ts
 * await resolveApproval({ tool: 't', ceiling: 'delegated', requested: 'delegated', principalChain: [{ kind: 'agent', id: 'a' }], policy: defaultPolicy });
 * // → deny: a valid user delegation is required
 * ```
 */
export const defaultPolicy: CompiledPolicy = compilePolicy({ version: 1 });

/**
 * The built-in defaults with an egress allow-list and a rate budget for `network` calls.
 *
 * @example
 * ```ts
 * const policy = createDefaultPolicy({ egress: { allow: ['*.example.com'], argPaths: ['url'] }, rateBudget: { calls: 60, perMs: 60_000 } });
 * ```
 */
export function createDefaultPolicy(options: BuiltinPolicyOptions = {}): CompiledPolicy {
  return compilePolicy({ version: 1, builtin: options });
}

/**
 * Loads a policy document from a `.json`, `.yaml` or `.yml` file and compiles it.
 * Throws `invalid-json` for unreadable syntax and `invalid-option` for a bad document.
 *
 * @example
 * ```ts
 * const policy = await loadPolicyFile('./policy.yaml');
 * const runtime = createGovernedRuntime({ ..., policy });
 * ```
 */
export async function loadPolicyFile(file: string): Promise<CompiledPolicy> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new ToolEnvelopeError('invalid-option', `cannot read policy file ${file}: ${describeError(e)}`, { cause: e });
  }
  return parsePolicy(text, /\.ya?ml$/i.test(file) ? 'yaml' : 'json', file);
}

/**
 * Parses and compiles policy text (JSON or YAML).
 *
 * @example
 * ```ts
 * const policy = parsePolicy('version: 1\nrules:\n  - match: { tool: "fs.*" }\n    effect: allow\n', 'yaml');
 * ```
 */
export function parsePolicy(text: string, format: 'json' | 'yaml', source = 'policy'): CompiledPolicy {
  let doc: unknown;
  if (format === 'yaml') {
    // YAML 1.2 core schema: no custom tags, so a file cannot construct arbitrary objects; an
    // unknown tag is refused rather than read as a plain string.
    // Loaded on first use so that importing the runtime does not load a YAML parser.
    const { parseDocument } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
    const parsed = parseDocument(text, { schema: 'core', logLevel: 'silent' });
    if (parsed.errors.length > 0) {
      throw new ToolEnvelopeError('invalid-json', `${source}: cannot parse yaml: ${parsed.errors.map((e) => e.message).join('; ')}`);
    }
    if (parsed.warnings.length > 0) {
      throw new ToolEnvelopeError('invalid-option', `${source}: ${parsed.warnings.map((w) => w.message).join('; ')}`);
    }
    try {
      doc = parsed.toJS({ maxAliasCount: 100 });
    } catch (e) {
      throw new ToolEnvelopeError('invalid-json', `${source}: cannot read yaml: ${describeError(e)}`, { cause: e });
    }
  } else {
    try {
      doc = JSON.parse(text);
    } catch (e) {
      throw new ToolEnvelopeError('invalid-json', `${source}: cannot parse json: ${describeError(e)}`, { cause: e });
    }
  }
  return compilePolicy(doc);
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
