/**
 * Sign-in attempts rate-limited per client address: a fixed window with a bound on failures, so a
 * token cannot be guessed at the speed of the network.
 */

/** Counts failed sign-ins per address. */
export class SignInLimit {
  private readonly seen = new Map<string, { since: number; failures: number }>();
  private readonly failures: number;
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(options: { failures?: number; windowMs?: number; now?: () => number } = {}) {
    this.failures = options.failures ?? 5;
    this.windowMs = options.windowMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  private entry(address: string): { since: number; failures: number } {
    const now = this.now();
    let e = this.seen.get(address);
    if (!e || now - e.since >= this.windowMs) {
      // Bound the table: a flood of addresses drops the oldest windows.
      if (!e && this.seen.size >= 10_000) this.seen.delete(this.seen.keys().next().value as string);
      e = { since: now, failures: 0 };
      this.seen.set(address, e);
    }
    return e;
  }

  /** Whether this address may try to sign in now. */
  allowed(address: string): boolean {
    return this.entry(address).failures < this.failures;
  }

  failed(address: string): void {
    this.entry(address).failures++;
  }
}
