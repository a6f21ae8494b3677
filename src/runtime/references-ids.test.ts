// The invoke tests again, with ids from randomBytes(16) per id instead of pooled batches
// (bench/README.md, "The rule for speed tricks"). The deadline lists stay: invoke.test.ts
// also tests them as such. (A call's steps have one implementation, the async function of
// run-call.ts, so there is no other driver to run them under.)
import { describe, expect, it } from 'vitest';
import { newToolCallId, useReferenceIds } from './ids.js';

useReferenceIds(true);

describe('the reference ids', () => {
  it('are 32 lowercase hex digits, fresh each time', () => {
    const a = newToolCallId();
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(newToolCallId()).not.toBe(a);
  });
});

await import('./invoke.test.js');
