/**
 * What the inbox's script polls (`inbox/updates`): the current state of the requests shown on the
 * page, said as an approver needs it (another approver's decision, an expiry, an approval that no
 * gateway has run yet), and the newest requests waiting, so the page can say new ones came.
 * Requests the identity may not see are left out, exactly as missing ones.
 */
import { quorumApprovers } from '../governance/approval-signature.js';
import type { ApprovalRequest, Store } from '../store/types.js';
import type { ConsoleIdentity } from './identity.js';
import { marked } from './inert.js';
import { visibleTo } from './tenancy.js';

const MAX_IDS = 50;
const WAITING = 25;

/** One request's state as the inbox shows it. */
export interface RequestUpdate {
  /** The stored state, except `expired` for a pending request past its expiry. */
  state: string;
  text: string;
}

/**
 * Who decided, as the CLI says it: a multi-approver decision's `decidedBy` is a JSON list of its
 * approvers, named one after another.
 */
export function decidersOf(decidedBy: string | null): string | null {
  return quorumApprovers(decidedBy)?.join(', ') ?? decidedBy;
}

function by(a: ApprovalRequest): string {
  const deciders = decidersOf(a.decidedBy);
  const who = deciders ? ` by ${marked(deciders, 500)}` : '';
  const why = a.decisionReason ? ` (${marked(a.decisionReason, 500)})` : '';
  return `${who}${why}`;
}

/** A request's state as the inbox says it. */
export function updateOf(a: ApprovalRequest, now: number): RequestUpdate {
  switch (a.state) {
    case 'pending':
      return a.expiresAt !== null && a.expiresAt <= now
        ? { state: 'expired', text: 'Expired: it can no longer be approved.' }
        : { state: 'pending', text: 'Waiting for a decision.' };
    case 'approved':
      return { state: 'approved', text: `Approved${by(a)}, not yet run: no gateway serving this store has run it yet.` };
    case 'completed':
      return { state: 'completed', text: `Approved${by(a)} and run.` };
    case 'failed':
      return { state: 'failed', text: `Approved${by(a)}; its run failed.` };
    case 'rejected':
      return { state: 'rejected', text: `Rejected${by(a)}.` };
    case 'expired':
      return { state: 'expired', text: 'Expired: it can no longer be approved.' };
  }
}

/** The JSON of `inbox/updates?ids=a,b`. */
export async function inboxUpdates(store: Store, who: ConsoleIdentity, query: URLSearchParams): Promise<string> {
  const now = Date.now();
  const ids = [...new Set((query.get('ids') ?? '').split(',').filter((id) => id !== '' && id.length <= 200))].slice(0, MAX_IDS);
  const requests: Record<string, RequestUpdate> = {};
  for (const id of ids) {
    const a = await store.getApproval(id);
    if (a && visibleTo(who, a.principalChain)) requests[id] = updateOf(a, now);
  }
  const waiting: string[] = [];
  let cursor: string | null = null;
  // The first page of waiting requests the identity may see (a few store pages at most).
  for (let i = 0; i < 4 && waiting.length < WAITING; i++) {
    const p = await store.listApprovals({ state: 'pending', limit: WAITING, cursor });
    for (const a of p.approvals) if (visibleTo(who, a.principalChain) && (a.expiresAt === null || a.expiresAt > now)) waiting.push(a.id);
    cursor = p.nextCursor;
    if (!cursor) break;
  }
  return JSON.stringify({ requests, waiting: waiting.slice(0, WAITING) });
}
