/**
 * Joining a waiting approval request: a call that needs an approval finds the newest request made
 * for the same verified principal, tool and arguments digest (and the same idempotency key, or none),
 * so that a client repeating a paused call (a plain MCP client sends no key) waits on that request
 * instead of opening another, and gets its final outcome once it is settled, without running again.
 */
import { createHash } from 'node:crypto';
import { decodeContextosCall, type Principal, type ToolCall, type ToolOutcome } from 'tool-envelope/core';
import type { OperatorKey } from '../store/operator-key.js';
import type { ApprovalRequest, Store } from '../store/types.js';
import { verifyApproval } from './approval-signature.js';
import { markReplay, requestFingerprint } from './idempotency.js';

/**
 * How many of the tool's newest requests are looked at: a repeat comes soon after its request, and
 * a miss only opens a new request (what happened before joining existed), never a wrong answer.
 */
const LOOKBACK = 20;

/**
 * What a call joins: a request still waiting (`pending`, or `approved` and not yet run) or a
 * settled one with its final outcome kept.
 */
export type ApprovalJoin = { waiting: ApprovalRequest } | { settled: ApprovalRequest };

/**
 * The identity a call joins under: its verified originating principal (the chain's head, when at
 * least one entry was verified), tool and arguments digest, and idempotency key; `undefined` when
 * nothing is verified: a caller-declared principal never joins (anyone could declare it).
 */
export function joinKey(call: Pick<ToolCall, 'principalChain' | 'capabilityId' | 'args' | 'idempotencyKey'>, verifiedPrincipals: number): string | undefined {
  const head = call.principalChain[0];
  if (!head || !(verifiedPrincipals >= 1)) return undefined;
  return [principalKey(head), requestFingerprint(call.capabilityId, call.args), call.idempotencyKey ?? ''].join('\u0000');
}

/** The digest a join key is stored under (the store keeps one pending request per digest, across processes). */
export function joinKeyDigest(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

function principalKey(p: Principal): string {
  return `${p.kind}\u0000${p.id}\u0000${p.tenant_id ?? ''}`;
}

/** A call that may join a request: its tool and its join key ({@link joinKey}). */
export interface Joining {
  tool: string;
  key: string;
}

/**
 * The newest request the call joins, if any: same join key (see {@link joinKey}), its request
 * signature verifying (the stored call, chain and tool are the ones that paused), not a pending one
 * whose time ran out (that one can no longer be approved: a new request opens), and, when settled,
 * with its outcome kept.
 */
export async function findApprovalToJoin(store: Store, operatorKey: OperatorKey, joining: Joining, now: number): Promise<ApprovalJoin | undefined> {
  const { key } = joining;
  const { approvals } = await store.listApprovals({ tool: joining.tool, limit: LOOKBACK });
  for (const a of approvals) {
    if (a.state === 'pending') {
      if (a.expiresAt !== null && a.expiresAt <= now) continue;
    } else if (a.state !== 'approved' && !a.outcome) continue;
    if (!joins(operatorKey, a, key)) continue;
    return a.state === 'pending' || a.state === 'approved' ? { waiting: a } : { settled: a };
  }
  return undefined;
}

/**
 * A settled request's final outcome as the answer of a call that waited on it (its `paused`
 * outcome gives the call's ids): the call that opened the request gets its own outcome, any other
 * a replay of it (the tool did not run for that call).
 */
export function settledAnswer(a: ApprovalRequest, paused: ToolOutcome, latencyMs: number): ToolOutcome | undefined {
  if (!a.outcome) return undefined;
  const stored = JSON.parse(JSON.stringify(a.outcome)) as ToolOutcome;
  const own = a.toolCallId === paused.toolCallId;
  const o = own ? stored : markReplay(stored, a.toolCallId);
  for (const k of ['toolCallId', 'runId', 'traceId', 'policyDecisionId', 'sessionId'] as const) {
    if (paused[k] !== undefined) (o as unknown as Record<string, unknown>)[k] = paused[k];
  }
  o.latencyMs = Math.round(latencyMs);
  return o;
}

/** True when the stored request was made for the same join key and its request signature verifies (the row is read as hostile: a bad one never joins). */
function joins(operatorKey: OperatorKey, a: ApprovalRequest, key: string): boolean {
  try {
    const verified = (a.policyDecision as { verifiedPrincipals?: unknown } | null)?.verifiedPrincipals;
    const call = decodeContextosCall(a.callEnvelope);
    if (call.capabilityId !== a.tool || joinKey(call, typeof verified === 'number' ? verified : 0) !== key) return false;
    return verifyApproval(operatorKey, a, call, false) === undefined;
  } catch {
    return false;
  }
}

/**
 * Runs `fn` after every earlier `fn` of the same key in this process has ended: concurrent
 * identical calls look for a request one after the other, so the second finds the first's.
 */
export class JoinLine {
  private readonly tails = new Map<string, Promise<unknown>>();

  async serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key);
    const mine = (before ?? Promise.resolve()).then(fn);
    const tail = mine.catch(() => undefined);
    this.tails.set(key, tail);
    try {
      return await mine;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
