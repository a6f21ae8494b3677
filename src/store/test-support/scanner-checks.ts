/**
 * The two checks each linear-time secret scanner passes (secret-formats.ts, query-secrets.ts): it
 * gives what its reference gives (a regular expression or a plain reading, either quadratic) on any
 * text, and its hostile inputs take a bounded time.
 */
import fc from 'fast-check';
import { expect } from 'vitest';

type Scan = (text: string) => string | undefined;

/** `scan` and `reference` agree on 20 000 texts: joined pieces (matches, near misses, overlaps are common) or any string. */
export function agreesWithReference(scan: Scan, reference: Scan, pieces: readonly string[]): void {
  const text = fc.array(fc.constantFrom(...pieces), { maxLength: 40 }).map((a) => a.join(''));
  fc.assert(
    fc.property(fc.oneof(text, fc.string()), (s) => {
      expect(scan(s)).toBe(reference(s));
    }),
    { numRuns: 20_000 },
  );
}

/**
 * Each input (about 100 000 characters) is scanned in under 500 ms: far above the linear cost (a
 * few ms) and far below a quadratic one (seconds).
 */
export function takesLinearTime(scan: (text: string) => unknown, inputs: readonly string[]): void {
  for (const s of inputs) {
    const t0 = performance.now();
    scan(s);
    const ms = performance.now() - t0;
    // Named by its start, so that a failure says which input was slow.
    expect([s.slice(0, 24), ms < 500 ? 'under 500 ms' : `${ms.toFixed(0)} ms`]).toEqual([s.slice(0, 24), 'under 500 ms']);
  }
}
