import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toJsonSafe } from './json-safe.js';
import { isPlainJsonContainer, isSmallPlainJson } from './json.js';

describe('isPlainJsonContainer', () => {
  it('accepts arrays and plain objects, and nothing with a toJSON or a class', () => {
    expect(isPlainJsonContainer({ a: 1 })).toBe(true);
    expect(isPlainJsonContainer(Object.create(null))).toBe(true);
    expect(isPlainJsonContainer([1, { a: 2 }])).toBe(true);
    expect(isPlainJsonContainer(new Date())).toBe(false);
    expect(isPlainJsonContainer(new Map())).toBe(false);
    expect(isPlainJsonContainer({ toJSON: () => 1 })).toBe(false);
    expect(isPlainJsonContainer(Object.assign([1], { toJSON: () => 'x' }))).toBe(false);
    for (const v of [null, undefined, 1, 'a', true, 1n]) expect(isPlainJsonContainer(v)).toBe(false);
  });
});

describe('isSmallPlainJson', () => {
  it('says yes only when toJsonSafe would return the value as it is (its reference)', () => {
    const values = fc.oneof(
      fc.json().map((t) => JSON.parse(t) as unknown),
      fc.anything({ withDate: true, withMap: true, withSet: true, withBigInt: true, withTypedArray: true, withNullPrototype: true }),
    );
    fc.assert(
      fc.property(values, (v) => {
        if (!isSmallPlainJson(v)) return;
        const { value, replaced } = toJsonSafe(v);
        expect(replaced).toEqual([]);
        expect(value).toEqual(v);
      }),
      { numRuns: 500 },
    );
  });

  it('gives up on what toJsonSafe must convert, past its budget, and on a throwing getter', () => {
    expect(isSmallPlainJson({ rows: [1, 'a', null, true] })).toBe(true);
    expect(isSmallPlainJson({ at: new Date(0) })).toBe(false);
    expect(isSmallPlainJson({ n: Number.NaN })).toBe(false);
    expect(isSmallPlainJson({ u: undefined })).toBe(false);
    expect(isSmallPlainJson([Object.assign([1], { toJSON: () => 'x' })])).toBe(false);
    expect(isSmallPlainJson(Array.from({ length: 64 }, (_, i) => i))).toBe(false);
    expect(isSmallPlainJson(Array.from({ length: 62 }, (_, i) => i))).toBe(true);
    let deep: unknown = 1;
    for (let i = 0; i < 17; i++) deep = [deep];
    expect(isSmallPlainJson(deep)).toBe(false);
    const hostile = Object.defineProperty({}, 'x', {
      enumerable: true,
      get: () => {
        throw new Error('no');
      },
    });
    expect(isSmallPlainJson(hostile)).toBe(false);
  });
});
