import { posix } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { glob, host, toNumber, within } from './policy-helpers.js';

/** What a lenient file server could make of a path: every layer of percent-encoding decoded, backslashes as separators, normalised. */
function mostDecoded(path: string): string {
  let p = path;
  for (let i = 0; i < 10; i++) {
    const d = p.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
    if (d === p) break;
    p = d;
  }
  return posix.normalize(p.replaceAll('\\', '/'));
}

const SEGMENTS = [
  'srv',
  'shared',
  'etc',
  'passwd',
  '..',
  '.',
  '',
  'sharedX',
  '%2e%2e',
  '%2E%2e',
  '%252e%252e',
  '%2f',
  '%5c',
  '..%2f',
  '%00',
  '\0',
  '\\',
  'a%',
  '%zz',
  '~',
];
const paths = fc.array(fc.constantFrom(...SEGMENTS), { maxLength: 8 }).map((s) => `/${s.join('/')}`);

describe('within', () => {
  it('answers the cases operators write', () => {
    expect(within('/srv/shared', '/srv/shared')).toBe(true);
    expect(within('/srv/shared/a/b.txt', '/srv/shared')).toBe(true);
    expect(within('/srv//shared/./a', '/srv/shared/')).toBe(true);
    expect(within('/srv/shared/a/../b', '/srv/shared')).toBe(true);
    expect(within('/srv/shared/../etc', '/srv/shared')).toBe(false);
    expect(within('/srv/sharedX', '/srv/shared')).toBe(false);
    expect(within('/srv/shared/%2e%2e/etc', '/srv/shared')).toBe(false);
    expect(within('/srv/shared/%2e%2e%2fetc', '/srv/shared')).toBe(false);
    expect(within('/srv/shared/%252e%252e/etc', '/srv/shared')).toBe(false);
    expect(within('/srv/shared/a%2fb', '/srv/shared')).toBe(true);
    expect(within('/srv/shared/a\0', '/srv/shared')).toBe(false);
    expect(within('/srv/shared/%00', '/srv/shared')).toBe(false);
    expect(within('/srv/shared/..\\..\\etc', '/srv/shared')).toBe(false);
    expect(within('/srv/shared/%zz', '/srv/shared')).toBe(false);
    expect(within('srv/shared/a', '/srv/shared')).toBe(false);
    expect(within('/../../srv/shared/a', '/srv/shared')).toBe(true);
  });

  it('no generated path with .., encodings or separators escapes the prefix (fast-check)', () => {
    fc.assert(
      fc.property(paths, (p) => {
        if (!within(p, '/srv/shared')) return;
        const real = mostDecoded(p);
        expect(real.includes('\0')).toBe(false);
        expect(real === '/srv/shared' || real.startsWith('/srv/shared/')).toBe(true);
      }),
      { numRuns: 20_000 },
    );
  });

  it('a plain path under the prefix is within it (fast-check)', () => {
    const name = fc.stringMatching(/^[a-z0-9_-]{1,8}$/);
    fc.assert(
      fc.property(fc.array(name, { maxLength: 6 }), (s) => {
        expect(within(`/srv/shared/${s.join('/')}`, '/srv/shared')).toBe(true);
      }),
    );
  });
});

describe('host', () => {
  it('is the lower-cased host, empty without one', () => {
    expect(host('https://API.Example.com./v1?q=1')).toBe('api.example.com');
    expect(host('https://user:pw@evil.com@api.example.com/')).toBe('api.example.com');
    expect(host('http://[::1]:8080/')).toBe('[::1]');
    expect(host('example.com/path')).toBe('');
    expect(host('mailto:a@b.c')).toBe('');
    expect(host('')).toBe('');
  });
});

function reference(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '*' && pattern[i + 1] === '*') {
      while (pattern[i + 1] === '*') i++;
      re += '.*';
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+?^${}()|[\]\\*]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 's');
}

describe('glob', () => {
  it('matches *, ** and ?', () => {
    expect(glob('/srv/shared/a/b.txt', '/srv/shared/**')).toBe(true);
    expect(glob('/srv/shared/a/b.txt', '/srv/shared/*')).toBe(false);
    expect(glob('/srv/shared/b.txt', '/srv/shared/*.txt')).toBe(true);
    expect(glob('report-7.csv', 'report-?.csv')).toBe(true);
    expect(glob('a/b', 'a?b')).toBe(false);
    expect(glob('', '')).toBe(true);
    expect(glob('x', '')).toBe(false);
  });

  it('agrees with a regular expression of the same pattern (fast-check)', () => {
    const chars = fc.constantFrom('a', 'b', '/', '.', '*', '?', '**');
    fc.assert(
      fc.property(fc.array(fc.constantFrom('a', 'b', '/', '.'), { maxLength: 12 }), fc.array(chars, { maxLength: 8 }), (t, p) => {
        const text = t.join('');
        const pattern = p.join('');
        expect(glob(text, pattern)).toBe(reference(pattern).test(text));
      }),
      { numRuns: 20_000 },
    );
  });

  it('hostile input that makes a backtracking matcher exponential completes', () => {
    expect(glob('a'.repeat(50_000), `${'*a'.repeat(40)}b`)).toBe(false);
    expect(glob('/'.repeat(50_000), `${'**/'.repeat(40)}x`)).toBe(false);
    expect(() => glob('a', '*'.repeat(2000).split('').join('a'))).toThrow(RangeError);
  });
});

describe('toNumber', () => {
  it('reads decimal text, refuses the rest', () => {
    expect(toNumber(' 1500.50 ')).toBe(1500.5);
    expect(toNumber('-1e3')).toBe(-1000);
    expect(toNumber(7)).toBe(7);
    expect(toNumber(7n)).toBe(7);
    for (const bad of ['', '12abc', '0x10', 'Infinity', 'NaN', '1e999', '1 000', null, {}]) expect(() => toNumber(bad)).toThrow(TypeError);
  });
});
