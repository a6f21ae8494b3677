import { describe, expect, it } from 'vitest';
import { withCauses } from './faults.js';

const coded = (message: string, code: string, cause?: unknown): Error => Object.assign(new Error(message, { cause }), { code });

describe('withCauses', () => {
  it('adds the causes of an error, with their codes, innermost last', () => {
    const tls = coded('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT');
    const err = new Error('Version negotiation probe failed: fetch failed', { cause: new TypeError('fetch failed', { cause: tls }) });
    expect(withCauses(err)).toBe('Version negotiation probe failed: fetch failed (self-signed certificate [DEPTH_ZERO_SELF_SIGNED_CERT])');
    expect(withCauses(new Error('a', { cause: coded('connect ECONNREFUSED 127.0.0.1:9', 'ECONNREFUSED') }))).toBe('a (connect ECONNREFUSED 127.0.0.1:9)');
  });

  it('is the message alone without causes, and takes anything thrown', () => {
    expect(withCauses(new Error('plain'))).toBe('plain');
    expect(withCauses('a string')).toBe('a string');
    expect(withCauses(undefined)).toBe('undefined');
    expect(withCauses(new Error('x', { cause: 42 }))).toBe('x');
    expect(withCauses(new Error('x', { cause: 'because' }))).toBe('x (because)');
  });

  it('stops at four causes, even in a cycle, and bounds what it adds', () => {
    const a = new Error('top');
    const b = new Error('b'.repeat(500), { cause: a });
    a.cause = b;
    const text = withCauses(a);
    expect(text.startsWith('top (')).toBe(true);
    expect(text.length).toBeLessThanOrEqual('top ()'.length + 300);
  });

  it('keeps control characters and credentials of a cause out, so a cause cannot forge log lines or leak a secret', () => {
    const text = withCauses(new Error('fetch failed', { cause: new Error('bad\nFAKE LOG LINE\r\u001b[31m') }));
    // The cause's first line only: its next lines never reach the log.
    expect(text).toBe('fetch failed (bad)');
    expect(text).not.toMatch(/[\u0000-\u001f]/);
    const leaked = withCauses(new Error('fetch failed', { cause: new Error('connect to https://ops:hunter2-pw@internal.example/mcp refused') }));
    expect(leaked).not.toContain('hunter2-pw');
    expect(leaked).toContain('https://<redacted>@internal.example');
  });
});
