import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesToBase64 } from './json-safe.js';

describe('bytesToBase64', () => {
  it('agrees with Buffer for any bytes, including every padding case and chunk boundaries', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 7000 }), (bytes) => {
        expect(bytesToBase64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
      }),
    );
    for (const n of [0, 1, 2, 3, 6143, 6144, 6145, 20000]) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 37) & 255);
      expect(bytesToBase64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
    }
  });

  it('encodes only the view of a larger buffer', () => {
    const whole = new TextEncoder().encode('xxhelloxx');
    expect(bytesToBase64(whole.subarray(2, 7))).toBe('aGVsbG8=');
  });
});
