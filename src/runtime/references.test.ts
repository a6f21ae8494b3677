// The handler-matrix, concurrency and definition tests again, with every speed trick of
// the runtime swapped for its plain reference (bench/README.md, "The rule for speed
// tricks"): a setTimeout per call instead of the shared deadline lists, and
// randomBytes(16) per id instead of pooled batches. The outcomes must be the same.
// (invoke.test.ts runs under the reference ids in references-ids.test.ts: it also
// tests the deadline lists themselves, which the reference deadlines do not have.)
import { describe, expect, it } from 'vitest';
import { armedDeadlines, useReferenceDeadlines } from './deadline.js';
import { useReferenceIds } from './ids.js';

useReferenceDeadlines(true);
useReferenceIds(true);

describe('the references', () => {
  it('a reference deadline is a timer of its own, counted while armed and gone when it fires', async () => {
    let fired = 0;
    const entry = { deadline: 0, prevEntry: undefined, nextEntry: undefined, deadlineList: undefined, onDeadline: () => void fired++ };
    const before = armedDeadlines();
    const { armDeadline } = await import('./deadline.js');
    armDeadline(entry, 5, performance.now());
    expect(armedDeadlines()).toBe(before + 1);
    await new Promise((r) => setTimeout(r, 30));
    expect(fired).toBe(1);
    expect(armedDeadlines()).toBe(before);
  });
});

await import('./matrix.test.js');
await import('./concurrency.test.js');
await import('./define.test.js');
