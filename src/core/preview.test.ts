import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isToolEnvelopeError } from './errors.js';
import type { JsonValue } from './json.js';
import { createPreview, truncateUtf8 } from './preview.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** The reference: the longest well-formed UTF-8 prefix of `text` within `limit` bytes. */
function reference(text: string, limit: number): { text: string; truncated: boolean } {
  const bytes = encoder.encode(text); // lone surrogates become U+FFFD, as documented
  if (bytes.length <= limit) return { text: decoder.decode(bytes), truncated: false };
  let end = limit;
  // Back off over continuation bytes so the cut never lands inside a character.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: decoder.decode(bytes.subarray(0, end)), truncated: true };
}

function fullText(value: JsonValue): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const anyString = fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.string());
const anyJson: fc.Arbitrary<JsonValue> = fc.oneof(
  fc.jsonValue() as fc.Arbitrary<JsonValue>,
  anyString,
  fc.dictionary(anyString, fc.oneof(anyString, fc.jsonValue() as fc.Arbitrary<JsonValue>)),
  fc.array(anyString),
);

describe('createPreview', () => {
  it('equals the longest valid UTF-8 prefix of the full text within the limit, truncated exact', () => {
    fc.assert(
      fc.property(anyJson, fc.nat({ max: 300 }), (value, limit) => {
        const got = createPreview(value, limit);
        const want = reference(fullText(value), limit);
        expect(got).toEqual(want);
        expect(encoder.encode(got.text).length).toBeLessThanOrEqual(limit);
      }),
      { numRuns: 2000 },
    );
  });

  it('takes the incremental path for values much larger than the limit, with the same result', () => {
    // Small limits and values of many members: the size probe sends these down the incremental serializer.
    const large = fc.array(anyJson, { minLength: 20, maxLength: 60 });
    fc.assert(
      fc.property(large, fc.nat({ max: 24 }), (value, limit) => {
        expect(createPreview(value, limit)).toEqual(reference(JSON.stringify(value), limit));
      }),
      { numRuns: 1000 },
    );
  });

  it('handles toJSON, boxed primitives and undefined members like JSON.stringify on both paths', () => {
    const v = { at: new Date(0), n: Object(5), skip: undefined, f: () => 1, list: [undefined, Object('s')] } as unknown as JsonValue;
    const text = JSON.stringify(v);
    for (const limit of [0, 5, 17, 40, 10_000]) expect(createPreview(v, limit)).toEqual(reference(text, limit));
    const bigger = Array.from({ length: 200 }, () => v) as JsonValue;
    expect(createPreview(bigger, 50)).toEqual(reference(JSON.stringify(bigger), 50));
  });

  it('reports a BigInt as not-json-safe whichever path sees it', () => {
    expect(() => createPreview({ n: 1n } as unknown as JsonValue, 100)).toThrow(expect.objectContaining({ code: 'not-json-safe' }));
    const big = [...Array.from({ length: 500 }, (_, i) => i), 1n] as unknown as JsonValue;
    expect(createPreview(big, 10).truncated).toBe(true);
    expect(() => createPreview(big, 100_000)).toThrow(expect.objectContaining({ code: 'not-json-safe' }));
  });

  it('matches JSON.stringify exactly when the limit is large', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const v = value as JsonValue;
        const text = fullText(v);
        expect(createPreview(v, 1_000_000)).toEqual({ text, truncated: false });
      }),
      { numRuns: 1000 },
    );
  });

  it('never splits an astral character at the boundary', () => {
    // '😀' is 4 bytes of UTF-8 and two UTF-16 code units.
    const s = 'ab😀cd';
    expect(createPreview(s, 2)).toEqual({ text: 'ab', truncated: true });
    expect(createPreview(s, 3)).toEqual({ text: 'ab', truncated: true });
    expect(createPreview(s, 5)).toEqual({ text: 'ab', truncated: true });
    expect(createPreview(s, 6)).toEqual({ text: 'ab😀', truncated: true });
    expect(createPreview(s, 8)).toEqual({ text: s, truncated: false });
    // Inside JSON: `["ab😀"]` is 2 + 2 + 4 + 2 bytes.
    expect(createPreview(['ab😀'], 6)).toEqual({ text: '["ab', truncated: true });
    expect(createPreview(['ab😀'], 8)).toEqual({ text: '["ab😀', truncated: true });
    expect(createPreview(['ab😀'], 10)).toEqual({ text: '["ab😀"]', truncated: false });
  });

  it('is exact at the limit: a text of exactly the limit is not truncated', () => {
    expect(createPreview({ a: 1 }, 7)).toEqual({ text: '{"a":1}', truncated: false });
    expect(createPreview({ a: 1 }, 6)).toEqual({ text: '{"a":1', truncated: true });
    expect(createPreview('日本', 6)).toEqual({ text: '日本', truncated: false });
    expect(createPreview('日本', 5)).toEqual({ text: '日', truncated: true });
  });

  it('limit 0 gives an empty preview, truncated unless the text is empty', () => {
    expect(createPreview({ a: 1 }, 0)).toEqual({ text: '', truncated: true });
    expect(createPreview('x', 0)).toEqual({ text: '', truncated: true });
    expect(createPreview('', 0)).toEqual({ text: '', truncated: false });
  });

  it('replaces a lone surrogate in a string result by U+FFFD, and escapes it inside JSON', () => {
    expect(createPreview('a\ud800b', 10)).toEqual({ text: 'a\ufffdb', truncated: false });
    expect(createPreview('a\udc00', 3)).toEqual({ text: 'a', truncated: true });
    expect(createPreview(['\ud800'], 100)).toEqual({ text: '["\\ud800"]', truncated: false });
    // The escape is 6 ASCII bytes and may be cut like any other text.
    expect(createPreview(['\ud800'], 5)).toEqual({ text: '["\\ud', truncated: true });
  });

  it('keeps keys such as __proto__ as they are written by JSON.stringify', () => {
    const v = JSON.parse('{"__proto__":{"x":1},"constructor":2}') as JsonValue;
    expect(createPreview(v, 100).text).toBe('{"__proto__":{"x":1},"constructor":2}');
  });

  it('previews a 100 MB string and a 1e6-element array without serialising them', () => {
    const big = 'x'.repeat(100 * 1024 * 1024);
    const p = createPreview(big, 4096);
    expect(p).toEqual({ text: big.slice(0, 4096), truncated: true });
    const inJson = createPreview({ payload: big }, 4096);
    expect(inJson.truncated).toBe(true);
    expect(inJson.text).toBe(('{"payload":"' + 'x'.repeat(4096)).slice(0, 4096));
    const arr = Array.from({ length: 1_000_000 }, (_, i) => i);
    const pa = createPreview(arr, 4096);
    expect(pa.truncated).toBe(true);
    expect(pa.text).toBe(JSON.stringify(arr).slice(0, 4096));
    // Deeply nested values stop at the budget too, without recursion.
    let deep: JsonValue = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(createPreview(deep, 64)).toEqual({ text: '['.repeat(64), truncated: true });
  });

  it('slices a long string that has escapes and astral characters near the cut like the full text', () => {
    const s = '"\\\n😀'.repeat(10_000);
    for (const limit of [0, 1, 2, 3, 7, 8, 9, 10, 11, 12, 13, 4096]) {
      expect(createPreview({ s }, limit)).toEqual(reference(JSON.stringify({ s }), limit));
    }
  });

  it('rejects an invalid limit with invalid-option', () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => createPreview({}, bad)).toThrow(expect.objectContaining({ code: 'invalid-option' }));
      expect(() => truncateUtf8('', bad)).toThrow(expect.objectContaining({ code: 'invalid-option' }));
    }
  });

  it('reports a circular reference met within the budget as not-json-safe with its path', () => {
    const a: Record<string, unknown> = { list: [] };
    (a.list as unknown[]).push(a);
    try {
      createPreview(a as JsonValue, 1000);
      expect.unreachable();
    } catch (e) {
      expect(isToolEnvelopeError(e, 'not-json-safe')).toBe(true);
      expect((e as { issues: { path: string }[] }).issues[0]?.path).toBe('/list/0');
    }
  });
});

describe('truncateUtf8', () => {
  it('agrees with the TextEncoder reference on arbitrary strings', () => {
    fc.assert(
      fc.property(anyString, fc.nat({ max: 64 }), (s, limit) => {
        expect(truncateUtf8(s, limit)).toEqual(reference(s, limit));
      }),
      { numRuns: 2000 },
    );
  });

  it('with wellFormed: true, agrees with the reference on the JSON text of any value (which has no lone surrogate)', () => {
    fc.assert(
      fc.property(anyJson, fc.nat({ max: 300 }), (value, limit) => {
        const text = JSON.stringify(value);
        expect(truncateUtf8(text, limit, { wellFormed: true })).toEqual(reference(text, limit));
      }),
      { numRuns: 2000 },
    );
  });
});
