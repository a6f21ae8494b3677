// The invoke tests again, with every call run by the plain async/await steps (run-call.ts)
// instead of the callback chain that is the product path (call-steps.ts), and ids from
// randomBytes(16) per id instead of pooled batches (bench/README.md, "The rule for speed
// tricks"). The deadline lists stay: invoke.test.ts also tests them as such.
import { describe, expect, it } from 'vitest';
import { useReferenceIds } from './ids.js';
import { setCallDriver } from './invoke.js';

setCallDriver('reference');
useReferenceIds(true);

describe('the reference steps', () => {
  it('are the ones running the calls in this file', () => {
    expect(setCallDriver('reference')).toBe('reference');
  });
});

await import('./invoke.test.js');
