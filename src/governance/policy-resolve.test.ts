import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { APPROVAL_MODES, type ApprovalMode, compareApprovalModes, isToolEnvelopeError, type Principal } from '../core/index.js';
import { compilePolicy, createDefaultPolicy, defaultPolicy, loadPolicyFile, mayExecute, parsePolicy, type PolicyFunction, resolveApproval } from './policy.js';

const user: Principal = { kind: 'user', id: 'u1', tenant_id: 'acme' };
const agent: Principal = { kind: 'agent', id: 'a1' };
const base = { tool: 'fs.write', principalChain: [user, agent] };

describe('resolveApproval: ceiling and fail-closed rules', () => {
  it('applies the default treatment per mode', async () => {
    const at = (mode: ApprovalMode, extra = {}) => resolveApproval({ ...base, ceiling: mode, requested: mode, ...extra });
    expect(await at('read_only')).toMatchObject({ effect: 'allow', effectiveMode: 'read_only', reason: 'read_only: allow with audit' });
    expect(await at('local_write')).toMatchObject({ effect: 'allow', effectiveMode: 'local_write' });
    expect(await at('network')).toMatchObject({ effect: 'allow', effectiveMode: 'network' });
    expect(await at('delegated')).toMatchObject({ effect: 'deny', effectiveMode: null, reason: expect.stringContaining('evidence') });
    expect(await at('delegated', { evidenceRefs: ['ev:1'] })).toMatchObject({ effect: 'allow', effectiveMode: 'delegated' });
    expect(await at('delegated', { evidenceRefs: ['ev:1'], principalChain: [agent, user] })).toMatchObject({
      effect: 'deny',
      reason: expect.stringContaining('user delegation'),
    });
    expect(await at('destructive')).toMatchObject({ effect: 'require-approval', effectiveMode: 'destructive' });
  });

  it('records id, modes, the principal chain and time with the decision', async () => {
    const d = await resolveApproval({ ...base, ceiling: 'network', requested: 'read_only', now: 42, newId: () => 'pd_x' });
    expect(d).toEqual({
      id: 'pd_x',
      effect: 'allow',
      effectiveMode: 'read_only',
      reason: 'read_only: allow with audit',
      rule: 'builtin:read_only',
      ceiling: 'network',
      requested: 'read_only',
      principalChain: [user, agent],
      verifiedPrincipals: 2,
      decidedAt: 42,
    });
    expect((await resolveApproval({ ...base, ceiling: 'read_only', requested: 'read_only' })).id).toMatch(/^pd_[0-9a-f-]{36}$/);
  });

  it('blocks a request above the ceiling, unknown modes, throwing and invalid policies', async () => {
    expect(await resolveApproval({ ...base, ceiling: 'local_write', requested: 'network' })).toMatchObject({
      effect: 'deny',
      effectiveMode: null,
      reason: "requested mode network exceeds the tool's ceiling local_write",
    });
    expect((await resolveApproval({ ...base, ceiling: 'admin', requested: 'read_only' })).effect).toBe('deny');
    expect((await resolveApproval({ ...base, ceiling: 'read_only', requested: 'READ_ONLY' })).effect).toBe('deny');
    const answers: unknown[] = [
      undefined,
      null,
      'allow',
      42,
      [],
      { effect: 'yes' },
      { effect: 'allow', mode: 'root' },
      { effect: 'allow', reason: 5 },
      { effect: 'allow', mode: 'destructive' },
      new Proxy(
        {},
        {
          get() {
            throw new Error('boom');
          },
        },
      ),
    ];
    for (const [i, a] of answers.entries()) {
      const d = await resolveApproval({ ...base, ceiling: 'network', requested: 'local_write', policy: (() => a) as PolicyFunction });
      expect(d.effect, `answer #${i}`).toBe('deny');
      expect(d.effectiveMode).toBeNull();
    }
    const throwers: PolicyFunction[] = [
      () => {
        throw new Error('db down');
      },
      () => {
        throw 'a string';
      },
      async () => {
        throw Object.create(null);
      },
      () => Promise.reject(new Error('late')),
    ];
    for (const p of throwers) {
      const d = await resolveApproval({ ...base, ceiling: 'network', requested: 'network', policy: p });
      expect(d).toMatchObject({ effect: 'deny', effectiveMode: null, reason: expect.stringMatching(/^policy threw: /) });
    }
  });

  it('lets a policy lower the mode, never raise it', async () => {
    const lower = await resolveApproval({ ...base, ceiling: 'network', requested: 'network', policy: () => ({ effect: 'allow', mode: 'read_only' }) });
    expect(lower).toMatchObject({ effect: 'allow', effectiveMode: 'read_only' });
    const raise = await resolveApproval({ ...base, ceiling: 'network', requested: 'local_write', policy: () => ({ effect: 'allow', mode: 'network' }) });
    expect(raise).toMatchObject({ effect: 'deny', reason: expect.stringContaining('never raise') });
  });

  it('gates execution on the effective mode', () => {
    expect(mayExecute({ effect: 'allow', effectiveMode: 'network' }, 'local_write')).toBe(true);
    expect(mayExecute({ effect: 'allow', effectiveMode: 'read_only' }, 'local_write')).toBe(false);
    expect(mayExecute({ effect: 'require-approval', effectiveMode: 'destructive' }, 'read_only')).toBe(false);
    expect(mayExecute({ effect: 'deny', effectiveMode: null }, 'read_only')).toBe(false);
  });
});

