// Sealed task handles (what a replayed idempotency key stores): only the same secret and the same
// caller open one; anything else, junk included, opens nothing.
import { describe, expect, it } from 'vitest';
import { mintTaskHandle, openTaskHandle, sealTaskHandle, taskOwnerKey } from './handles.js';

const alice = taskOwnerKey({ tenant: 'acme', principal: 'user:alice' });
const aliceS2 = taskOwnerKey({ tenant: 'acme', principal: 'user:alice', session: 's-2' });

describe('sealed task handles', () => {
  it('open for the same secret and caller only, and never hold the handle in the clear', () => {
    const handle = mintTaskHandle();
    const sealed = sealTaskHandle(handle, 'order-42', alice);
    expect(sealed).not.toContain(handle.slice(4, 20));
    expect(openTaskHandle(sealed, 'order-42', alice)).toBe(handle);
    expect(openTaskHandle(sealed, 'order-43', alice)).toBeUndefined();
    expect(openTaskHandle(sealed, 'order-42', aliceS2)).toBeUndefined();
    // Two seals of one handle differ (a fresh IV each time).
    expect(sealTaskHandle(handle, 'order-42', alice)).not.toBe(sealed);
  });

  it('junk, tampered and oversized input opens nothing', () => {
    const sealed = sealTaskHandle(mintTaskHandle(), 'k', alice);
    const flipped = `${sealed.slice(0, 30)}${sealed[30] === 'A' ? 'B' : 'A'}${sealed.slice(31)}`;
    for (const junk of [undefined, null, 42, '', 'abc', flipped, 'A'.repeat(10_000), { sealed }]) {
      expect(openTaskHandle(junk, 'k', alice)).toBeUndefined();
    }
  });
});
