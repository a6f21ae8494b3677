/**
 * The console's failed sign-ins per client address, in the store so that every console over it
 * (replicas behind a load balancer) counts against one limit: N replicas do not allow N times the
 * guesses. One row per address holds the failures of its current fixed window, which starts at its
 * first failure; a failure after the window's end starts a new one.
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
}

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

/** The in-memory table (the memory store's: one process only). At most `max` addresses; beyond it the oldest window goes. */
export function createMemoryConsoleSignInFailures(check: () => void, max = 10_000): ConsoleSignInFailureTable {
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
      for (const [k, r] of rows) if (r.windowEnd <= now && k !== address) rows.delete(k);
      const r = rows.get(address);
      if (r && r.windowEnd > now) return ++r.failures;
      rows.delete(address);
      if (rows.size >= max) rows.delete(rows.keys().next().value as string);
      rows.set(address, { windowEnd, failures: 1 });
      return 1;
    },
  };
}
