import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isToolEnvelopeError } from './errors.js';
import {
  MAX_CLASSIFIED_TEXT,
  PLAIN_FAILURE_RULES_FORMAT,
  classifyPlainFailure,
  classifyPlainFailureReference,
  compileFailureRules,
  inferredRetryable,
  shippedFailureRules,
  type PlainFailureRule,
} from './plain-failure.js';
import { NeedleScanner } from './needle-scanner.js';
import { regexNeedles } from './regex-needles.js';

const root = join(import.meta.dirname, '..', '..');
const shippedFile = JSON.parse(readFileSync(join(root, 'rules', 'plain-failures.json'), 'utf8')) as { rules: PlainFailureRule[] };
const corpus = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'plain-failure-corpus.json'), 'utf8')) as {
  cases: { answer: { text?: string } }[];
};

const rules = (list: Partial<PlainFailureRule>[], name = 'user') => compileFailureRules({ format: PLAIN_FAILURE_RULES_FORMAT, rules: list }, name);

/** First rule (in order) whose pattern matches, without any prefilter: the meaning the engine must keep. */
function naive(text: string): string | null {
  const t = text.slice(0, MAX_CLASSIFIED_TEXT);
  for (const r of shippedFile.rules) if (new RegExp(r.pattern, r.caseSensitive ? '' : 'i').test(t)) return r.id;
  return null;
}

