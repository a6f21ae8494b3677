/**
 * Sign-in attempts rate-limited per client address: a fixed window with a bound on failures, so a
 * token cannot be guessed at the speed of the network. The failures are counted in the store
 * (store/console-sign-in-failures.ts), so every console over it shares one limit: N replicas
 * behind a load balancer do not allow N times the guesses.
 *
 * A sign-in is counted as a failure before its token is verified (one atomic upsert that returns
 * the window's count) and taken back when it succeeds: guesses sent at the same moment, to one
 * console or to many, cannot all pass a check made before any of them was counted.
 */
import type { ConsoleSignInFailureTable } from '../store/console-sign-in-failures.js';

/** Counts sign-in attempts per address, as failures until they succeed. */
export class SignInLimit {
  private readonly failures: number;
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(
    private readonly table: ConsoleSignInFailureTable,
    options: { failures?: number; windowMs?: number; now?: () => number } = {},
  ) {
    this.failures = options.failures ?? 5;
    this.windowMs = options.windowMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /** Whether this address is under its limit now: a read only, so an address over it costs nothing more. */
  async allowed(address: string): Promise<boolean> {
    return (await this.table.count(address, this.now())) < this.failures;
  }

  /**
   * Counts an attempt as a failure (in the address's running window, else in one starting now) and
   * says whether it is within the limit; a refused attempt stays counted.
   */
  async attempt(address: string): Promise<boolean> {
    const now = this.now();
    return (await this.table.fail(address, now, now + this.windowMs)) <= this.failures;
  }

  /** Takes back the attempt of a sign-in that succeeded: successes never count as failures. */
  async succeeded(address: string): Promise<void> {
    await this.table.forgive(address, this.now());
  }
}
