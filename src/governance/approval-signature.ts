/**
 * Signed approvals. Two HMAC signatures with the operator key guard an approval request:
 *
 * - the **request signature**, made when the call pauses, over the approval id, tool, a digest of
 *   the arguments and principal chain, the effective mode and the expiry: editing the stored call
 *   (arguments, tool, chain) or inserting a row by hand breaks it;
 * - the **decision signature**, made by the approving side, over the same facts plus the approver:
 *   an `approved` state written without the key does not verify.
 *
 * The executor runs a request only when both verify against the call it is about to run.
 */
import { createHash } from 'node:crypto';
import type { JsonObject, ToolCall } from 'tool-envelope/core';
import type { OperatorKey } from '../store/operator-key.js';
import type { ApprovalRequest } from '../store/types.js';
import { canonicalJson } from './idempotency.js';

/** The facts an approval signature binds. */
export interface ApprovalFacts {
  id: string;
  tool: string;
  /** {@link callDigest} of the paused call. */
  digest: string;
  /** The effective mode the call was granted. */
  mode: string;
  expiresAt: number | null;
  /** May a principal of the call's own chain approve it (the policy's answer when the call paused)? */
  selfApproval: boolean;
  /** How many distinct approvers must approve it (the policy rule's `approvers`, default 1). */
  approvers: number;
}

/**
 * SHA-256 over the canonical JSON of what the executor will run: the arguments, the capability
 * and the principal chain of the call.
 */
export function callDigest(call: Pick<ToolCall, 'args' | 'capabilityId' | 'principalChain'>): string {
  const doc = { args: call.args, capability: call.capabilityId, chain: call.principalChain } as unknown as JsonObject;
  return `sha256:${createHash('sha256').update(canonicalJson(doc)).digest('hex')}`;
}

function lines(kind: string, f: ApprovalFacts, extra: string[]): string {
  // Length-prefixed fields: no value can shift into its neighbour. The approvers count is signed only
  // when above one, so the signatures of every request made before it existed still verify.
  const quorum = f.approvers > 1 ? [`approvers:${f.approvers}`] : [];
  return [
    kind,
    f.id,
    f.tool,
    f.digest,
    f.mode,
    f.expiresAt === null ? 'never' : String(f.expiresAt),
    f.selfApproval ? 'self-ok' : 'no-self',
    ...quorum,
    ...extra,
  ]
    .map((v) => `${v.length}:${v}`)
    .join('\n');
}

/** Signs a new approval request. */
export function signApprovalRequest(key: OperatorKey, facts: ApprovalFacts): string {
  return `${key.id}.${key.sign(lines('tool-envelope/approval-request/v1', facts, []))}`;
}

/** Signs an approver's decision to approve a request. */
export function signApprovalDecision(key: OperatorKey, facts: ApprovalFacts, approver: string): string {
  return `${key.id}.${key.sign(lines('tool-envelope/approval-decision/v1', facts, [approver, 'approved']))}`;
}

function check(key: OperatorKey, signature: string | null | undefined, data: string): boolean {
  if (typeof signature !== 'string') return false;
  const dot = signature.indexOf('.');
  if (dot <= 0 || signature.slice(0, dot) !== key.id) return false;
  return key.verify(data, signature.slice(dot + 1));
}

/** The facts of a stored request, for signing or verifying, with the digest of the call it holds. */
export function approvalFacts(a: Pick<ApprovalRequest, 'id' | 'tool' | 'expiresAt' | 'policyDecision'>, call: ToolCall): ApprovalFacts {
  return {
    id: a.id,
    tool: a.tool,
    digest: callDigest(call),
    mode: call.approvalModeEffective,
    expiresAt: a.expiresAt,
    selfApproval: a.policyDecision?.selfApproval === true,
    approvers: approversNeeded(a.policyDecision?.approvers),
  };
}

/** How many distinct approvers a request needs, from its decision's `approvers` (1 unless an integer above 1). */
export function approversNeeded(v: unknown): number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 1 ? v : 1;
}

/**
 * The approvers a multi-approver decision names (`decidedBy` holds them as a JSON list), or
 * undefined when it is not such a list of distinct non-empty names.
 */
export function quorumApprovers(decidedBy: string | null): string[] | undefined {
  if (decidedBy === null || !decidedBy.startsWith('[')) return undefined;
  let list: unknown;
  try {
    list = JSON.parse(decidedBy);
  } catch {
    return undefined;
  }
  if (!Array.isArray(list) || !list.every((x) => typeof x === 'string' && x !== '') || new Set(list).size !== list.length) return undefined;
  return list as string[];
}

/** Why a stored request may not run (`undefined`: both signatures verify for this call). */
export function verifyApproval(key: OperatorKey, a: ApprovalRequest, call: ToolCall, needDecision = true): string | undefined {
  const facts = approvalFacts(a, call);
  if (!a.requestSignature) return 'the request is not signed';
  if (!check(key, a.requestSignature, lines('tool-envelope/approval-request/v1', facts, []))) {
    return 'the request signature does not match the stored call (edited, inserted, or signed with another key)';
  }
  if (!needDecision) return undefined;
  if (!a.decisionSignature) return 'the approval is not signed by an approver';
  if (a.decidedBy === null || !check(key, a.decisionSignature, lines('tool-envelope/approval-decision/v1', facts, [a.decidedBy, 'approved']))) {
    return 'the approval signature does not verify (approver, call or key differ)';
  }
  if (facts.approvers > 1 && (quorumApprovers(a.decidedBy)?.length ?? 0) < facts.approvers) {
    return `the request needs ${facts.approvers} distinct approvers and the approval names fewer`;
  }
  return undefined;
}