describe('the shipped rule set', () => {
  it('compiles, with unique ids', () => {
    expect(shippedFailureRules().size).toBe(shippedFile.rules.length);
    expect(new Set(shippedFile.rules.map((r) => r.id)).size).toBe(shippedFile.rules.length);
  });

  it('never says retryable: true for invalid-argument, elevation or no-target unless the rule says so', () => {
    for (const r of shippedFile.rules) {
      if (['invalid-argument', 'elevation', 'no-target'].includes(r.category) && r.retryable === undefined) {
        expect(classifyPlainFailure({ text: 'x' }, [rules([{ ...r, id: 'probe', pattern: '^x$' }])])?.retryable).toBe(false);
      }
    }
    expect(inferredRetryable('no-target')).toBe(false);
    expect(inferredRetryable('timeout')).toBe(true);
  });

  it('classifies the corpus texts exactly as trying every pattern in order would (the prefilter loses nothing)', () => {
    for (const c of corpus.cases) {
      const text = c.answer.text ?? '';
      expect(classifyPlainFailure({ text }, [shippedFailureRules()])?.rule ?? null, text).toBe(naive(text));
      expect(classifyPlainFailureReference({ text }, [shippedFailureRules()])?.rule ?? null, text).toBe(naive(text));
    }
  });

  it('the fast path and the reference agree on texts built from every rule literal, in any case, with non-ASCII look-alikes', () => {
    // Every literal run of every pattern (not only the chosen needles), so that near misses are generated too.
    const literals = shippedFile.rules.flatMap((r) => r.pattern.split(/\\.|[^A-Za-z0-9 :'._-]+/).filter((p) => p.length >= 2));
    const word = fc.constantFrom(...literals);
    const piece = fc.oneof(
      word,
      word.map((p) => p.toUpperCase()),
      fc.tuple(word, fc.nat()).map(([p, k]) => [...p].map((ch, i) => ((k >> (i % 30)) & 1 ? ch.toUpperCase() : ch.toLowerCase())).join('')),
      fc.tuple(word, fc.nat()).map(([p, k]) => p.slice(0, k % (p.length + 1))),
      fc.constantFrom('MCP error -32602: ', 'Error: ', 'fatal: ', "'", '(', ' ', '\n', ': ', '404', '\u212a', '\u017f', '\u0130', '\ud83d', 'é'),
      fc.string({ maxLength: 8 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 16 }), fc.boolean(), (parts, spaced) => {
        const text = parts.join(spaced ? ' ' : '');
        const fast = classifyPlainFailure({ text }, [shippedFailureRules()]);
        expect(fast).toEqual(classifyPlainFailureReference({ text }, [shippedFailureRules()]));
        expect(fast?.rule ?? null).toBe(naive(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('agrees with trying every pattern on generated texts made of needle pieces, case changes and noise', () => {
    const pieces = shippedFile.rules.flatMap((r) => regexNeedles(r.pattern, false) ?? []);
    const piece = fc.oneof(
      fc.constantFrom(...pieces),
      fc.constantFrom(...pieces).map((p) => p.toUpperCase()),
      fc.constantFrom(...pieces).map((p) => p.slice(1)),
      fc.string({ maxLength: 12 }),
      fc.constantFrom(' ', '\n', "'", ': ', 'İ', 'K', 'ſ'),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (parts) => {
        const text = parts.join('');
        expect(classifyPlainFailure({ text }, [shippedFailureRules()])?.rule ?? null).toBe(naive(text));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('regexNeedles', () => {
  it('finds the literals a pattern cannot match without, and gives up when there are none', () => {
    expect(regexNeedles('\\b(?:EACCES|EPERM)\\b|operation not permitted', true)).toEqual(['eacces', 'eperm', 'operation not permitted']);
    expect(regexNeedles('^Entity with name .* not found$', true)).toEqual(['entity with name ']);
    expect(regexNeedles('colou?r', true)).toEqual(['colo']);
    expect(regexNeedles('co?lour', true)).toEqual(['lour']);
    expect(regexNeedles('abc|\\d+', true)).toBeNull();
    expect(regexNeedles('(?:abc)?def', false)).toEqual(['def']);
    expect(regexNeedles('(?!abc)xyz', false)).toEqual(['xyz']);
    expect(regexNeedles('a[bc]d', false)).toBeNull();
  });
});

describe('NeedleScanner', () => {
  const ascii = fc.string({ unit: fc.constantFrom(..."abcABC -:'éK"), maxLength: 40 });
  const needle = fc.string({ unit: fc.constantFrom(..."abcABC -:'"), minLength: 1, maxLength: 4 });

  it('finds a group exactly when one of its needles occurs, ASCII letters in any case (as a case-insensitive RegExp would)', () => {
    fc.assert(
      fc.property(ascii, fc.array(fc.array(needle, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 6 }), (text, groups) => {
        const scanner = new NeedleScanner(groups);
        scanner.scan(text);
        groups.forEach((g, i) => {
          const occurs = g.some((n) => new RegExp(n.replace(/[-\\^$*+?.()|[\]{}]/g, '\\$&'), 'i').test(text));
          expect(scanner.has(i), `${JSON.stringify(g)} in ${JSON.stringify(text)}`).toBe(occurs);
        });
      }),
      { numRuns: 2000 },
    );
  });

  it('one scanner reused over texts of any length and any UTF-8 width: no answer left from the bytes of a longer text before', () => {
    // The scan reads four bytes a step: needles across word boundaries, at the very end, after
    // 2-, 3- and 4-byte characters, and a shorter text over the bytes of a longer one.
    const groups = [['timeout'], ['abc'], ["c'a"], ['k-k']];
    const scanner = new NeedleScanner(groups);
    const unit = fc.constantFrom(..."abcKk-'timeout", 'é', '€', '😀', 'İ', '\u212a', '\ud83d');
    fc.assert(
      fc.property(fc.array(fc.string({ unit, maxLength: 24 }), { minLength: 1, maxLength: 6 }), (texts) => {
        for (const text of texts) {
          scanner.scan(text);
          groups.forEach((g, i) => {
            const occurs = g.some((n) => new RegExp(n.replace(/[-\\^$*+?.()|[\]{}]/g, '\\$&'), 'i').test(text));
            expect(scanner.has(i), `${JSON.stringify(g)} in ${JSON.stringify(text)}`).toBe(occurs);
          });
        }
      }),
      { numRuns: 1000 },
    );
    scanner.scan(`${'x'.repeat(40)}timeout`);
    expect(scanner.has(0)).toBe(true);
    scanner.scan(`${'x'.repeat(40)}timeou`);
    expect(scanner.has(0)).toBe(false);
  });

  it('a group without needles, or with one it cannot scan, is always a candidate; answers are per scan', () => {
    const scanner = new NeedleScanner([null, [], ['é'], ['timeout']]);
    scanner.scan('nothing here');
    expect([0, 1, 2, 3].map((g) => scanner.has(g))).toEqual([true, true, true, false]);
    scanner.scan('a TimeOut');
    expect(scanner.has(3)).toBe(true);
    scanner.scan('');
    expect(scanner.has(3)).toBe(false);
  });

  it('bounds its table: groups beyond the state budget are always candidates, never lost', () => {
    // 300 needles of 30 characters that share only their first digits: more states than the budget.
    const needle = (i: number): string => `${String(i).padStart(3, '0')}-${'q'.repeat(26)}`;
    const groups = Array.from({ length: 300 }, (_, i) => [needle(i)]);
    const scanner = new NeedleScanner(groups);
    scanner.scan(`${needle(3)} and ${needle(299).toUpperCase()}`);
    expect(scanner.has(3)).toBe(true);
    expect(scanner.has(4)).toBe(false);
    expect(scanner.has(299)).toBe(true);
    expect(scanner.has(298)).toBe(true);
  });
});

describe('compileFailureRules and classifyPlainFailure', () => {
  it('user rules come first: they override the shipped ones', () => {
    const user = rules([{ id: 'mine.enoent', pattern: '^ENOENT', category: 'internal', code: 'storage-gone', retryable: true }]);
    const text = "ENOENT: no such file or directory, open '/x'";
    expect(classifyPlainFailure({ text }, [shippedFailureRules()])).toMatchObject({ rule: 'posix.enoent', category: 'no-target', retryable: false });
    expect(classifyPlainFailure({ text }, [user, shippedFailureRules()])).toEqual({
      rule: 'mine.enoent',
      ruleSet: 'user',
      category: 'internal',
      code: 'storage-gone',
      retryable: true,
    });
  });

  it('a rule may state retryable, a reason, match case-sensitively, and look into the structured content', () => {
    const set = rules([
      { id: 'cs', pattern: 'LOCKED', caseSensitive: true, category: 'internal', code: 'locked', retryable: true, reason: 'record_locked' },
      { id: 'sc', pattern: '^E_MISSING$', in: '/error/code', category: 'no-target', code: 'missing' },
    ]);
    expect(classifyPlainFailure({ text: 'row LOCKED' }, [set])).toMatchObject({ rule: 'cs', retryable: true, reason: 'record_locked' });
    expect(classifyPlainFailure({ text: 'row locked' }, [set])).toBeNull();
    expect(classifyPlainFailure({ text: 'failed', structured: { error: { code: 'E_MISSING' } } }, [set])).toMatchObject({ rule: 'sc', retryable: false });
    expect(classifyPlainFailure({ text: 'failed', structured: { error: { code: 7 } } }, [set])).toBeNull();
  });

  it('nothing unmatched is guessed', () => {
    expect(classifyPlainFailure({ text: 'boom' }, [shippedFailureRules()])).toBeNull();
    expect(classifyPlainFailure({ text: '' }, [shippedFailureRules()])).toBeNull();
  });

  it('looks at the first MAX_CLASSIFIED_TEXT characters only (bounded time for a hostile text)', () => {
    const far = 'x'.repeat(MAX_CLASSIFIED_TEXT) + ' ENOENT';
    expect(classifyPlainFailure({ text: far }, [shippedFailureRules()])).toBeNull();
    expect(classifyPlainFailure({ text: far.slice(10) }, [shippedFailureRules()])?.rule).toBe('posix.enoent');
  });

  it('a bad rule file is one invalid-option error listing every problem by pointer', () => {
    let caught: unknown;
    try {
      compileFailureRules(
        {
          format: PLAIN_FAILURE_RULES_FORMAT,
          rules: [
            { id: 'a', pattern: '(unclosed', category: 'no-target', code: 'x' },
            { id: 'a', pattern: 'ok', category: 'nope', code: 'Not Kebab', extra: 1 },
          ],
        },
        'rules.json',
      );
    } catch (err) {
      caught = err;
    }
    expect(isToolEnvelopeError(caught, 'invalid-option')).toBe(true);
    const e = caught as { message: string; issues: { path: string }[] };
    expect(e.message).toContain('rules.json');
    expect(e.issues.map((i) => i.path)).toEqual(['/rules/0/pattern', '/rules/1/extra', '/rules/1/id', '/rules/1/category', '/rules/1/code']);
    expect(() => compileFailureRules({ rules: [] }, 'f')).toThrow(/format/);
    expect(() => compileFailureRules([], 'f')).toThrow(/invalid plain-failure rules/);
  });
});
