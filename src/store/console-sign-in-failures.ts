/**
 * The console's failed sign-ins per client address, in the store so that every console over it
 * (replicas behind a load balancer) counts against one limit: N replicas do not allow N times the
 * guesses. One row per address holds the failures of its current fixed window, which starts at its
 * first failure; a failure after the window's end starts a new one. The table keeps at most
 * {@link MAX_SIGN_IN_ADDRESSES} rows (an attacker with many addresses cannot grow it without bound):
 * a new address past the bound makes room by deleting the rows whose windows end first.
 */
import { ToolEnvelopeError } from 'tool-envelope/core';

/** The table's operations, on every store (`store.consoleSignInFailures`). */
export interface ConsoleSignInFailureTable {
  /** The failures of `address` in its window running at `now` (0 when it has none). */
  count(address: string, now: number): Promise<number>;
  /**
   * Counts one failure of `address` at `now`, exactly under concurrency from any number of processes:
   * in its running window, else in a new one that ends at `windowEnd`. Deletes other addresses' ended
   * windows on the way. Returns the window's count, this failure included.
   */
  fail(address: string, now: number, windowEnd: number): Promise<number>;
  /**
   * Takes one failure of `address` back (a sign-in counted as an attempt before its token was
   * verified, that succeeded): one less in its window running at `now`, never below 0. Returns the
   * window's count after it (0 without a running window).
   */
  forgive(address: string, now: number): Promise<number>;
}

/** The most addresses the table keeps, on every store (each table's constructor takes another bound). */
export const MAX_SIGN_IN_ADDRESSES = 10_000;

/** Longest address kept (a socket's address, IPv6 with a zone included, is far shorter). */
export const MAX_SIGN_IN_ADDRESS = 256;

/** Checks the arguments of a failure (or, without `windowEnd`, of a count). */
export function checkSignInFailure(address: unknown, now: unknown, windowEnd?: unknown): void {
  if (typeof address !== 'string' || address === '' || address.length > MAX_SIGN_IN_ADDRESS) {
    throw new ToolEnvelopeError('invalid-option', `a sign-in address must be a string of 1 to ${MAX_SIGN_IN_ADDRESS} characters`);
  }
  if (!Number.isSafeInteger(now)) throw new ToolEnvelopeError('invalid-option', 'sign-in failure time must be an integer');
  if (windowEnd !== undefined && (!Number.isSafeInteger(windowEnd) || (windowEnd as number) <= (now as number))) {
    throw new ToolEnvelopeError('invalid-option', 'a sign-in failure window must end after now');
  }
}

/** The in-memory table (the memory store's: one process only). At most `max` addresses; beyond it the first window to end goes. */
export function createMemoryConsoleSignInFailures(check: () => void, max = MAX_SIGN_IN_ADDRESSES): ConsoleSignInFailureTable {
  const rows = new Map<string, { windowEnd: number; failures: number }>();
  return {
    async count(address, now) {
      check();
      checkSignInFailure(address, now);
      const r = rows.get(address);
      return r && r.windowEnd > now ? r.failures : 0;
    },
    async fail(address, now, windowEnd) {
      check();
      checkSignInFailure(address, now, windowEnd);
      let first: string | undefined;
      for (const [k, r] of rows) {
        if (k === address) continue;
        if (r.windowEnd <= now) rows.delete(k);
        else if (first === undefined || r.windowEnd < rows.get(first)!.windowEnd) first = k;
      }
      const r = rows.get(address);
      if (r && r.windowEnd > now) return ++r.failures;
      rows.delete(address);
      if (rows.size >= max && first !== undefined) rows.delete(first);
      rows.set(address, { windowEnd, failures: 1 });
      return 1;
    },
    async forgive(address, now) {
      check();
      checkSignInFailure(address, now);
      const r = rows.get(address);
      if (!r || r.windowEnd <= now) return 0;
      r.failures = Math.max(r.failures - 1, 0);
      return r.failures;
    },
  };
}
