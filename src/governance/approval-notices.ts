/**
 * The `rejected` and `expired` events of requests, each told once across every process on the
 * store. A request can be settled by a process that tells no one (the CLI, the console): the
 * gateway's approval worker then sees it settled and tells it. Whoever tells it first claims it (an
 * idempotency record keyed by the request id), so a request settled in a gateway, or seen by two
 * replicas, is told once.
 */
import { randomUUID } from 'node:crypto';
import type { ApprovalRequest, Store } from '../store/types.js';
import type { ApprovalEvents } from './approval-events.js';

/** How many of the newest settled requests one sweep looks at: a sweep runs every poll, so few are new. */
const SWEEP = 50;

/** The ids already told or passed over in this process, at most this many (the claim is the gate; this saves its write). */
const REMEMBERED = 1000;

/** Tells settled requests once. */
export class DecisionNotices {
  private readonly seen = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly events: ApprovalEvents,
  ) {}

  /**
   * Tells a request settled `rejected` or `expired` (`status`: what expired, `pending` or `approved`),
   * unless some process already told it. Never throws: a store that fails leaves it untold.
   */
  async notice(a: ApprovalRequest, at?: number): Promise<void> {
    if (a.state !== 'rejected' && a.state !== 'expired') return;
    this.remember(a.id);
    const key = `tool-envelope/approval-notice:${a.id}`;
    const claimToken = randomUUID();
    const now = Date.now();
    try {
      const claim = await this.store.claimIdempotency({ key, fingerprint: a.id, tool: a.tool, toolCallId: a.toolCallId, claimToken, createdAt: now });
      if (!claim.claimed) return;
      this.events.emit(a.state, a, { at: at ?? a.decidedAt ?? now, status: a.state === 'expired' ? expiredFrom(a) : null });
      await this.store.completeIdempotency(key, claimToken, { told: a.state }, now);
    } catch {
      // Telling is best effort; the request's state and its audit record are the facts.
    }
  }

  /** Tells the newest requests settled since `since` by anyone (the CLI, the console, another replica) and not told yet. */
  async sweep(since: number): Promise<void> {
    const { approvals } = await this.store.listApprovals({ state: ['rejected', 'expired'], limit: SWEEP });
    for (const a of approvals) {
      if (this.seen.has(a.id) || a.decidedAt === null || a.decidedAt < since) continue;
      await this.notice(a);
    }
  }

  private remember(id: string): void {
    this.seen.add(id);
    if (this.seen.size > REMEMBERED) this.seen.delete(this.seen.values().next().value as string);
  }
}

/** What an expired request was when it expired: `approved` when its run window passed (its outcome says the window), else `pending`. */
function expiredFrom(a: ApprovalRequest): 'pending' | 'approved' {
  const details = (a.outcome as { error?: { details?: { runWindowMs?: unknown } } } | null)?.error?.details;
  return details?.runWindowMs !== undefined ? 'approved' : 'pending';
}
