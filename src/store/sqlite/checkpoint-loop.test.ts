/**
 * The checkpointer's loop (checkpoint-loop.ts) on this thread, with the waits scripted: when it
 * checkpoints, and that a stop arriving just before it goes to sleep still ends it.
 */
import { describe, expect, it } from 'vitest';
import { CHECKPOINT, RESTART } from './audit-protocol.js';
import { runCheckpoints, stopCheckpoints } from './checkpoint-loop.js';

const newState = (): Int32Array => new Int32Array(new SharedArrayBuffer(CHECKPOINT.LENGTH * 4));

describe('checkpointer loop', () => {
  it('ends when the stop comes after its last look at STOP, just before it sleeps', () => {
    const state = newState();
    const waits: string[] = [];
    runCheckpoints(
      state,
      { everyKiB: 10, restartFrames: 100 },
      () => undefined,
      (kib) => {
        // The stopping thread runs here, between the loop's reads and its sleep: the notify finds
        // nobody asleep, so only a changed KIB keeps the sleep from lasting until the timeout
        // (for ever on the real thread).
        stopCheckpoints(state);
        waits.push(Atomics.wait(state, CHECKPOINT.KIB, kib, 2_000));
      },
    );
    expect(waits).toEqual(['not-equal']);
  });

  it('ends at once when stopped before it starts, and when stopped after it has slept', async () => {
    const stopped = newState();
    stopCheckpoints(stopped);
    let calls = 0;
    runCheckpoints(stopped, { everyKiB: 1, restartFrames: 1 }, () => {
      calls++;
      return undefined;
    });
    expect(calls).toBe(0);

    const state = newState();
    const waits: string[] = [];
    let n = 0;
    runCheckpoints(
      state,
      { everyKiB: 10, restartFrames: 100 },
      () => undefined,
      (kib) => {
        // Asleep first (a timed-out sleep stands for one), then woken by the stop.
        if (n++ === 0) waits.push(Atomics.wait(state, CHECKPOINT.KIB, kib, 10));
        else {
          stopCheckpoints(state);
          waits.push(Atomics.wait(state, CHECKPOINT.KIB, kib, 2_000));
        }
      },
    );
    expect(waits).toEqual(['timed-out', 'not-equal']);
  });

  it('checkpoints each everyKiB past the last one, publishes what it saw, and asks for a restart past restartFrames', () => {
    for (const [log, restart] of [
      [50, RESTART.NONE],
      [100, RESTART.ASKED],
    ] as const) {
      const state = newState();
      const checkpoints: number[] = [];
      const script = [
        () => Atomics.add(state, CHECKPOINT.KIB, 6), // 6 KiB since the last checkpoint: not yet
        () => Atomics.add(state, CHECKPOINT.KIB, 6), // 12: one checkpoint
        () => stopCheckpoints(state),
      ];
      const seen: number[] = [];
      runCheckpoints(
        state,
        { everyKiB: 10, restartFrames: 100 },
        () => {
          checkpoints.push(Atomics.load(state, CHECKPOINT.LAST));
          return { busy: 0, log };
        },
        () => {
          seen.push(Atomics.load(state, CHECKPOINT.SEEN));
          script.shift()?.();
        },
      );
      expect(checkpoints).toEqual([12]);
      expect(seen).toEqual([0, 6, 12]);
      expect(Atomics.load(state, CHECKPOINT.RESTART)).toBe(restart);
    }
  });

  it('holds its checkpoints while the WAL is being started over', () => {
    const state = newState();
    Atomics.store(state, CHECKPOINT.RESTART, RESTART.ASKED);
    let calls = 0;
    const script = [() => Atomics.add(state, CHECKPOINT.KIB, 50), () => stopCheckpoints(state)];
    runCheckpoints(
      state,
      { everyKiB: 10, restartFrames: 100 },
      () => {
        calls++;
        return undefined;
      },
      () => script.shift()?.(),
    );
    expect(calls).toBe(0);
  });
});
