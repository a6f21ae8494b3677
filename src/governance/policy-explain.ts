/**
 * Asking a policy about a call before deploying it: `explainCall` (the decision the pipeline would
 * record, and how each rule fared) and `runPolicyTests` (a document's own test cases). Both decide
 * through `resolveCompiledApproval`, the function the governance pipeline decides with, so what
 * they say is what the pipeline does.
 */
import { type ApprovalMode, isApprovalMode, type JsonObject, ToolEnvelopeError } from 'tool-envelope/core';
import { executionGate, resolveCompiledApproval } from './policy-resolve.js';
import type { CompiledPolicy, PolicyDecision, PolicyExplanation, PolicyTestCall, ResolveApprovalInput } from './policy-types.js';

/** A decision with its explanation (`undefined` when the modes alone decided, before any rule). */
export interface CallExplanation {
  decision: PolicyDecision;
  explanation: PolicyExplanation | undefined;
  /** With `allow`: why the call still does not run (the tool needs a mode above the effective one), as the gateway blocks it. */
  gate?: string;
}

/**
 * The pipeline's input for a test call. `now` must be an ISO 8601 time (an unreadable one throws
 * a RangeError naming it).
 */
export function resolveInputOf(call: PolicyTestCall): ResolveApprovalInput {
  const ceiling: ApprovalMode = call.ceiling ?? call.mode ?? 'read_only';
  let now = Date.now();
  if (call.now !== undefined) {
    now = Date.parse(call.now);
    if (!Number.isFinite(now)) throw new RangeError(`now: ${JSON.stringify(call.now)} is not an ISO 8601 time`);
  }
  const input: ResolveApprovalInput = {
    tool: call.tool,
    ceiling,
    requested: call.mode ?? ceiling,
    principalChain: call.principalChain ?? [],
    args: call.args ?? ({} as JsonObject),
    evidenceRefs: call.evidenceRefs ?? [],
    idempotencyKey: call.idempotencyKey ?? null,
    riskTags: call.riskTags ?? [],
    now,
    newId: () => 'pd_explain',
  };
  if (call.verifiedPrincipals !== undefined) input.verifiedPrincipals = call.verifiedPrincipals;
  if (call.metadata !== undefined) input.metadata = call.metadata;
  if (call.identity !== undefined) input.identity = call.identity;
  if (call.sessionId !== undefined) input.sessionId = call.sessionId;
  if (call.toolAnnotations !== undefined) input.toolAnnotations = call.toolAnnotations;
  return input;
}

/**
 * What `policy` decides for `call` and why. Counts nothing: an allowed call's decision names the
 * budgets it would be counted against (`decision.budgets`), which only the pipeline counts.
 */
export function explainInput(policy: CompiledPolicy, input: ResolveApprovalInput): CallExplanation {
  let explanation: PolicyExplanation | undefined;
  const traced: CompiledPolicy = {
    kind: 'rules',
    document: policy.document,
    evaluate: (ctx) => {
      explanation = policy.explain(ctx);
      return explanation.verdict;
    },
    explain: (ctx) => policy.explain(ctx),
    digest: policy.digest,
    hides: (facts) => policy.hides(facts),
  };
  const decision = resolveCompiledApproval(input, traced);
  const result: CallExplanation = { decision, explanation };
  const gate = isApprovalMode(input.ceiling) ? executionGate(decision, input.ceiling) : undefined;
  if (gate !== undefined) result.gate = gate;
  return result;
}

/** {@link explainInput} for a call written as a test case or a `--call` file. */
export function explainCall(policy: CompiledPolicy, call: PolicyTestCall): CallExplanation {
  return explainInput(policy, resolveInputOf(call));
}

/** A failed test case of a policy document. */
export interface PolicyTestFailure {
  index: number;
  name: string;
  expected: string;
  actual: string;
  reason: string;
}

/** Runs the document's test cases against the policy (compiled from it); returns the failures. */
export function runPolicyTests(policy: CompiledPolicy): PolicyTestFailure[] {
  const failures: PolicyTestFailure[] = [];
  (policy.document.tests ?? []).forEach((t, index) => {
    const name = t.name ?? `tests[${index}]`;
    let actual: string;
    let reason: string;
    try {
      const { decision } = explainCall(policy, t.call);
      actual = decision.effect;
      reason = decision.reason;
    } catch (e) {
      actual = 'error';
      reason = (e as Error)?.message ?? String(e);
    }
    if (actual !== t.expect) failures.push({ index, name, expected: t.expect, actual, reason });
  });
  return failures;
}

/**
 * Throws `invalid-option` (an issue at `/tests/N` for each failing case) when any of the policy's
 * own test cases fails, worded as `policy check` words it: a policy put in force at start or on a
 * reload is one that `policy check` passes.
 */
export function assertPolicyTests(policy: CompiledPolicy, source: string): void {
  const failed = runPolicyTests(policy);
  if (failed.length === 0) return;
  const issues = failed.map((f) => ({ code: 'test', path: `/tests/${f.index}`, message: `${f.name}: expected ${f.expected}, got ${f.actual}: ${f.reason}` }));
  const shown = issues.slice(0, 10).map((i) => `${i.path} ${i.message}`);
  if (issues.length > shown.length) shown.push(`and ${issues.length - shown.length} more`);
  throw new ToolEnvelopeError('invalid-option', `${source}: ${failed.length} of its test cases fail: ${shown.join('; ')}`, { issues });
}
