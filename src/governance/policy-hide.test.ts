// `hide: true` (#38 point 4): which callers a deny rule hides a tool from, decided on what is known
// before any call, and the load-time checks that keep `hide` where it can mean something.
import { describe, expect, it } from 'vitest';
import type { Principal } from 'tool-envelope/core';
import { compilePolicy } from './policy-load.js';
import type { HideFacts, PolicyRule } from './policy-types.js';

const bob: Principal = { kind: 'user', id: 'bob', tenant_id: 'acme' };
const facts = (tool: string, roles: string[] = []): HideFacts => ({
  tool,
  principalChain: [bob],
  identity: { principal: 'user:bob', tenant: 'acme', roles },
});
const policy = (rules: PolicyRule[]) => compilePolicy({ version: 1, rules });

describe('CompiledPolicy.hides', () => {
  it('hides a tool a hide rule denies outright, per caller', () => {
    const p = policy([
      { match: { tool: 'rm' }, when: "'admin' in identity.roles", effect: 'allow' },
      { match: { tool: 'rm' }, effect: 'deny', hide: true },
    ]);
    expect(p.hides(facts('rm'))).toBe(true);
    expect(p.hides(facts('rm', ['admin']))).toBe(false);
    expect(p.hides(facts('ls'))).toBe(false);
  });

  it('hides nothing a rule before it could decide otherwise for some call', () => {
    const hide: PolicyRule = { match: { tool: 'rm' }, effect: 'deny', hide: true };
    // A condition on the arguments, a match on the requested mode, a deny on a principal the call may still declare.
    expect(policy([{ match: { tool: 'rm' }, when: "args.path == '/tmp'", effect: 'allow' }, hide]).hides(facts('rm'))).toBe(false);
    expect(policy([{ match: { tool: 'rm', mode: 'read_only' }, effect: 'allow' }, hide]).hides(facts('rm'))).toBe(false);
    expect(policy([{ match: { tool: 'rm', principalId: 'agent-*' }, effect: 'deny' }, hide]).hides(facts('rm'))).toBe(false);
    // A rule that cannot apply to this tool or caller does not stand in the way.
    expect(policy([{ match: { tool: 'ls' }, when: 'args.x == 1', effect: 'allow' }, hide]).hides(facts('rm'))).toBe(true);
    expect(policy([{ match: { tool: 'rm', tenant: 'other' }, effect: 'allow' }, hide]).hides(facts('rm'))).toBe(true);
    // A deny without hide decides first: the tool stays listed (the author chose an envelope).
    expect(policy([{ match: { tool: 'rm' }, effect: 'deny' }, hide]).hides(facts('rm'))).toBe(false);
    // A hide rule on the caller's tenant, and one on an annotation of the tool.
    expect(policy([{ match: { tool: 'rm', tenant: 'acme' }, effect: 'deny', hide: true }]).hides(facts('rm'))).toBe(true);
    const byAnnotation = policy([{ when: 'has(tool.annotations.destructiveHint) && tool.annotations.destructiveHint', effect: 'deny', hide: true }]);
    expect(byAnnotation.hides({ ...facts('rm'), toolAnnotations: { destructiveHint: true } })).toBe(true);
    expect(byAnnotation.hides({ ...facts('rm'), toolAnnotations: { readOnlyHint: true } })).toBe(false);
  });

  it('agrees with evaluate: a hidden tool is denied by the hide rule for every call of that caller', () => {
    const p = policy([
      { match: { tool: 'ls' }, effect: 'allow' },
      { name: 'hidden', match: { tool: 'rm' }, effect: 'deny', hide: true },
    ]);
    expect(p.hides(facts('rm'))).toBe(true);
    for (const mode of ['read_only', 'local_write', 'destructive'] as const) {
      const v = p.evaluate({
        tool: 'rm',
        ceiling: 'destructive',
        requested: mode,
        args: { any: 1 },
        principalChain: [bob, { kind: 'agent', id: 'x' }],
        verifiedPrincipals: 1,
        evidenceRefs: [],
        idempotencyKey: 'k',
        riskTags: [],
        now: 0,
      });
      expect(v).toMatchObject({ effect: 'deny', rule: 'hidden' });
    }
  });
});

describe('hide at load', () => {
  it('is refused on a rule that is not a deny, or that depends on the call', () => {
    expect(() => policy([{ effect: 'allow', hide: true }])).toThrow(/\/rules\/0\/hide is only for deny rules/);
    expect(() => policy([{ effect: 'require-approval', hide: true }])).toThrow(/\/rules\/0\/hide is only for deny rules/);
    expect(() => policy([{ match: { mode: 'destructive' }, effect: 'deny', hide: true }])).toThrow(/\/rules\/0\/hide .*requested mode/);
    expect(() => policy([{ when: "args.path == '/'", effect: 'deny', hide: true }])).toThrow(/\/rules\/0\/hide .*names args/);
    expect(() => policy([{ effect: 'deny', hide: 'yes' as unknown as boolean }])).toThrow(/\/rules\/0\/hide must be true or false/);
  });
});

describe('digest', () => {
  it('is the SHA-256 of the canonical document: the same for the same rules in any key order, another for other rules', () => {
    const a = compilePolicy({ version: 1, rules: [{ match: { tool: 'a' }, effect: 'deny' }] });
    const b = compilePolicy({ rules: [{ effect: 'deny', match: { tool: 'a' } }], version: 1 });
    const c = compilePolicy({ version: 1, rules: [{ match: { tool: 'b' }, effect: 'deny' }] });
    expect(a.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(b.digest).toBe(a.digest);
    expect(c.digest).not.toBe(a.digest);
  });
});
