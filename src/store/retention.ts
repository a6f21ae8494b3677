/** The retention timer of a store: prunes on open and then periodically. */
import type { RetentionOptions } from './types.js';

/**
 * Runs `prune` on open and then periodically (unref'd timer) when retention options are given.
 * Returns a function that stops the timer.
 */
export function startRetention(store: { prune(options?: RetentionOptions): Promise<unknown> }, retention: RetentionOptions | undefined): () => void {
  if (!retention || (retention.maxAgeMs === undefined && retention.maxRecords === undefined && retention.idempotencyMaxAgeMs === undefined)) {
    return () => {};
  }
  // A failed background prune must not crash the host; the next round retries.
  const run = (): void => void store.prune(retention).catch(() => {});
  run();
  const timer = setInterval(run, retention.intervalMs ?? 60_000);
  timer.unref();
  return () => clearInterval(timer);
}
