// The invoke, handler-matrix, concurrency and definition tests again, with every call run by the
// plain async/await reference (run-call.ts) instead of the callback chain that is the
// product path (call-steps.ts): the speed trick and its reference give the same outcomes.
import { describe, expect, it } from 'vitest';
import { setCallDriver } from './invoke.js';

setCallDriver('reference');

describe('the reference driver', () => {
  it('is the one running the calls in this file', () => {
    expect(setCallDriver('reference')).toBe('reference');
  });
});

await import('./invoke.test.js');
await import('./matrix.test.js');
await import('./concurrency.test.js');
await import('./define.test.js');
