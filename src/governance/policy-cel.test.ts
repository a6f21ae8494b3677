/**
 * A condition reads the call's JSON objects in place (policy-cel.ts's ObjectMap, a speed trick:
 * the library copies a plain object into a Map at every access). Its reference is the library's
 * own conversion of the same plain objects: on generated arguments and identities, every
 * expression here must give the same value, or an error with the same message, both ways.
 */
import { celEnv, isCelError, parse, plan } from '@bufbuild/cel';
import fc from 'fast-check';
import type { JsonObject } from 'tool-envelope/core';
import { describe, expect, it } from 'vitest';
import { compileWhen, WhenCall, type WhenInput } from './policy-cel.js';

const EXPRESSIONS = [
  'has(args.a)',
  'has(args.a.b) && args.a.b == "x"',
  'args.a == 1',
  'args.a == args.b',
  'args.size() > 2',
  'size(args) == 0',
  '"a" in args',
  'args.a in [1, "x", true, null]',
  'args.exists(k, k == "b")',
  'args.all(k, k.size() < 3)',
  'args.map(k, k).size() == args.size()',
  'args.filter(k, k.startsWith("a")).size() >= 1',
  'args.a.size() > 0',
  'args.a.b.c == true',
  'args.a[0] == 1',
  'args.a["b"] == 1',
  'args[1] == 1',
  'args == {"a": 1}',
  'args.a == {"b": "x"}',
  'args.a == [1, 2]',
  'args.a.exists(x, x == 1)',
  'string(args.a) == "1"',
  'args.a > 1',
  '"x" in identity.roles',
  'identity.claims.email.endsWith("@example.com")',
  'has(identity.claims.groups) && "admins" in identity.claims.groups',
  'identity.claims.exists(k, k == "email")',
  'identity.claims == {}',
];

const key = fc.constantFrom('a', 'b', 'c', 'ab', 'email', 'groups');
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, false, 0, 1, 2, -1, 1.5, 'x', '', '1', 'admins', 'a@example.com'),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  ),
})).value;
// Through JSON, as arguments arrive: fc.dictionary makes null-prototype objects, which the library's own
// conversion cannot read ('Cannot read properties of undefined'), and ObjectMap can.
const object = fc.dictionary(key, json, { maxKeys: 5 }).map((o) => JSON.parse(JSON.stringify(o)) as JsonObject);

describe('conditions read JSON objects in place (ObjectMap) as the library reads them copied', () => {
  it('gives the same value or the same error on 1 000 generated calls per expression', () => {
    const env = celEnv({});
    const compiled = EXPRESSIONS.map((e) => ({ e, ours: compileWhen(e), reference: plan(env, parse(e)) }));
    fc.assert(
      fc.property(object, object, fc.array(fc.constantFrom('x', 'y'), { maxLength: 3 }), (args, claims, roles) => {
        const input: WhenInput = {
          args,
          tool: { name: 't', annotations: {} },
          mode: 'network',
          chain: [],
          identity: { principal: 'user:u', tenant: '', roles, claims },
          session: { id: '' },
          riskTags: [],
          now: 0,
        };
        const call = new WhenCall(input);
        for (const { e, ours, reference } of compiled) {
          const r = reference({ args, identity: input.identity } as never);
          const expected = isCelError(r) ? { error: r.message } : typeof r === 'boolean' ? { value: r } : { error: 'did not evaluate to true or false' };
          expect([e, ours.evaluate(call)]).toEqual([e, expected]);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('each variable is wrapped once per call, shared by the conditions that read it', () => {
    const call = new WhenCall({
      args: { a: { b: 1 } },
      tool: { name: 't', annotations: {} },
      mode: 'read_only',
      chain: [],
      identity: { principal: '', tenant: '', roles: [], claims: {} },
      session: { id: '' },
      riskTags: [],
      now: 0,
    });
    const first = call.activation(['args']);
    const again = call.activation(['args', 'mode']);
    expect(again).toBe(first);
    expect(again.args).toBe(first.args);
    expect(compileWhen('args.a.b == 1').evaluate(call)).toEqual({ value: true });
  });
});
