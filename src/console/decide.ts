/**
 * A decision made on the console, as the signed-in identity: approving signs the decision with the
 * operator key exactly as the CLI does (`signAndApprove`: the request's own signature checked, a
 * principal of the call's chain refused unless the policy allowed self-approval, the store's
 * conditional update the gate among concurrent deciders); the gateway's approval runner then runs
 * the call once. Rejecting settles the request and logs its `rejected` record (`settleRejected`).
 */
import { isToolEnvelopeError } from 'tool-envelope/core';
import { settleRejected } from '../governance/approval-settle.js';
import { signAndApprove } from '../governance/approvals.js';
import type { OperatorKey } from '../store/operator-key.js';
import type { Store } from '../store/types.js';
import { type ConsoleIdentity, principalName } from './identity.js';
import { canDecide } from './inbox.js';
import { decidersOf } from './inbox-live.js';
import { visibleTo } from './tenancy.js';

/** What became of a decision: `approved`/`rejected` when this identity's decision took effect; else why not. */
export type DecisionResult =
  | { result: 'approved' | 'rejected' | 'expired' | 'recorded' }
  | { result: 'not-found' | 'forbidden' | 'not-pending' | 'invalid'; detail: string };

/** Decides request `id` as `who`. */
export async function decide(
  store: Store,
  operatorKey: () => Promise<OperatorKey>,
  who: ConsoleIdentity,
  id: string,
  decision: 'approve' | 'reject',
  reason: string | null,
  now = Date.now(),
): Promise<DecisionResult> {
  const a = await store.getApproval(id);
  // Another tenant's request is answered as absent: its id tells nothing.
  if (!a || !visibleTo(who, a.principalChain)) return { result: 'not-found', detail: `no approval request ${id}` };
  if (!canDecide(who)) return { result: 'forbidden', detail: `${principalName(who.principal)} is a viewer and cannot decide` };
  if (a.state !== 'pending')
    return { result: 'not-pending', detail: `request ${id} is ${a.state}${a.decidedBy ? ` (decided by ${decidersOf(a.decidedBy)})` : ''}` };
  const me = principalName(who.principal);
  if (a.expiresAt !== null && a.expiresAt <= now) {
    await settleRejected(store, a, 'expired', null, null, now);
    return { result: 'expired' };
  }
  if (decision === 'reject') {
    return (await settleRejected(store, a, 'rejected', me, reason, now))
      ? { result: 'rejected' }
      : { result: 'not-pending', detail: `request ${id} was decided by someone else meanwhile` };
  }
  try {
    const r = await signAndApprove(store, await operatorKey(), a, { approver: me, reason }, { now });
    if (!r) return { result: 'not-pending', detail: `request ${id} was decided by someone else meanwhile` };
    if ('invalid' in r) return { result: 'invalid', detail: `request ${id} cannot be approved: ${r.invalid}` };
    // A request that needs several distinct approvers (a quorum) records this approval and stays pending.
    if ('waiting' in r) return { result: 'recorded' };
    return { result: 'approved' };
  } catch (e) {
    if (isToolEnvelopeError(e, 'approval-forbidden')) return { result: 'forbidden', detail: e.message };
    throw e;
  }
}
