import { afterAll, describe, expect, it } from 'vitest';
import { newToolCallId, newTraceId, newUuidV7, useReferenceIds } from './ids.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const msOf = (id: string): number => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

// The pooled ids (the speed trick) and their plain reference, under the same assertions.
describe.each([
  ['pooled batches', false],
  ['reference: randomBytes(16) per id', true],
])('ids from %s', (_name, reference) => {
  afterAll(() => useReferenceIds(false));

  it('are 32 lowercase hex digits, all different, across many pool refills', () => {
    useReferenceIds(reference);
    const ids = new Set<string>();
    // 20 000 ids: over 19 refills of the 64 KiB pool and 1 250 hex batches.
    for (let i = 0; i < 10_000; i++) {
      ids.add(newToolCallId());
      ids.add(newTraceId());
    }
    expect(ids.size).toBe(20_000);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(ids.has('0'.repeat(32))).toBe(false);
  });

  it('spread their digits evenly (no slice of the pool is served twice or left unfilled)', () => {
    useReferenceIds(reference);
    const counts = new Map<string, number>();
    for (let i = 0; i < 4_000; i++) for (const c of newToolCallId()) counts.set(c, (counts.get(c) ?? 0) + 1);
    // 128 000 digits, 8 000 expected per digit; 6 standard deviations is about ±520.
    expect(counts.size).toBe(16);
    for (const n of counts.values()) expect(Math.abs(n - 8_000)).toBeLessThan(600);
  });
});

describe('newUuidV7', () => {
  it('makes RFC 9562 version 7 ids, all different, carrying the time they were made', () => {
    const before = Date.now();
    const ids = new Set<string>();
    for (let i = 0; i < 10_000; i++) ids.add(newUuidV7());
    const after = Date.now();
    expect(ids.size).toBe(10_000);
    for (const id of ids) {
      expect(id).toMatch(V7);
      expect(msOf(id)).toBeGreaterThanOrEqual(before);
      expect(msOf(id)).toBeLessThanOrEqual(after);
    }
    // The variant digit takes all four of its values (two random bits, not a constant).
    expect(new Set([...ids].map((id) => id.charAt(19))).size).toBe(4);
  });

  it('sorts a later millisecond after an earlier one', async () => {
    const first = newUuidV7();
    await new Promise((r) => setTimeout(r, 3));
    const second = newUuidV7();
    expect(msOf(second)).toBeGreaterThan(msOf(first));
    expect(second > first).toBe(true);
  });
});
