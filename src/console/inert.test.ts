import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inert, inertJson, marked } from './inert.js';

// The plain path for every string: what marked() did before its early return for clean strings.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;
function reference(text: unknown, max = 4_096): string {
  let s = typeof text === 'string' ? text : String(text);
  let cut = '';
  if (s.length > max) {
    cut = ` … (${s.length - max} more characters not shown)`;
    s = s.slice(0, max);
  }
  return s.replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`) + cut;
}

describe('marked', () => {
  it('returns a clean string as it is', () => {
    expect(marked('aud_0193a1b2 add ok', 200)).toBe('aud_0193a1b2 add ok');
    expect(marked('tab\tand\nnewline stay')).toBe('tab\tand\nnewline stay');
  });

  it('shows terminal escapes, C1 controls and bidi overrides as marks', () => {
    expect(marked('\u001b[31mred\u001b[0m')).toBe('\\u{1b}[31mred\\u{1b}[0m');
    expect(marked('a\u0085b\u202ecba\u2066')).toBe('a\\u{85}b\\u{202e}cba\\u{2066}');
    expect(marked('\ufeffx\u0000')).toBe('\\u{feff}x\\u{0}');
  });

  it('cuts at the bound, saying how much was cut, clean or not', () => {
    expect(marked('abcdef', 4)).toBe('abcd … (2 more characters not shown)');
    expect(marked('\u001babcdef', 4)).toBe('\\u{1b}abc … (3 more characters not shown)');
    expect(marked(12345, 3)).toBe('123 … (2 more characters not shown)');
  });

  it('equals the plain path for any string and bound', () => {
    const chars = fc.oneof(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.constantFrom('\u001b[1m', '\u202e', '\u2069', '\u0085', 'é'));
    fc.assert(
      fc.property(fc.array(chars, { maxLength: 8 }), fc.integer({ min: 0, max: 40 }), (parts, max) => {
        const s = parts.join('');
        expect(marked(s, max)).toBe(reference(s, max));
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('inert', () => {
  it('escapes HTML after marking', () => {
    expect(inert('<script>alert("x")</script>&\'')).toBe('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;');
    expect(inert('<b>\u202e</b>')).toBe('&lt;b&gt;\\u{202e}&lt;/b&gt;');
  });

  it('shows JSON indented and inert', () => {
    expect(inertJson({ a: '<i>' })).toBe('{\n  &quot;a&quot;: &quot;&lt;i&gt;&quot;\n}');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(inertJson(cyclic)).toBe('(not JSON)');
  });
});
