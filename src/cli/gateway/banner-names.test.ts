// The banner prints tool names an upstream chose (hostile): inert, and cut to a readable length.
import { describe, expect, it } from 'vitest';
import { approvalBanner } from './banner.js';

describe('the banner: tool names from upstreams', () => {
  it('prints control characters and bidi overrides inert, and cuts a very long name with its length', () => {
    const long = `wipe_${'x'.repeat(3000)}`;
    const lines = approvalBanner(['rtl\u202Egnp.exe', '\u001b[2Jclear', long], { command: 'tool-envelope', storeArgs: '--store a.db' });
    const text = lines.join('\n');
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(lines[0]).toContain('rtl?gnp.exe, ?[2Jclear, wipe_xxx');
    expect(lines[0]).toContain('… (3005 characters)');
    expect(lines[0]!.length).toBeLessThan(300);
  });
});
