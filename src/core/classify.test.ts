import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MESSAGE_PASSES, ToolFailure, classifyThrown, isToolFailure, sanitizeMessage } from './classify.js';
import { ToolEnvelopeError } from './errors.js';
import { ERROR_CATEGORIES } from './taxonomy.js';

function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

function sysError(code: string, message = `${code}: failed`, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), { code, ...extra });
}

describe('classifyThrown: Node system and library error codes', () => {
  const rows: Array<[string, string, string, boolean]> = [
    ['ENOENT', 'no-target', 'not-found', true],
    ['ENOTDIR', 'no-target', 'not-a-directory', true],
    ['ENOTFOUND', 'no-target', 'host-not-found', true],
    ['EAI_AGAIN', 'no-target', 'host-lookup-failed', true],
    ['EACCES', 'elevation', 'permission-denied', false],
    ['EPERM', 'elevation', 'operation-not-permitted', false],
    ['EROFS', 'elevation', 'read-only-file-system', false],
    ['ETIMEDOUT', 'timeout', 'connection-timeout', true],
    ['ESOCKETTIMEDOUT', 'timeout', 'socket-timeout', true],
    ['UND_ERR_CONNECT_TIMEOUT', 'timeout', 'connect-timeout', true],
    ['UND_ERR_HEADERS_TIMEOUT', 'timeout', 'headers-timeout', true],
    ['UND_ERR_BODY_TIMEOUT', 'timeout', 'body-timeout', true],
    ['ABORT_ERR', 'timeout', 'aborted', true],
    ['ECONNREFUSED', 'internal', 'connection-refused', true],
    ['ECONNRESET', 'internal', 'connection-reset', true],
    ['EPIPE', 'internal', 'broken-pipe', true],
    ['EHOSTUNREACH', 'internal', 'host-unreachable', true],
    ['ENETUNREACH', 'internal', 'network-unreachable', true],
    ['EADDRINUSE', 'internal', 'address-in-use', true],
    ['EBUSY', 'internal', 'resource-busy', true],
    ['EMFILE', 'internal', 'too-many-open-files', true],
    ['EAGAIN', 'internal', 'resource-unavailable', true],
    ['ENOSPC', 'internal', 'no-space-left', false],
    ['EEXIST', 'invalid-argument', 'already-exists', false],
    ['EISDIR', 'invalid-argument', 'is-a-directory', false],
    ['ENOTEMPTY', 'invalid-argument', 'directory-not-empty', false],
    ['ENAMETOOLONG', 'invalid-argument', 'name-too-long', false],
    ['ERR_INVALID_ARG_TYPE', 'invalid-argument', 'invalid-arg-type', false],
    ['ERR_INVALID_ARG_VALUE', 'invalid-argument', 'invalid-arg-value', false],
    ['ERR_OUT_OF_RANGE', 'invalid-argument', 'out-of-range', false],
    ['ERR_MISSING_ARGS', 'invalid-argument', 'missing-args', false],
    ['ERR_INVALID_URL', 'invalid-argument', 'invalid-url', false],
  ];
  for (const [sys, category, code, retryable] of rows) {
    it(`${sys} -> ${category}/${code}, retryable ${retryable}`, () => {
      const e = classifyThrown(sysError(sys));
      expect(e).toMatchObject({ category, code, retryable });
      expect(e.details).toMatchObject({ errorCode: sys });
    });
  }

  it('classifies real errors thrown by Node', async () => {
    const fs = await import('node:fs/promises');
    const missing = await fs.readFile('/definitely/not/here/secret.txt').catch((e: unknown) => e);
    const e = classifyThrown(missing);
    expect(e).toMatchObject({ category: 'no-target', code: 'not-found', retryable: true });
    expect(e.detail).toBe("ENOENT: no such file or directory, open '<path>'");
    expect(e.details).toEqual({ errorName: 'Error', errorCode: 'ENOENT', syscall: 'open' });

    const typeErr = thrownBy(() => Buffer.from(42 as unknown as string));
    expect(classifyThrown(typeErr)).toMatchObject({ category: 'invalid-argument', code: 'invalid-arg-type' });

    const urlErr = thrownBy(() => new URL('not a url'));
    expect(classifyThrown(urlErr)).toMatchObject({ category: 'invalid-argument', code: 'invalid-url' });
  });

  it('follows the cause chain of wrapped system errors (fetch failed)', () => {
    const wrapped = new TypeError('fetch failed', { cause: sysError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:9') });
    const e = classifyThrown(wrapped);
    expect(e).toMatchObject({ category: 'internal', code: 'connection-refused', retryable: true });
    expect(e.detail).toBe('fetch failed: connect ECONNREFUSED 127.0.0.1:9');
    expect(e.details).toMatchObject({ errorName: 'TypeError', errorCode: 'ECONNREFUSED' });
  });
});

describe('classifyThrown: DOMException and Error names', () => {
  it('AbortError (DOMException) -> timeout/aborted', () => {
    const c = new AbortController();
    c.abort();
    expect(classifyThrown(c.signal.reason)).toMatchObject({ category: 'timeout', code: 'aborted', retryable: true });
  });
  it('TimeoutError (DOMException from AbortSignal.timeout) -> timeout/operation-timeout', () => {
    expect(classifyThrown(new DOMException('The operation timed out.', 'TimeoutError'))).toMatchObject({
      category: 'timeout',
      code: 'operation-timeout',
      detail: 'The operation timed out.',
    });
  });
  it.each([
    ['NotFoundError', 'no-target', 'not-found'],
    ['NotAllowedError', 'elevation', 'not-allowed'],
    ['SecurityError', 'elevation', 'security-error'],
    ['DataCloneError', 'internal', 'data-clone-error'],
  ])('%s -> %s/%s', (name, category, code) => {
    expect(classifyThrown(new DOMException('x', name))).toMatchObject({ category, code });
  });
  it('structuredClone failure is a real DataCloneError', () => {
    const err = thrownBy(() => structuredClone(() => 1));
    expect(classifyThrown(err)).toMatchObject({ category: 'internal', code: 'data-clone-error' });
  });
  it('SyntaxError from JSON.parse -> invalid-argument/invalid-json', () => {
    const err = thrownBy(() => JSON.parse('{"a":'));
    expect(classifyThrown(err)).toMatchObject({ category: 'invalid-argument', code: 'invalid-json', retryable: false });
  });
  it('other SyntaxError (a bad RegExp) -> invalid-argument/invalid-syntax', () => {
    const err = thrownBy(() => new RegExp('('));
    expect(classifyThrown(err)).toMatchObject({ category: 'invalid-argument', code: 'invalid-syntax' });
  });
  it.each([
    ['Error', new Error('boom')],
    ['TypeError', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['RangeError', new RangeError('Invalid array length')],
    ['ReferenceError', new ReferenceError('foo is not defined')],
  ])('%s -> internal/unhandled-exception with the message', (name, err) => {
    const e = classifyThrown(err);
    expect(e).toMatchObject({ category: 'internal', code: 'unhandled-exception', retryable: false });
    expect(e.detail).toBe(`Unhandled ${name}: ${err.message}`);
    expect(e.details).toEqual({ errorName: name });
  });
  it('custom Error subclass keeps its name', () => {
    class DbError extends Error {
      override name = 'DbError';
    }
    expect(classifyThrown(new DbError('deadlock'))).toMatchObject({ code: 'unhandled-exception', detail: 'Unhandled DbError: deadlock' });
  });
  it('AggregateError records how many errors it held', () => {
    const e = classifyThrown(new AggregateError([new Error('a'), new Error('b')], 'all failed'));
    expect(e).toMatchObject({ category: 'internal', detail: 'Unhandled AggregateError: all failed', details: { errorCount: 2 } });
  });
  it('ToolEnvelopeError -> internal with the library code', () => {
    expect(classifyThrown(new ToolEnvelopeError('not-json-safe', 'circular at /a'))).toMatchObject({
      category: 'internal',
      code: 'not-json-safe',
      detail: 'ToolEnvelopeError: circular at /a',
    });
  });
});

describe('classifyThrown: typed failures', () => {
  it('returns a ToolFailure as given, filling retryable from the category', () => {
    const f = new ToolFailure({
      category: 'no-target',
      code: 'window-not-found',
      detail: 'No window "/home/x"',
      remediation: 'Open it first.',
      retryAfterMs: 500,
      details: { title: 'Report' },
    });
    expect(classifyThrown(f)).toEqual({
      category: 'no-target',
      code: 'window-not-found',
      detail: 'No window "/home/x"',
      remediation: 'Open it first.',
      retryable: true,
      retryAfterMs: 500,
      details: { title: 'Report' },
    });
    expect(isToolFailure(f)).toBe(true);
  });
  it('keeps an explicit retryable', () => {
    expect(classifyThrown(new ToolFailure({ category: 'timeout', code: 'x', detail: 'y', retryable: false })).retryable).toBe(false);
  });
  it('recognises a ToolFailure from another copy of the library by shape', () => {
    const foreign = Object.assign(new Error('y'), { name: 'ToolFailure', toolError: { category: 'focus', code: 'x', detail: 'y' } });
    expect(isToolFailure(foreign)).toBe(true);
    expect(classifyThrown(foreign)).toMatchObject({ category: 'focus', code: 'x' });
  });
  it('accepts a thrown plain ToolError-shaped object', () => {
    expect(classifyThrown({ category: 'stale-element', code: 'ref-expired', detail: 'gone' })).toEqual({
      category: 'stale-element',
      code: 'ref-expired',
      detail: 'gone',
      retryable: true,
    });
  });
  it('rejects an unknown category when constructing a ToolFailure', () => {
    expect(() => new ToolFailure({ category: 'oops' as 'internal', code: 'x', detail: 'y' })).toThrow(ToolEnvelopeError);
  });
});

describe('classifyThrown: non-Error throws', () => {
  const sym = Symbol('weird');
  const rows: Array<[string, unknown, string, string]> = [
    ['string', 'disk on fire', 'The tool threw a string: disk on fire', 'string'],
    ['empty string', '', 'The tool threw an empty string', 'string'],
    ['number', 42, 'The tool threw a number: 42', 'number'],
    ['NaN', Number.NaN, 'The tool threw a number: NaN', 'number'],
    ['bigint', 10n, 'The tool threw a bigint: 10', 'bigint'],
    ['boolean', false, 'The tool threw a boolean: false', 'boolean'],
    ['null', null, 'The tool threw null', 'null'],
    ['undefined', undefined, 'The tool threw undefined', 'undefined'],
    ['symbol', sym, 'The tool threw a symbol: weird', 'symbol'],
    ['function', () => 1, 'The tool threw a function', 'function'],
    ['plain object', { a: 1 }, 'The tool threw an object', 'object'],
    ['object with message', { message: 'nope' }, 'The tool threw an object: nope', 'object'],
    ['array', [1, 2], 'The tool threw an array of 2', 'object'],
    ['class instance', new (class Weird {})(), 'The tool threw an object (Weird)', 'object'],
    ['null-prototype object', Object.create(null), 'The tool threw an object', 'object'],
  ];
  for (const [label, thrown, detail, thrownType] of rows) {
    it(`${label} -> internal/non-error-thrown`, () => {
      expect(classifyThrown(thrown)).toEqual({
        category: 'internal',
        code: 'non-error-thrown',
        detail,
        retryable: false,
        details: { thrownType },
      });
    });
  }
  it('an error-like object (name + message) is treated as an Error', () => {
    expect(classifyThrown({ name: 'AbortError', message: 'stop' })).toMatchObject({ category: 'timeout', code: 'aborted' });
  });
  it('every result uses a category from the closed set', () => {
    for (const [, thrown] of rows) expect(ERROR_CATEGORIES).toContain(classifyThrown(thrown).category);
  });
});

describe('classifyThrown: no leaks in detail', () => {
  it('never puts the stack into detail, only into details.stack with includeStack', () => {
    const err = new Error('boom');
    const plain = classifyThrown(err);
    expect(plain.detail).not.toMatch(/\bat\b.*:\d+/);
    expect(plain.details?.stack).toBeUndefined();
    const withStack = classifyThrown(err, { includeStack: true });
    expect(withStack.detail).toBe('Unhandled Error: boom');
    expect(String(withStack.details?.stack)).toContain('classify.test.ts');
  });
  it('cuts a message that embeds a stack to its first line', () => {
    const e = classifyThrown(new Error('bad thing\n    at foo (/srv/app/x.js:1:2)\n    at bar'));
    expect(e.detail).toBe('Unhandled Error: bad thing');
  });
  it('keeps only the first line, whatever the line break: nothing after it reaches detail', () => {
    const query = classifyThrown(new Error("query failed\nSELECT * FROM users WHERE email='alice@example.com'\n    at Query.run (x)"));
    expect(query.detail).toBe('Unhandled Error: query failed');
    for (const br of ['\r\n', '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029']) {
      expect(sanitizeMessage(`cr${br}second line`), JSON.stringify(br)).toBe('cr');
      expect(classifyThrown(new TypeError(`first${br}second`)).detail, JSON.stringify(br)).toBe('Unhandled TypeError: first');
    }
    // Blank lines before the message are not its first line.
    expect(sanitizeMessage('\n \r\n  boom  \nsecond')).toBe('boom');
    expect(sanitizeMessage('\n\n\u2028')).toBe('');
  });
  it('replaces POSIX, Windows, UNC and file: paths', () => {
    expect(sanitizeMessage("open '/home/alice/.ssh/id_rsa'")).toBe("open '<path>'");
    expect(sanitizeMessage('at ./src/secret/config.ts')).toBe('at <path>');
    expect(sanitizeMessage('read C:\\Users\\alice\\token.txt failed')).toBe('read <path> failed');
    expect(sanitizeMessage('share \\\\srv\\share\\x failed')).toBe('share <path> failed');
    expect(sanitizeMessage('load file:///opt/app/main.js failed')).toBe('load <path> failed');
    expect(sanitizeMessage('GET https://example.com/a/b returned 500')).toBe('GET https://example.com/a/b returned 500');
  });
  it("does not take the pattern in V8's invalid regular expression message for a path", () => {
    const thrown = (source: string, flags?: string) => {
      try {
        new RegExp(source, flags);
      } catch (e) {
        return e;
      }
      throw new Error(`${source} compiled`);
    };
    expect(classifyThrown(thrown('(')).detail).toBe('Invalid regular expression: /(/: Unterminated group');
    expect(classifyThrown(thrown('a[b(', 'gu')).detail).toBe('Invalid regular expression: /a[b(/gu: Unterminated character class');
    expect(classifyThrown(thrown('(')).code).toBe('invalid-syntax');
    // A pattern that holds a path is still redacted, as is a path after the message.
    expect(classifyThrown(thrown('x/home/alice/(')).detail).toBe('Invalid regular expression: <path>: Unterminated group');
    expect(sanitizeMessage('Invalid regular expression: /(/: read /etc/app/rules.txt')).toBe('Invalid regular expression: /(/: read <path>');
  });
  it('redacts credentials and secret environment values', () => {
    expect(sanitizeMessage('connect postgres://bob:hunter2@db:5432 failed')).toBe('connect postgres://<redacted>@db:5432 failed');
    expect(sanitizeMessage('Authorization: Bearer abc.def-ghi')).toBe('Authorization: Bearer <redacted>');
    expect(sanitizeMessage('bad password=hunter2 and api_key: XYZ123')).toBe('bad password=<redacted> and api_key: <redacted>');
    process.env.TE_TEST_API_KEY = 'sk-live-0123456789';
    try {
      expect(classifyThrown('key sk-live-0123456789 rejected').detail).toBe('The tool threw a string: key <redacted> rejected');
    } finally {
      delete process.env.TE_TEST_API_KEY;
    }
  });
  it('caps the length and strips control characters', () => {
    const e = classifyThrown('x'.repeat(10_000));
    expect(e.detail!.length).toBe(500);
    expect(e.detail!.endsWith('…')).toBe(true);
    expect(classifyThrown('a\u0000b\u001bc', { maxDetailLength: 100 }).detail).toBe('The tool threw a string: abc');
    expect(sanitizeMessage('😀'.repeat(10), 4)).toBe('😀…');
  });
  it('never lets a hostile name into details', () => {
    const err = new Error('x');
    err.name = '/etc/passwd <script>';
    expect(classifyThrown(err).details).toEqual({ errorName: 'Error' });
  });
});

/** sanitizeMessage in regular expressions only: the reference of its linear passes (no env cases here). */
function sanitizeReference(message: string, max = 500): string {
  // The first line that is not blank, from its first non-space character.
  let text = /^[\s\u0085]*([^\n\r\v\f\u0085\u2028\u2029]*)/.exec(message)![1]!;
  text = text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@'"]+@/gi, '$1<redacted>@');
  for (const [pattern, replacement] of MESSAGE_PASSES) text = text.replace(pattern, replacement);
  text = text.trim();
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

describe('sanitizeMessage on hostile text', () => {
  const PIECES = [
    'https',
    'x-git+ssh',
    '://',
    'u',
    ':',
    'p4ss',
    '@',
    'h',
    '/',
    ' ',
    '\n',
    '\t',
    '  \n  ',
    '\r',
    '\u2028',
    '-',
    '.',
    'a',
    '_',
    'Bearer ',
    'token=',
    'file://',
    '\\',
    'C:',
  ];
  const text = fc.array(fc.constantFrom(...PIECES), { maxLength: 30 }).map((a) => a.join(''));

  it('gives what its regular expressions gave, on any text', () => {
    fc.assert(
      fc.property(fc.oneof(text, fc.string()), (s) => {
        expect(sanitizeMessage(s, 10_000)).toBe(sanitizeReference(s, 10_000));
      }),
      { numRuns: 20_000 },
    );
  });

  it('takes linear time on the runs that made its expressions quadratic', () => {
    // 64 000 characters of each took 2.6 to 4.6 s; a few ms now.
    for (const unit of ['\n\n', '   ', 'a-', '.a', '\n ']) {
      const t0 = performance.now();
      sanitizeMessage(unit.repeat(32_000));
      expect(performance.now() - t0).toBeLessThan(500);
    }
  });
});
