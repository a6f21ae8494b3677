/**
 * Waiting in the call (#37): with `--approval-wait MS` a paused call is held open, polling the store
 * for its request's decision at the approval poll interval and telling a client that gave a
 * progress token how long it has waited; it answers with the final outcome (completed, failed,
 * rejected, expired) when the request is settled in time, else with its `paused` outcome as
 * before. A client may ask for a shorter wait in `_meta` ({@link APPROVAL_WAIT_META}), never a
 * longer one. Cancelling the call ends the wait.
 */
import type { ServerContext } from '@modelcontextprotocol/server';
import type { ToolOutcome } from 'tool-envelope/core';
import { settledAnswer } from '../../governance/approval-join.js';
import type { Store } from '../../store/types.js';

/** The `_meta` key of a client's wait hint, in ms (capped by the gateway's `--approval-wait`). */
export const APPROVAL_WAIT_META = 'tool-envelope/approval-wait-ms';
/** How often the store is read while waiting when the gateway does not poll for approved requests itself. */
const DEFAULT_POLL_MS = 500;

/** What a wait needs from the gateway. */
export interface ApprovalWaitOptions {
  store: Store;
  /** The gateway's longest wait (`--approval-wait`); 0 or absent: calls do not wait. */
  maxWaitMs: number | undefined;
  /** The approval poll interval (`--approval-poll`). */
  pollMs: number | undefined;
}

/** How long this call may wait: the client's hint (a non-negative number of ms) capped by the gateway's wait, else the gateway's. */
export function approvalWaitOf(meta: unknown, maxWaitMs: number | undefined): number {
  if (!(typeof maxWaitMs === 'number' && maxWaitMs > 0)) return 0;
  const hint = meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>)[APPROVAL_WAIT_META] : undefined;
  return typeof hint === 'number' && Number.isFinite(hint) && hint >= 0 ? Math.min(Math.floor(hint), maxWaitMs) : maxWaitMs;
}

/** The approval id of a `paused` outcome, if it is one. */
export function pausedApprovalId(outcome: ToolOutcome): string | undefined {
  const id = outcome.metadata?.approvalId;
  return outcome.status === 'paused' && typeof id === 'string' ? id : undefined;
}

/**
 * The answer of a paused call after waiting up to its wait (see the module comment): the request's
 * final outcome, or `paused` as it was. Never throws for a store that fails meanwhile (the call
 * keeps its `paused` answer, which names the request).
 */
export async function waitForDecision(
  options: ApprovalWaitOptions,
  paused: ToolOutcome,
  params: Record<string, unknown> | undefined,
  ctx: ServerContext | undefined,
): Promise<ToolOutcome> {
  const approvalId = pausedApprovalId(paused);
  const meta = params?._meta as Record<string, unknown> | undefined;
  const waitMs = approvalWaitOf(meta, options.maxWaitMs);
  if (!approvalId || waitMs === 0) return paused;
  const started = performance.now();
  const signal = ctx?.mcpReq.signal;
  const token = meta?.progressToken;
  const pollMs = options.pollMs || DEFAULT_POLL_MS;
  try {
    for (;;) {
      const a = await options.store.getApproval(approvalId);
      const settled = a && settledAnswer(a, paused, (paused.latencyMs ?? 0) + performance.now() - started);
      if (settled) return settled;
      const waited = performance.now() - started;
      if (!a || waited >= waitMs || signal?.aborted) return paused;
      // MCP progress goes only to a request that asked for it with a token; progress must increase: the time waited does.
      if (ctx && (typeof token === 'string' || typeof token === 'number')) {
        const message = `Waiting for an approver (${approvalId}): ${a.state}`;
        ctx.mcpReq
          .notify({ method: 'notifications/progress', params: { progressToken: token, progress: Math.round(waited), total: waitMs, message } })
          .catch(() => {});
      }
      await sleep(Math.min(pollMs, waitMs - waited), signal);
    }
  } catch {
    return paused;
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
