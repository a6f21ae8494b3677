import { describe, expect, it } from 'vitest';
import { newAuditId } from './ids.js';

describe('newAuditId', () => {
  it('gives distinct ids that sort in creation order: epoch ms, counter, random', () => {
    const before = Date.now();
    const ids = Array.from({ length: 5000 }, () => newAuditId());
    const after = Date.now();
    for (const id of ids) expect(id).toMatch(/^aud_[0-9a-f]{12}[0-9a-f]{4}[0-9a-f]{8}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    const ms = (id: string): number => parseInt(id.slice(4, 16), 16);
    expect(ms(ids[0]!)).toBeGreaterThanOrEqual(before);
    expect(ms(ids[ids.length - 1]!)).toBeLessThanOrEqual(after);
    // The random part varies (8 hex digits drawn from crypto random bytes).
    expect(new Set(ids.map((id) => id.slice(20))).size).toBeGreaterThan(4900);
  });
});
