/**
 * The fast path of conditions (policy-cel-fast.ts) against its reference, @bufbuild/cel alone
 * (`compileWhen(source, { fastPath: false })`): generated expressions of the subset and around it,
 * on generated calls, give the same value or the same error both ways.
 */
import fc from 'fast-check';
import type { JsonObject } from 'tool-envelope/core';
import { describe, expect, it } from 'vitest';
import { type CompiledWhen, compileWhen, WhenCall, WhenError, type WhenInput } from './policy-cel.js';
import { BAIL, fastCondition } from './policy-cel-fast.js';

const PATHS = [
  'args.a',
  'args.b',
  'args.a.b',
  'args.path',
  'args.url',
  'args.amount',
  'identity.roles',
  'identity.claims.email',
  'identity.tenant',
  'mode',
  'tool.name',
  'tool.annotations.readOnlyHint',
  'session.id',
  'riskTags',
];
const LITERALS = [
  "'x'",
  "''",
  "'/srv/shared'",
  "'/srv/shared/**'",
  "'example.com'",
  "'research'",
  '1',
  '0',
  '1.5',
  '1000',
  '-2',
  'true',
  'false',
  'null',
  '[1, 2]',
  "['x', 'research']",
  "['x', 1]",
];

const expression = fc.letrec<{ bool: string; value: string }>((tie) => ({
  value: fc.oneof(fc.constantFrom(...PATHS), fc.constantFrom(...LITERALS), fc.constantFrom('toNumber(args.amount)', 'host(args.url)', 'toNumber(args.a)')),
  bool: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom('true', 'false', 'args.a', "'research' in identity.roles"),
    fc.constantFrom(...PATHS).map((p) => (p.includes('.') ? `has(${p})` : 'true')),
    fc.tuple(tie('value'), fc.constantFrom('==', '!=', '<', '<=', '>', '>=', 'in'), tie('value')).map(([a, op, b]) => `${a} ${op} ${b}`),
    tie('bool').map((b) => `!(${b})`),
    fc.tuple(tie('bool'), fc.constantFrom('&&', '||'), tie('bool')).map(([a, op, b]) => `(${a}) ${op} (${b})`),
    fc.tuple(tie('value'), fc.constantFrom('startsWith', 'endsWith', 'contains'), tie('value')).map(([a, m, b]) => `${a}.${m}(${b})`),
    fc.tuple(fc.constantFrom('within', 'glob'), tie('value'), tie('value')).map(([f, a, b]) => `${f}(${a}, ${b})`),
    // Outside the subset: the library alone.
    fc.constantFrom('args.exists(k, k == "a")', 'size(args) > 1', "now > timestamp('2020-01-01T00:00:00Z')", 'args.a + 1 > 2', 'chain[0].verified'),
  ),
}));

const leaf = fc.constantFrom<unknown>(
  'x',
  '',
  'research',
  '/srv/shared/a.txt',
  '/srv/shared/../etc/passwd',
  '/srv/shared/%2e%2e/x',
  'https://API.example.com/x',
  'https://example.com@evil.test/',
  'not a url',
  '1500',
  ' 12 ',
  'lots',
  'example.com',
  '\ud800',
  0,
  1,
  1.5,
  1000,
  1000.01,
  -2,
  true,
  false,
  null,
);
const value = fc.oneof(leaf, fc.array(leaf, { maxLength: 3 }), fc.dictionary(fc.constantFrom('a', 'b', 'email'), leaf, { maxKeys: 3 }));
// Through JSON, as arguments arrive.
const object = (keys: string[]) =>
  fc.dictionary(fc.constantFrom(...keys), value, { maxKeys: keys.length }).map((o) => JSON.parse(JSON.stringify(o)) as JsonObject);
const input = fc.record({
  args: object(['a', 'b', 'path', 'url', 'amount']),
  claims: object(['email', 'a']),
  roles: fc.array(fc.constantFrom('research', 'dev', 'x'), { maxLength: 3 }),
  mode: fc.constantFrom('read_only', 'network'),
  annotations: object(['readOnlyHint']),
});

function whenInput(c: { args: JsonObject; claims: JsonObject; roles: string[]; mode: string; annotations: JsonObject }): WhenInput {
  return {
    args: c.args,
    tool: { name: 'fetch', annotations: c.annotations },
    mode: c.mode,
    chain: [{ kind: 'user', id: 'u', tenant: 'acme', verified: true }],
    identity: { principal: 'user:u', tenant: 'acme', roles: c.roles, claims: c.claims },
    session: { id: 's1' },
    riskTags: ['pii'],
    now: 1_700_000_000_000,
  };
}

describe('the fast path of conditions', () => {
  it('answers as @bufbuild/cel alone on generated expressions and calls', () => {
    const compiled = new Map<string, { fast: CompiledWhen; reference: CompiledWhen } | null>();
    let answeredFast = 0;
    fc.assert(
      fc.property(expression.bool, fc.array(input, { minLength: 1, maxLength: 8 }), (source, calls) => {
        let pair = compiled.get(source);
        if (pair === undefined) {
          try {
            pair = { fast: compileWhen(source), reference: compileWhen(source, { fastPath: false }) };
          } catch (e) {
            // Refused at load (a type the checker knows is wrong): both ways alike, nothing to compare.
            if (!(e instanceof WhenError)) throw e;
            pair = null;
          }
          compiled.set(source, pair);
        }
        if (pair === null) return;
        for (const c of calls) {
          const i = whenInput(c);
          const fast = pair.fast.evaluate(new WhenCall(i));
          expect([source, c, fast]).toEqual([source, c, pair.reference.evaluate(new WhenCall(i))]);
          if ('value' in fast) answeredFast++;
        }
      }),
      { numRuns: 4000 },
    );
    // The comparison means something only if many answers came from both sides.
    expect(answeredFast).toBeGreaterThan(4000);
    expect([...compiled.values()].filter((p) => p !== null).length).toBeGreaterThan(500);
  });

  it('compiles the conditions operators write most, and leaves the rest to the library', async () => {
    const { parse } = await import('@bufbuild/cel');
    for (const s of [
      "!within(args.path, '/srv/shared')",
      "host(args.url) == 'example.com' || host(args.url).endsWith('.example.com')",
      "'research' in identity.roles",
      'has(args.amount) && toNumber(args.amount) > 1000',
      "tool.annotations.readOnlyHint == true && mode != 'destructive'",
    ])
      expect(fastCondition(parse(s).expr), s).toBeTypeOf('function');
    for (const s of ['args.exists(k, k == "a")', "now > timestamp('2020-01-01T00:00:00Z')", 'args.a + 1 > 2', 'chain[0].verified', 'args.a == null'])
      expect(fastCondition(parse(s).expr), s).toBeUndefined();
    const roles = fastCondition(parse("'research' in identity.roles").expr)!;
    expect(roles({ identity: { roles: ['dev', 'research'] } })).toBe(true);
    // A list it cannot compare like the library would: the library decides.
    expect(roles({ identity: { roles: [1, 'research'] } })).toBe(BAIL);
  });
});
