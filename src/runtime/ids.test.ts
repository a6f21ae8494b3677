import { afterAll, describe, expect, it } from 'vitest';
import { newToolCallId, newTraceId, useReferenceIds } from './ids.js';

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
