/**
 * Sign-in attempts rate-limited per client address: a fixed window with a bound on failures, so a
 * token cannot be guessed at the speed of the network. The failures are counted in the store
 * (store/console-sign-in-failures.ts), so every console over it shares one limit: N replicas
 * behind a load balancer do not allow N times the guesses.
 */
import type { ConsoleSignInFailureTable } from '../store/console-sign-in-failures.js';

/** Counts failed sign-ins per address. */
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

  /** Whether this address may try to sign in now. */
  async allowed(address: string): Promise<boolean> {
    return (await this.table.count(address, this.now())) < this.failures;
  }

  /** Counts a failure: in the address's running window, else in one starting now. */
  async failed(address: string): Promise<void> {
    const now = this.now();
    await this.table.fail(address, now, now + this.windowMs);
  }
}
