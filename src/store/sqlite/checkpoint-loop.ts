/**
 * The checkpointer's loop, and how to stop it, apart from its thread (checkpoint-thread.ts): it
 * sleeps on the KiB counter the writers advance, and runs a checkpoint each time `everyKiB` more
 * was committed. Shared state: CHECKPOINT and RESTART in audit-protocol.ts.
 */
import { CHECKPOINT, RESTART } from './audit-protocol.js';

/**
 * What a checkpoint reports (the first row of `PRAGMA wal_checkpoint`): `busy` non-zero when it
 * could not finish, `log` the WAL's size in frames.
 */
export interface CheckpointResult {
  busy: number;
  log: number;
}

/**
 * Runs checkpoints until {@link stopCheckpoints}: each time the `KIB` counter is `everyKiB` past
 * the last checkpoint (and the WAL is not being started over), `checkpoint` runs; past
 * `restartFrames` it asks a writer to start the WAL over. In between it publishes `SEEN` and
 * sleeps on `KIB` through `wait` (Atomics.wait by default, which tests replace).
 */
export function runCheckpoints(
  state: Int32Array,
  options: { everyKiB: number; restartFrames: number },
  checkpoint: () => CheckpointResult | undefined,
  wait: (kib: number) => unknown = (kib) => Atomics.wait(state, CHECKPOINT.KIB, kib),
): void {
  let last = Atomics.load(state, CHECKPOINT.KIB);
  Atomics.store(state, CHECKPOINT.LAST, last);
  for (;;) {
    // KIB is read before STOP: a stop that this look at STOP misses moves KIB after this read
    // (stopCheckpoints), so the wait below returns at once instead of sleeping through its notify.
    // Read the other way round, a stop between the two reads was lost and the thread never ended.
    const now = Atomics.load(state, CHECKPOINT.KIB);
    if (Atomics.load(state, CHECKPOINT.STOP) !== 0) return;
    // Until the writer has started the WAL over, a checkpoint here could keep it from doing so
    // (a reader beginning while a checkpoint copies cannot start the WAL over).
    if (Atomics.load(state, CHECKPOINT.RESTART) === RESTART.NONE && ((now - last) | 0) >= options.everyKiB) {
      last = now;
      Atomics.store(state, CHECKPOINT.LAST, now);
      // PASSIVE: copies what it can without waiting for (or blocking) the writer. Past
      // restartFrames it asks the writer to copy the few frames committed since and so restart the WAL.
      const r = checkpoint();
      if (r && r.busy === 0 && r.log >= options.restartFrames) Atomics.store(state, CHECKPOINT.RESTART, RESTART.ASKED);
      continue;
    }
    Atomics.store(state, CHECKPOINT.SEEN, now);
    Atomics.notify(state, CHECKPOINT.SEEN);
    wait(now);
  }
}

/** Ends {@link runCheckpoints}, whether it is asleep or about to be. */
export function stopCheckpoints(state: Int32Array): void {
  Atomics.store(state, CHECKPOINT.STOP, 1);
  // The word the loop sleeps on moves too: a loop that read STOP before it was set read KIB before
  // this, so its wait finds KIB changed (see runCheckpoints).
  Atomics.add(state, CHECKPOINT.KIB, 1);
  Atomics.notify(state, CHECKPOINT.KIB);
}
