/**
 * The two-person rule (and more): a request whose policy rule asks for `approvers: N` runs only
 * after N distinct approvers approved it. Each approval is signed and recorded once per approver
 * (`store.approvalVotes`); none may come from the call's own chain, whatever the request allows for
 * a single approver. The approval that completes the count moves the request to `approved` through
 * the store's conditional update, with every approver named in `decidedBy` (a JSON list) and the
 * decision signed over that list, so the executor runs it once, on any replica; one rejection ends
 * the request as it does for one approver.
 */
import { ToolEnvelopeError, type ToolCall } from 'tool-envelope/core';
import type { OperatorKey } from '../store/operator-key.js';
import type { ApprovalRequest, Store } from '../store/types.js';
import { type ApprovalFacts, signApprovalDecision } from './approval-signature.js';

/**
 * What one approval of a multi-approver request did: completed the count (`won`, the request now
 * `approved`), or was recorded and more are needed (`waiting`); `undefined` when the request was
 * decided meanwhile (by another approver's completing approval, or a rejection).
 */
export type QuorumResult = { won: ApprovalRequest } | { waiting: { approvers: string[]; needed: number } } | undefined;

/**
 * Records `approver`'s signed approval of a request that needs `facts.approvers` distinct approvers,
 * and approves the request when it completes the count. Rejects `approval-forbidden` for a principal
 * of the call's chain.
 */
export async function approveQuorum(
  store: Store,
  key: OperatorKey,
  a: ApprovalRequest,
  call: ToolCall,
  facts: ApprovalFacts,
  decision: { approver: string; reason?: string | null },
  now: number,
): Promise<QuorumResult> {
  const approver = decision.approver;
  // The second person must be a second person: never the caller, even where one approver could be.
  if (call.principalChain.some((p) => approver === `${p.kind}:${p.id}` || approver === p.id)) {
    throw new ToolEnvelopeError('approval-forbidden', `${approver} is in the principal chain of the call and may not approve it`);
  }
  const vote = { approvalId: a.id, approver, at: now, reason: decision.reason ?? null, signature: signApprovalDecision(key, facts, approver) };
  const { added, approvers } = await store.approvalVotes.add(vote);
  // Not recorded and not among the votes: the request is no longer pending.
  if (!added && !approvers.includes(approver)) return undefined;
  if (approvers.length < facts.approvers) return { waiting: { approvers, needed: facts.approvers } };
  // The first N in the order recorded: every approver who sees the count complete names the same list.
  const by = JSON.stringify(approvers.slice(0, facts.approvers));
  const won = await store.transitionApproval(a.id, 'pending', 'approved', {
    at: now,
    by,
    reason: decision.reason ?? null,
    signature: signApprovalDecision(key, facts, by),
  });
  return won ? { won } : undefined;
}