describe('resolveApproval: randomised (fast-check)', () => {
  const mode = fc.constantFrom<ApprovalMode>(...APPROVAL_MODES);
  const anyMode = fc.oneof(mode, fc.string(), fc.constant(undefined), fc.integer());
  const principal = fc.record({ kind: fc.constantFrom('user', 'service', 'agent', 'automation'), id: fc.string({ minLength: 1 }) }) as fc.Arbitrary<Principal>;
  const verdict = fc.oneof(
    fc.record({ effect: fc.constantFrom('allow', 'deny', 'require-approval'), mode: fc.option(anyMode, { nil: undefined }) }),
    fc.anything(),
  );
  const behaviour = fc.oneof(
    verdict.map((v) => (() => v) as PolicyFunction),
    verdict.map((v) => (async () => v) as PolicyFunction),
    fc.constant((() => {
      throw new Error('x');
    }) as PolicyFunction),
    fc.constant(undefined),
  );

  it('never yields an effective mode above the ceiling or the request, and never lets a tool run above it (1000 cases)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(mode, anyMode),
        fc.oneof(mode, anyMode),
        behaviour,
        fc.array(principal, { maxLength: 3 }),
        fc.array(fc.string(), { maxLength: 2 }),
        mode,
        async (ceiling, requested, policy, principalChain, evidenceRefs, required) => {
          const d = await resolveApproval({ tool: 't', ceiling, requested, principalChain, evidenceRefs, ...(policy && { policy }) });
          const validCeiling = (APPROVAL_MODES as readonly unknown[]).includes(ceiling);
          const validRequested = (APPROVAL_MODES as readonly unknown[]).includes(requested);
          if (!validCeiling || !validRequested) expect(d.effect).toBe('deny');
          else if (compareApprovalModes(requested as ApprovalMode, ceiling as ApprovalMode) > 0) expect(d.effect).toBe('deny');
          if (d.effectiveMode !== null) {
            expect(compareApprovalModes(d.effectiveMode, ceiling as ApprovalMode)).toBeLessThanOrEqual(0);
            expect(compareApprovalModes(d.effectiveMode, requested as ApprovalMode)).toBeLessThanOrEqual(0);
          }
          if (d.effect === 'deny') expect(d.effectiveMode).toBeNull();
          if (mayExecute(d, required)) {
            expect(d.effect).toBe('allow');
            expect(compareApprovalModes(required, d.effectiveMode as ApprovalMode)).toBeLessThanOrEqual(0);
            expect(compareApprovalModes(required, ceiling as ApprovalMode)).toBeLessThanOrEqual(0);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe('declarative rules', () => {
  it('matches in order: tool globs, mode, principal, tenant, risk tag', async () => {
    const policy = compilePolicy({
      version: 1,
      default: 'deny',
      rules: [
        { name: 'no-prod', match: { tool: 'db.*', tenant: 'prod' }, effect: 'deny', reason: 'never in prod' },
        { name: 'db-dry', match: { tool: 'db.*', mode: ['local_write', 'network'] }, effect: 'allow', mode: 'read_only' },
        { name: 'ops', match: { principalId: 'ops-*', riskTag: 'pii' }, effect: 'require-approval' },
        { name: 'agents', match: { principalKind: 'agent' }, effect: 'allow' },
      ],
    });
    const r = (tool: string, requested: ApprovalMode, chain: Principal[], riskTags: string[] = []) =>
      resolveApproval({ tool, ceiling: 'destructive', requested, principalChain: chain, riskTags, policy });
    expect(await r('db.query', 'local_write', [{ kind: 'user', id: 'u', tenant_id: 'prod' }])).toMatchObject({
      effect: 'deny',
      reason: 'never in prod',
      rule: 'no-prod',
    });
    expect(await r('db.query', 'network', [user])).toMatchObject({ effect: 'allow', effectiveMode: 'read_only', rule: 'db-dry' });
    expect(await r('x', 'network', [user, { kind: 'agent', id: 'ops-7' }], ['pii'])).toMatchObject({ effect: 'require-approval', rule: 'ops' });
    expect(await r('x', 'network', [user, { kind: 'agent', id: 'ops-7' }])).toMatchObject({ effect: 'deny', rule: 'default' });
    expect(await r('x', 'network', [agent])).toMatchObject({ effect: 'allow', rule: 'agents' });
  });

  it('enforces egress allow-lists, rate budgets, keys, delegation and evidence', async () => {
    const policy = compilePolicy({
      version: 1,
      rules: [
        {
          name: 'http',
          match: { tool: 'http.*' },
          effect: 'allow',
          egress: { allow: ['api.example.com', '*.internal'], argPaths: ['url', 'mirrors'] },
          rateBudget: { calls: 2, perMs: 1000 },
        },
        { name: 'write', match: { tool: 'fs.*' }, effect: 'allow', requireIdempotencyKey: true },
        { name: 'mail', match: { tool: 'mail.*' }, effect: 'allow', requireUserDelegation: true, requireEvidence: true },
      ],
    });
    const http = (args: Record<string, unknown>, now: number) =>
      resolveApproval({ tool: 'http.get', ceiling: 'network', requested: 'network', principalChain: [user], args: args as never, policy, now });
    expect(await http({ url: 'https://api.example.com/x' }, 0)).toMatchObject({ effect: 'allow' });
    expect(await http({ url: 'https://evil.com/x' }, 0)).toMatchObject({ effect: 'deny', reason: 'http: egress to evil.com is not in the allow-list' });
    expect(await http({ url: 'https://a.internal/', mirrors: ['https://b.internal', 'https://evil.net'] }, 0)).toMatchObject({ effect: 'deny' });
    expect(await http({}, 0)).toMatchObject({ effect: 'deny', reason: expect.stringContaining('egress target unknown') });
    expect(await http({ url: 'https://db.internal' }, 10)).toMatchObject({ effect: 'allow' });
    // The decision names the budget; the pipeline counts it in the store (governance/budgets.test.ts).
    expect(await http({ url: 'https://db.internal' }, 20)).toMatchObject({ effect: 'allow', budgets: [{ calls: 2, perMs: 1000 }] });
    expect((await http({ url: 'https://evil.com/x' }, 0)).budgets).toBeUndefined();

    const fs = (key: string | null) =>
      resolveApproval({ tool: 'fs.write', ceiling: 'local_write', requested: 'local_write', principalChain: [user], idempotencyKey: key, policy });
    expect(await fs(null)).toMatchObject({ effect: 'deny', reason: 'write: an idempotency key is required' });
    expect(await fs('k')).toMatchObject({ effect: 'allow' });

    const mail = (chain: Principal[], evidenceRefs: string[]) =>
      resolveApproval({ tool: 'mail.send', ceiling: 'delegated', requested: 'delegated', principalChain: chain, evidenceRefs, policy });
    expect(await mail([user, agent], ['doc:1'])).toMatchObject({ effect: 'allow' });
    expect(await mail([agent], ['doc:1'])).toMatchObject({ effect: 'deny' });
    expect(await mail([user], [])).toMatchObject({ effect: 'deny' });
  });

  it('applies builtin egress and budget options to network calls', async () => {
    const policy = createDefaultPolicy({ egress: { allow: ['*.example.com'], argPaths: ['url'] } });
    const at = (url: string) => resolveApproval({ tool: 'h', ceiling: 'network', requested: 'network', principalChain: [user], args: { url }, policy });
    expect((await at('https://x.example.com')).effect).toBe('allow');
    expect((await at('https://x.example.org')).effect).toBe('deny');
    expect(defaultPolicy.document).toEqual({ version: 1 });
  });

  it('rejects bad documents with located issues', () => {
    const bad = [
      [{ version: 2 }, '/version'],
      [{ version: 1, rules: [{ effect: 'permit' }] }, '/rules/0/effect'],
      [{ version: 1, rules: [{ effect: 'allow', mode: 'root' }] }, '/rules/0/mode'],
      [{ version: 1, rules: [{ effect: 'allow', match: { mode: ['network', 'admin'] } }] }, '/rules/0/match/mode/1'],
      [{ version: 1, rules: [{ effect: 'allow', extra: true }] }, '/rules/0/extra'],
      [{ version: 1, rules: [{ effect: 'allow', rateBudget: { calls: 0, perMs: 10 } }] }, '/rules/0/rateBudget/calls'],
      [{ version: 1, default: 'maybe' }, '/default'],
      [JSON.parse('{"version":1,"__proto__":{"x":1}}'), '/__proto__'],
      [[], ''],
    ] as const;
    for (const [doc, where] of bad) {
      try {
        compilePolicy(doc);
        expect.unreachable(`accepted ${JSON.stringify(doc)}`);
      } catch (e) {
        expect(isToolEnvelopeError(e, 'invalid-option')).toBe(true);
        expect((e as { issues: { path: string }[] }).issues.map((i) => i.path)).toContain(where);
      }
    }
  });

  it('loads JSON and YAML files', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-policy-'));
    try {
      const yamlFile = path.join(dir, 'policy.yaml');
      writeFileSync(yamlFile, 'version: 1\nrules:\n  - name: reads\n    match: { tool: "fs.*", mode: read_only }\n    effect: allow\ndefault: deny\n');
      const p = await loadPolicyFile(yamlFile);
      expect((await resolveApproval({ tool: 'fs.read', ceiling: 'read_only', requested: 'read_only', principalChain: [], policy: p })).rule).toBe('reads');
      expect((await resolveApproval({ tool: 'x', ceiling: 'read_only', requested: 'read_only', principalChain: [], policy: p })).effect).toBe('deny');
      const jsonFile = path.join(dir, 'policy.json');
      writeFileSync(jsonFile, JSON.stringify({ version: 1, default: 'require-approval' }));
      expect(
        (await resolveApproval({ tool: 'x', ceiling: 'read_only', requested: 'read_only', principalChain: [], policy: await loadPolicyFile(jsonFile) })).effect,
      ).toBe('require-approval');
      writeFileSync(jsonFile, '{"version": 1,');
      await expect(loadPolicyFile(jsonFile)).rejects.toMatchObject({ code: 'invalid-json' });
      await expect(loadPolicyFile(path.join(dir, 'missing.yaml'))).rejects.toMatchObject({ code: 'invalid-option' });
      // Unknown YAML tags are refused, not read as strings; aliases are bounded (no billion laughs).
      expect(() => parsePolicy('version: 1\nrules: [ { effect: allow, match: { tool: !!js/function "x" } } ]', 'yaml')).toThrow(
        expect.objectContaining({ code: 'invalid-option' }),
      );
      const bomb = [
        'version: 1',
        'a: &a ["x","x","x","x","x","x","x","x","x","x"]',
        ...Array.from({ length: 8 }, (_, i) => {
          const prev = i === 0 ? 'a' : `b${i - 1}`;
          return `b${i}: &b${i} [*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev}]`;
        }),
      ].join('\n');
      expect(() => parsePolicy(bomb, 'yaml')).toThrow(expect.objectContaining({ code: 'invalid-json' }));
      expect(() => parsePolicy('version: [1', 'yaml')).toThrow(expect.objectContaining({ code: 'invalid-json' }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
