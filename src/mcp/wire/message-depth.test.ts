import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonNestsDeeper } from '../../core/json-safe.js';
import { MAX_MESSAGE_DEPTH, valueNestsDeeper } from './message-depth.js';

/** The nesting depth of a JSON value, the plain recursive way (`[[1]]` is 2; a scalar 0). */
function depthOf(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  let deepest = 0;
  for (const x of Object.values(v)) deepest = Math.max(deepest, depthOf(x));
  return deepest + 1;
}

describe('valueNestsDeeper', () => {
  it('counts arrays and objects alike, scalars not at all', () => {
    expect(valueNestsDeeper('text', 0)).toBe(false);
    expect(valueNestsDeeper(null, 0)).toBe(false);
    expect(valueNestsDeeper({}, 0)).toBe(true);
    expect(valueNestsDeeper({ a: [1] }, 1)).toBe(true);
    expect(valueNestsDeeper({ a: [1] }, 2)).toBe(false);
    expect(valueNestsDeeper([{}, [[{ b: 'x' }]]], 3)).toBe(true);
    expect(valueNestsDeeper([{}, [[{ b: 'x' }]]], 4)).toBe(false);
  });

  it('agrees with the depth of any JSON value, and with jsonNestsDeeper on its text', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 0, max: 8 }), (v, limit) => {
        expect(valueNestsDeeper(v, limit)).toBe(depthOf(v) > limit);
        expect(jsonNestsDeeper(JSON.stringify(v), limit)).toBe(depthOf(v) > limit);
      }),
    );
  });

  it('walks 1 000 000 levels without recursion; the default bound is 1000', () => {
    const n = 1_000_000;
    const deep = JSON.parse(`${'['.repeat(n)}${']'.repeat(n)}`) as unknown;
    expect(valueNestsDeeper(deep)).toBe(true);
    const edge = JSON.parse(`${'{"a":'.repeat(MAX_MESSAGE_DEPTH)}1${'}'.repeat(MAX_MESSAGE_DEPTH)}`) as unknown;
    expect(valueNestsDeeper(edge)).toBe(false);
    expect(valueNestsDeeper({ edge })).toBe(true);
  });
});
