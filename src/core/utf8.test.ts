import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { truncateUtf8 } from './preview.js';
import { utf8ByteLength, utf8ByteLengthReference } from './utf8.js';

const ENCODER = new TextEncoder();
// Code units of every kind: ASCII, two- and three-byte characters, surrogate pairs, lone halves.
const unit = fc.oneof(
  fc.integer({ min: 0, max: 0x7f }),
  fc.integer({ min: 0x80, max: 0x7ff }),
  fc.integer({ min: 0x800, max: 0xffff }),
  fc.integer({ min: 0xd800, max: 0xdfff }),
);
const anyText = fc.oneof(
  fc.array(unit, { maxLength: 200 }).map((cs) => String.fromCharCode(...cs)),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
);

describe('utf8ByteLength', () => {
  it('counts what TextEncoder writes, astral characters and lone surrogates included (fast-check)', () => {
    fc.assert(
      fc.property(anyText, (s) => {
        const bytes = ENCODER.encode(s).length;
        expect(utf8ByteLength(s)).toBe(bytes);
        expect(utf8ByteLengthReference(s)).toBe(bytes);
      }),
      { numRuns: 3000 },
    );
  });

  it('counts the edge cases exactly', () => {
    for (const s of ['', 'a', 'é', '日', '😀', '\ud800', '\udc00', '\udc00\ud800', 'x\ud83d', '\ud83d\ude00\ud83d', 'a'.repeat(5000)]) {
      expect([s, utf8ByteLength(s)]).toEqual([s, ENCODER.encode(s).length]);
      expect([s, utf8ByteLengthReference(s)]).toEqual([s, ENCODER.encode(s).length]);
    }
  });

  it('truncateUtf8 keeps the longest prefix TextEncoder would fit, whichever way the fit is decided (fast-check)', () => {
    fc.assert(
      fc.property(anyText, fc.nat({ max: 700 }), (s, limit) => {
        const { text, truncated } = truncateUtf8(s, limit);
        const { read } = ENCODER.encodeInto(s, new Uint8Array(limit));
        expect(truncated).toBe(read < s.length);
        expect(ENCODER.encode(text)).toEqual(ENCODER.encode(s.slice(0, read)));
      }),
      { numRuns: 3000 },
    );
  });
});
