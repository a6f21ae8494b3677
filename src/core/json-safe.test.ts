import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { ToolEnvelopeError } from './errors.js';
import { isJsonSafe, jsonNestsDeeper, parseJson, toJsonSafe } from './json-safe.js';

function thrown(fn: () => unknown): ToolEnvelopeError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ToolEnvelopeError) return e;
    throw new Error(`expected a ToolEnvelopeError, got ${String(e)}`);
  }
  throw new Error('expected a throw');
}

describe('parseJson', () => {
  it('parses what JSON.parse parses', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = JSON.stringify(v);
        expect(parseJson(text)).toEqual(JSON.parse(text));
      }),
      { numRuns: 1000 },
    );
  });

  it('reports malformed JSON as invalid-json with position, line and column', () => {
    const e = thrown(() => parseJson('{\n  "a": 1,\n  "b": }'));
    expect(e.code).toBe('invalid-json');
    expect(e.message).toContain('line 3, column 8');
    expect(e.issues[0]?.params).toMatchObject({ line: 3, column: 8, position: 19 });
    const cases: Array<[string, number, RegExp]> = [
      ['', 0, /end of input/],
      ['{"a":1', 6, /expected ','/],
      ['[1,2,]', 5, /unexpected character "]"/],
      ['{"a":1} x', 8, /after the JSON value/],
      ['"abc', 4, /unterminated string/],
      ['{a:1}', 1, /property name/],
      ['[01]', 2, /malformed number/],
      ['["\\x"]', 2, /bad escape/],
      ['["a\nb"]', 3, /control character/],
      ['[1 2]', 3, /expected ','/],
      ['{"a" 1}', 5, /expected ':'/],
      ['[tru]', 1, /unexpected character "t"/],
    ];
    for (const [text, position, reason] of cases) {
      const err = thrown(() => parseJson(text));
      expect(err.code, text).toBe('invalid-json');
      expect(err.issues[0]?.params?.position, text).toBe(position);
      expect(err.message, text).toMatch(reason);
    }
  });

  it('any text JSON.parse rejects is invalid-json, never another error', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        let native = true;
        try {
          JSON.parse(text);
        } catch {
          native = false;
        }
        if (native) expect(parseJson(text)).toEqual(JSON.parse(text));
        else expect(thrown(() => parseJson(text)).code).toBe('invalid-json');
      }),
      { numRuns: 2000 },
    );
  });

  it('a text over 1 MiB is held to the grammar first: JSON.parse never builds part of one that is not JSON', () => {
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const unclosed = `[${'0,'.repeat(600_000)}`;
      const e = thrown(() => parseJson(unclosed));
      expect(e.message).toBe(`invalid JSON at line 1, column ${unclosed.length + 1} (position ${unclosed.length}): unexpected end of input`);
      expect(parse).not.toHaveBeenCalled();
      expect(parseJson(`${unclosed}0]`)).toHaveLength(600_001);
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
  });

  it('over 1 MiB, the verdicts and errors are those of the short text (its positions moved by the padding)', () => {
    const pad = ' '.repeat(1 << 20);
    const pieces = ['0', '1', '-', '.', 'e', 'E', '+', '01', '1.', '1e', '-0', '[', ']', '{', '}', ',', ':', '"a"', '"\\u12', '"\\u1234"'];
    const texts = fc.oneof(
      fc.json(),
      fc
        .array(fc.constantFrom(...pieces, 'tru', 'true', 'nul', 'null', 'false', ' ', '\t', '"\\x"', '"\u0001"', 'x'), { maxLength: 12 })
        .map((a) => a.join('')),
    );
    const outcome = (text: string, shift: number) => {
      try {
        return { value: parseJson(text) };
      } catch (e) {
        const { code, params } = (e as ToolEnvelopeError).issues[0]!;
        return { code, reason: params?.reason, position: Number(params?.position) - shift };
      }
    };
    // Too deep before, at, or after where the text stops being JSON: too-deep wins, at the same place.
    for (const text of ['['.repeat(1001), `[x${'['.repeat(1001)}`, `${'['.repeat(1000)}x[`, `${'[{"a":'.repeat(500)}[]`, `${'['.repeat(999)}"["]`]) {
      expect(outcome(pad + text, pad.length), text.slice(0, 12)).toEqual(outcome(text, 0));
    }
    fc.assert(
      fc.property(texts, (text) => {
        expect(outcome(pad + text, pad.length)).toEqual(outcome(text, 0));
      }),
      // Each run scans 1 MiB a few times: a few dozen runs (the edge cases are in `pieces`).
      { numRuns: 40 },
    );
  });

  it('rejects text over maxBytes with too-large, counting UTF-8 bytes', () => {
    expect(thrown(() => parseJson('"12345"', { maxBytes: 6 })).code).toBe('too-large');
    expect(parseJson('"12345"', { maxBytes: 7 })).toBe('12345');
    // "é" is 2 bytes: '"éé"' is 6 bytes in 4 code units.
    expect(thrown(() => parseJson('"éé"', { maxBytes: 5 })).code).toBe('too-large');
    expect(parseJson('"éé"', { maxBytes: 6 })).toBe('éé');
  });

  it('rejects nesting beyond maxDepth with too-deep, even 100 000 levels deep', () => {
    expect(parseJson('[[1]]', { maxDepth: 2 })).toEqual([[1]]);
    expect(thrown(() => parseJson('[[1]]', { maxDepth: 1 })).code).toBe('too-deep');
    // Brackets inside strings do not count.
    expect(parseJson('["[[[[", {"a":"{{{{\\"[["}]', { maxDepth: 2 })).toEqual(['[[[[', { a: '{{{{"[[' }]);
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const e = thrown(() => parseJson(deep));
    expect(e.code).toBe('too-deep');
    expect(e.issues[0]?.params).toMatchObject({ maxDepth: 1000, position: 1000 });
    expect(thrown(() => parseJson('{"a":'.repeat(100_000))).code).toBe('too-deep');
  });

  it('jsonNestsDeeper says what parseJson would refuse for depth, without parsing', () => {
    expect(jsonNestsDeeper('[[1]]', 2)).toBe(false);
    expect(jsonNestsDeeper('[[1]]', 1)).toBe(true);
    expect(jsonNestsDeeper('["[[[[", {"a":"{{{{\\"[["}]', 2)).toBe(false);
    expect(jsonNestsDeeper('{"a":"\\\\"}', 0)).toBe(true);
    expect(jsonNestsDeeper('['.repeat(1001) + ']'.repeat(1001), 1000)).toBe(true);
    expect(jsonNestsDeeper('['.repeat(1000) + ']'.repeat(1000), 1000)).toBe(false);
    // Unclosed text is judged on what it opened.
    expect(jsonNestsDeeper('{"a":'.repeat(100_000), 1000)).toBe(true);
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 0, max: 8 }), (v, limit) => {
        const text = JSON.stringify(v);
        let refused: boolean;
        try {
          parseJson(text, { maxDepth: limit });
          refused = false;
        } catch (e) {
          refused = (e as ToolEnvelopeError).code === 'too-deep';
        }
        expect(jsonNestsDeeper(text, limit)).toBe(refused);
      }),
    );
  });

  it('keeps __proto__ and constructor as own data properties without polluting prototypes', () => {
    const v = parseJson('{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":2}}}') as Record<string, unknown>;
    expect(Object.keys(v)).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(v, '__proto__')?.value).toEqual({ polluted: 1 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((v as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('rejects bad options with invalid-option', () => {
    expect(thrown(() => parseJson('1', { maxDepth: -1 })).code).toBe('invalid-option');
    expect(thrown(() => parseJson('1', { maxBytes: 1.5 })).code).toBe('invalid-option');
  });
});

describe('toJsonSafe', () => {
  it('returns plain JSON as the same reference with nothing replaced', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const r = toJsonSafe(v);
        expect(r.value).toBe(v);
        expect(r.replaced).toEqual([]);
        expect(isJsonSafe(v)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('replaces each non-JSON value and lists it with its JSON pointer', () => {
    const input = {
      big: 12345678901234567890n,
      nan: Number.NaN,
      inf: [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY],
      undef: undefined,
      fn() {},
      sym: Symbol('s'),
      list: [undefined, () => 1, Symbol('x'), 1],
      when: new Date(0),
      bad: new Date(Number.NaN),
      'a/b~c': new Set([1, 2n]),
      ok: 'plain',
    };
    const { value, replaced } = toJsonSafe(input);
    expect(value).toEqual({
      big: '12345678901234567890',
      nan: null,
      inf: [null, null],
      list: [null, null, null, 1],
      when: '1970-01-01T00:00:00.000Z',
      bad: null,
      'a/b~c': [1, '2'],
      ok: 'plain',
    });
    expect(JSON.parse(JSON.stringify(value))).toEqual(value);
    expect(replaced).toEqual([
      { path: '/big', from: 'bigint', to: 'string' },
      { path: '/nan', from: 'NaN', to: 'null' },
      { path: '/inf/0', from: 'Infinity', to: 'null' },
      { path: '/inf/1', from: '-Infinity', to: 'null' },
      { path: '/undef', from: 'undefined', to: 'omitted' },
      { path: '/fn', from: 'function', to: 'omitted' },
      { path: '/sym', from: 'symbol', to: 'omitted' },
      { path: '/list/0', from: 'undefined', to: 'null' },
      { path: '/list/1', from: 'function', to: 'null' },
      { path: '/list/2', from: 'symbol', to: 'null' },
      { path: '/when', from: 'Date', to: 'string' },
      { path: '/bad', from: 'Date', to: 'null' },
      { path: '/a~1b~0c', from: 'Set', to: 'array' },
      { path: '/a~1b~0c/1', from: 'bigint', to: 'string' },
    ]);
    // The input was not modified.
    expect(input.big).toBe(12345678901234567890n);
  });

  it('converts Maps, binary data, boxed primitives, RegExps, Errors and class instances', () => {
    class Point {
      constructor(
        public x: number,
        public y: number,
      ) {}
      get norm(): number {
        return Math.hypot(this.x, this.y);
      }
    }
    const err = Object.assign(new TypeError('boom'), { code: 'E_BOOM' });
    const { value, replaced } = toJsonSafe({
      byName: new Map<string, unknown>([
        ['a', 1],
        ['__proto__', 2],
      ]),
      byAny: new Map<unknown, unknown>([
        [1, 'one'],
        [{ k: 1 }, 'obj'],
      ]),
      bytes: new Uint8Array([104, 105]),
      buf: Buffer.from('hello'),
      ab: new Uint16Array([1]).buffer,
      boxed: [Object(1), Object('s'), Object(true)],
      re: /a+/gi,
      err,
      point: new Point(3, 4),
    });
    const v = value as Record<string, unknown>;
    expect(Object.getOwnPropertyDescriptor(v.byName, '__proto__')?.value).toBe(2);
    expect(Object.getPrototypeOf(v.byName)).toBe(Object.prototype);
    expect(v.byAny).toEqual([
      [1, 'one'],
      [{ k: 1 }, 'obj'],
    ]);
    expect(v.bytes).toEqual({ $binary: 'aGk=', type: 'Uint8Array' });
    expect(v.buf).toEqual({ $binary: Buffer.from('hello').toString('base64'), type: 'Buffer' });
    expect(v.ab).toEqual({ $binary: Buffer.from(new Uint16Array([1]).buffer).toString('base64'), type: 'ArrayBuffer' });
    expect(v.boxed).toEqual([1, 's', true]);
    expect(v.re).toBe('/a+/gi');
    expect(v.err).toEqual({ name: 'TypeError', message: 'boom', code: 'E_BOOM' });
    expect(v.point).toEqual({ x: 3, y: 4 });
    expect(replaced.map((r) => [r.path, r.from, r.to])).toEqual([
      ['/byName', 'Map', 'object'],
      ['/byAny', 'Map', 'array'],
      ['/bytes', 'Uint8Array', '$binary'],
      ['/buf', 'Buffer', '$binary'],
      ['/ab', 'ArrayBuffer', '$binary'],
      ['/boxed/0', 'Number', 'number'],
      ['/boxed/1', 'String', 'string'],
      ['/boxed/2', 'Boolean', 'boolean'],
      ['/re', 'RegExp', 'string'],
      ['/err', 'TypeError', 'object'],
      ['/point', 'Point', 'object'],
    ]);
  });

  it('base64 of binary data agrees with Buffer for any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        const v = toJsonSafe(bytes).value as { $binary: string };
        expect(v.$binary).toBe(Buffer.from(bytes).toString('base64'));
      }),
      { numRuns: 1000 },
    );
  });

  it('uses toJSON, guarding one that throws, and records getters that throw', () => {
    const hostile = {
      good: { toJSON: (key: string) => ({ from: key }) },
      bad: {
        toJSON() {
          throw new Error('nope');
        },
      },
      get explode(): never {
        throw new Error('getter boom');
      },
      list: [{ toJSON: () => undefined }],
    };
    const { value, replaced } = toJsonSafe(hostile);
    expect(value).toEqual({ good: { from: 'good' }, list: [null] });
    expect(replaced).toEqual([
      { path: '/good', from: 'Object.toJSON', to: 'object' },
      { path: '/bad', from: 'Object.toJSON threw (nope)', to: 'omitted' },
      { path: '/explode', from: 'getter threw (getter boom)', to: 'omitted' },
      { path: '/list/0', from: 'Object.toJSON gave undefined', to: 'null' },
    ]);
    class Account {
      id = 'a1';
      get secret(): string {
        throw new Error('locked');
      }
    }
    const acct = new Account();
    Object.defineProperty(acct, 'hidden', {
      enumerable: true,
      get() {
        throw new Error('no');
      },
    });
    const r = toJsonSafe({ acct });
    expect(r.value).toEqual({ acct: { id: 'a1' } });
    expect(r.replaced).toEqual([
      { path: '/acct', from: 'Account', to: 'object' },
      { path: '/acct/hidden', from: 'getter threw (no)', to: 'omitted' },
    ]);
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    expect(toJsonSafe({ p: revoked.proxy }).value).toEqual({});
  });

  it('keeps hostile keys as own data properties and never pollutes prototypes', () => {
    const input = JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"d":1}') as object;
    const { value } = toJsonSafe({ ...{ x: new Date(0) }, nested: input, m: new Map([['__proto__', { polluted: true }]]) });
    const v = value as Record<string, Record<string, unknown>>;
    expect(Object.keys(v.nested!)).toEqual(['__proto__', 'constructor', 'd']);
    expect(Object.getOwnPropertyDescriptor(v.m, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(v.m)).toBe(Object.prototype);
    // A copy of an object holding __proto__ (forced by a sibling change) keeps it as data too.
    const copy = toJsonSafe(JSON.parse('{"__proto__":{"polluted":true},"n":null}') as object);
    expect(copy.value).toEqual(JSON.parse('{"__proto__":{"polluted":true},"n":null}'));
    const forced = toJsonSafe(Object.assign(JSON.parse('{"__proto__":{"polluted":true}}') as object, { u: undefined }));
    expect(Object.getOwnPropertyDescriptor(forced.value, '__proto__')?.value).toEqual({ polluted: true });
    expect(Object.getPrototypeOf(forced.value)).toBe(Object.prototype);
  });

  it('keeps lone surrogates in strings', () => {
    const { value, replaced } = toJsonSafe({ s: 'a\ud800' });
    expect(value).toEqual({ s: 'a\ud800' });
    expect(replaced).toEqual([]);
  });

  it('copies only the containers on the path to a change', () => {
    const untouched = { deep: [1, 2, 3] };
    const input = { a: untouched, b: [1, undefined] };
    const { value } = toJsonSafe(input);
    const v = value as { a: unknown; b: unknown };
    expect(v).not.toBe(input);
    expect(v.a).toBe(untouched);
    expect(v.b).toEqual([1, null]);
    expect(input.b).toEqual([1, undefined]);
  });

  it('rejects circular references with not-json-safe naming the path', () => {
    const a: Record<string, unknown> = { x: { y: [] } };
    ((a.x as { y: unknown[] }).y as unknown[]).push(a);
    const e = thrown(() => toJsonSafe(a));
    expect(e.code).toBe('not-json-safe');
    expect(e.issues[0]?.path).toBe('/x/y/0');
    const m = new Map<string, unknown>();
    m.set('self', m);
    expect(thrown(() => toJsonSafe({ m })).issues[0]?.path).toBe('/m/self');
    // Shared but acyclic references are fine.
    const shared = { s: 1 };
    expect(toJsonSafe([shared, shared]).value).toEqual([{ s: 1 }, { s: 1 }]);
  });

  it('rejects nesting beyond maxDepth with too-deep, even 100 000 levels deep', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    const e = thrown(() => toJsonSafe(deep));
    expect(e.code).toBe('too-deep');
    expect(e.issues[0]?.path.split('/').length).toBe(1001);
    expect(toJsonSafe([[1]], { maxDepth: 2 }).value).toEqual([[1]]);
    expect(thrown(() => toJsonSafe([[1]], { maxDepth: 1 })).code).toBe('too-deep');
    expect(thrown(() => toJsonSafe(1, { maxDepth: Number.NaN })).code).toBe('invalid-option');
  });

  it('produces a value that survives JSON.stringify and JSON.parse unchanged', () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withDate: true,
          withMap: true,
          withSet: true,
          withTypedArray: true,
          withBoxedValues: true,
          withNullPrototype: true,
          withSparseArray: true,
        }),
        (v) => {
          const { value } = toJsonSafe(v);
          const text = JSON.stringify(value);
          // Compared as text: JSON writes -0 as 0, which toEqual would tell apart.
          expect(JSON.stringify(JSON.parse(text))).toBe(text);
          expect(isJsonSafe(value)).toBe(true);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('treats top-level undefined as null', () => {
    expect(toJsonSafe(undefined)).toEqual({ value: null, replaced: [{ path: '', from: 'undefined', to: 'null' }] });
  });
});
