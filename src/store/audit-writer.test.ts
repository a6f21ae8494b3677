/**
 * The audit writer's group wait (AuditWriter.beginCall): with other calls under way, a
 * `before-answer` writer holds an idle store's commit for their records, at most one timer tick,
 * and ends the wait once every call under way has queued its record or ended; one call at a time
 * never waits; the reference (`useReferenceAuditGroupWait(true)`) and `background` never wait.
 * Timers are faked (setTimeout only) so that "never waits" means "committed with no timer fired".
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { success } from '../core/model.js';
import { GovernancePipeline } from '../governance/pipeline.js';
import type { GovernedCall } from '../governance/pipeline-types.js';
import { AuditWriter, useReferenceAuditGroupWait } from './audit-writer.js';
import { createMemoryStore } from './memory.js';
import { makeAudit } from './test-support/store-suite.js';
import type { AuditRecord, Store } from './types.js';

/** A real memory store that remembers the size of each batch it was handed. */
function countingStore(): { store: Store; batches: number[] } {
  const store = createMemoryStore();
  const batches: number[] = [];
  const append = store.appendAudit.bind(store);
  store.appendAudit = (records: readonly AuditRecord[]) => {
    batches.push(records.length);
    return append(records);
  };
  return { store, batches };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await turn();
}

describe('AuditWriter group wait', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('commits the record of a call alone at once: one call at a time never waits', async () => {
    const { store, batches } = countingStore();
    const writer = new AuditWriter(store);
    writer.beginCall();
    await writer.log(makeAudit());
    writer.endCall();
    expect(batches).toEqual([1]);
    expect(await store.countAudit()).toBe(1);
  });

  it('holds an idle store for the records of the other calls under way, then commits them together', async () => {
    const { store, batches } = countingStore();
    const writer = new AuditWriter(store);
    for (let i = 0; i < 4; i++) writer.beginCall();
    const logged: Promise<void>[] = [];
    // One record per event-loop turn, as calls whose upstream answers come one by one.
    for (let i = 0; i < 4; i++) {
      logged.push(writer.log(makeAudit()));
      await turns(3);
      if (i < 3) expect(batches).toEqual([]);
    }
    await Promise.all(logged);
    expect(batches).toEqual([4]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('waits at most one timer tick for a call that has not logged yet', async () => {
    const { store, batches } = countingStore();
    const writer = new AuditWriter(store);
    writer.beginCall();
    writer.beginCall();
    let done = false;
    const logged = writer.log(makeAudit()).then(() => (done = true));
    await turns(5);
    expect(batches).toEqual([]);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await logged;
    expect(batches).toEqual([1]);
  });

  it('ends the wait once a full batch is queued', async () => {
    const { store, batches } = countingStore();
    const writer = new AuditWriter(store, { maxBatch: 3 });
    for (let i = 0; i < 10; i++) writer.beginCall();
    const logged: Promise<void>[] = [];
    for (let i = 0; i < 3; i++) {
      logged.push(writer.log(makeAudit()));
      await turns(3);
    }
    await Promise.all(logged);
    expect(batches).toEqual([3]);
  });

  it('ends the wait when the other call ends without logging', async () => {
    const { store, batches } = countingStore();
    const writer = new AuditWriter(store);
    writer.beginCall();
    writer.beginCall();
    const logged = writer.log(makeAudit());
    await turns(3);
    expect(batches).toEqual([]);
    writer.endCall();
    await logged;
    expect(batches).toEqual([1]);
  });

  it('does not wait for calls whose records are already waiting on a commit', async () => {
    const { store, batches } = countingStore();
    const writer = new AuditWriter(store);
    writer.beginCall();
    writer.beginCall();
    await Promise.all([writer.log(makeAudit()), writer.log(makeAudit())]);
    expect(batches).toEqual([2]);
  });

  it('never waits in background mode, nor under the reference', async () => {
    const writers: [string, (store: Store) => AuditWriter][] = [
      ['background', (store) => new AuditWriter(store, { commit: 'background' })],
      [
        'reference',
        (store) => {
          useReferenceAuditGroupWait(true);
          try {
            return new AuditWriter(store);
          } finally {
            useReferenceAuditGroupWait(false);
          }
        },
      ],
    ];
    for (const [name, make] of writers) {
      const { store, batches } = countingStore();
      const writer = make(store);
      writer.beginCall();
      writer.beginCall();
      await writer.record(makeAudit());
      expect(batches, name).toEqual([1]);
    }
  });
});

describe('GovernancePipeline counts its calls for the group wait', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  const call = (i: number): GovernedCall => ({
    tool: 'read',
    ceiling: 'read_only',
    args: { i },
    principalChain: [{ kind: 'user', id: 'alice' }],
    toolCallId: `c${i}`,
    runId: `r${i}`,
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  });

  it('commits the outcomes of concurrent calls that end in different turns together, and each call still answers after its record', async () => {
    for (const reference of [false, true]) {
      const { store, batches } = countingStore();
      useReferenceAuditGroupWait(reference);
      const pipeline = new GovernancePipeline({ store, requireIdempotencyKeyFrom: false });
      useReferenceAuditGroupWait(false);
      const answered: number[] = [];
      await Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          const outcome = await pipeline.run(call(i), async () => {
            await turns(2 * i + 1);
            return success({ i });
          });
          // Answered only once its own outcome record is in the store.
          expect((await store.listAudit({ tool: 'read' }, { limit: 100 })).records.find((r) => r.toolCallId === outcome.toolCallId)?.status).toBe('ok');
          answered.push(i);
        }),
      );
      expect(answered).toHaveLength(6);
      // Six started records in one batch; the outcomes, one per two turns: one batch, or (reference) several.
      expect(batches[0]).toBe(6);
      if (reference) expect(batches.length).toBeGreaterThan(2);
      else expect(batches).toEqual([6, 6]);
      await pipeline.close();
    }
  });
});
