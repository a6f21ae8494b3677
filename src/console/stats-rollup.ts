/**
 * Keeps a store's audit rollup caught up while its console is used (audit-rollup.ts): the stats
 * page starts it, and it then folds whatever the log gained, a chunk at a time with a turn of the
 * event loop between chunks, and again after an idle pause on a timer that does not hold the
 * process open. Audit writers never run it: their commits cost what they cost without a rollup.
 * A failing step (a closed store) ends it; the next stats page starts it again.
 */
import type { Store } from '../store/types.js';

/** Records folded per step (one transaction): what a step blocks this process for, and on SQLite the write lock its counts hold (bench/README.md). */
const CHUNK = 1_000;
/** The pause between catch-ups once the rollup is current. */
const IDLE_MS = 2_000;

const running = new WeakSet<Store>();

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * Starts the catch-up of `store` unless it runs already or the store keeps no rollup.
 */
export function keepRolledUp(store: Store): void {
  if (!store.rollUpAudit || running.has(store)) return;
  running.add(store);
  const round = async (): Promise<void> => {
    try {
      // After the page that started it: its own reads go first.
      await nextTurn();
      while ((await store.rollUpAudit!(CHUNK)).more) await nextTurn();
      setTimeout(() => void round(), IDLE_MS).unref();
    } catch {
      running.delete(store);
    }
  };
  void round();
}
