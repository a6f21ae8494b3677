import { describe, expect, it } from 'vitest';
import { AuditWriter } from './audit-writer.js';
import { makeAudit } from './test-support/store-suite.js';
import type { AuditRecord } from './types.js';

describe('AuditWriter batching', () => {
  it('hands a full batch to the store at once, not at the end of the turn', async () => {
    const handed: number[] = [];
    const store = {
      appendAudit: async (rows: readonly AuditRecord[]): Promise<void> => {
        handed.push(rows.length);
      },
    };
    const writer = new AuditWriter(store, { maxBatch: 10 });
    let turnEnded = false;
    setImmediate(() => {
      turnEnded = true;
    });
    const acks: Promise<void>[] = [];
    // Callers awaiting `submit` in a loop queue records in microtasks only: the turn ends when they stop.
    for (let i = 0; i < 25; i++) acks.push((await writer.submit(makeAudit())).committed);
    expect(turnEnded).toBe(false);
    expect(handed).toEqual([10, 10]);
    await Promise.all(acks);
    // The rest waits for the turn's end, so that concurrent calls' records share a batch.
    expect(handed).toEqual([10, 10, 5]);
    expect(writer.written).toBe(25);
    await writer.close();
  });

  it('still gathers the records of one turn into one batch when they do not fill it', async () => {
    const handed: number[] = [];
    const store = {
      appendAudit: async (rows: readonly AuditRecord[]): Promise<void> => {
        handed.push(rows.length);
      },
    };
    const writer = new AuditWriter(store, { maxBatch: 100 });
    await Promise.all(Array.from({ length: 30 }, () => writer.record(makeAudit())));
    expect(handed).toEqual([30]);
    await writer.close();
  });
});
