// Policy documents as hostile input: checked against their own JSON Schema (the validator generated
// at build time), bounded, with located typed errors; patterns compiled once per policy.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ToolEnvelopeError } from '../core/errors.js';
import { APPROVAL_MODES, PRINCIPAL_KINDS } from '../core/taxonomy.js';
import {
  compilePolicy,
  loadPolicyFile,
  POLICY_LIMITS,
  type PolicyContext,
  parsePolicy,
  policyDocumentSchema,
  policyRegExpsCompiled,
  resolveApproval,
  resolveCompiledApproval,
  runPolicyTests,
} from './policy.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.join(here, '..', '..');

function refused(doc: unknown): ToolEnvelopeError {
  try {
    compilePolicy(doc);
  } catch (e) {
    expect(e).toBeInstanceOf(ToolEnvelopeError);
    return e as ToolEnvelopeError;
  }
  throw new Error(`accepted ${JSON.stringify(doc)?.slice(0, 200)}`);
}

const ctx = (over: Partial<PolicyContext> = {}): PolicyContext => ({
  tool: 'fs.read',
  ceiling: 'destructive',
  requested: 'read_only',
  args: {},
  principalChain: [{ kind: 'user', id: 'alice', tenant_id: 'acme' }],
  evidenceRefs: [],
  idempotencyKey: null,
  riskTags: [],
  now: 0,
  ...over,
});

describe('the policy document schema', () => {
  it('is the schema the generated validator was built from, and lists the modes and principal kinds of the core', () => {
    const file = JSON.parse(readFileSync(path.join(here, 'policy.schema.json'), 'utf8'));
    expect(policyDocumentSchema).toEqual(file);
    const defs = file.definitions;
    expect(defs.mode.enum).toEqual([...APPROVAL_MODES]);
    expect(defs.principalKind.enum).toEqual([...PRINCIPAL_KINDS]);
    // An editor's or another tool's validator agrees with the generated one on documents both see.
    const ajv = new Ajv({ allErrors: true, allowUnionTypes: true });
    const other = ajv.compile(file);
    for (const doc of [
      { version: 1 },
      { version: 1, redact: { t: ['/args/x'] } },
      { version: 1, redact: { t: ['/nope'] } },
      { version: 2 },
      { version: 1, rules: [{ effect: 'allow', match: { mode: 'admin' } }] },
    ]) {
      let ours = true;
      try {
        compilePolicy(doc);
      } catch {
        ours = false;
      }
      expect(ours, JSON.stringify(doc)).toBe(other(doc));
    }
  });

  it('keeps loading every policy document the docs show', () => {
    const docs = readFileSync(path.join(repo, 'docs', 'governance.md'), 'utf8');
    const blocks = [...docs.matchAll(/```yaml\n# policy\.yaml\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    expect(blocks.length).toBeGreaterThan(0);
    for (const text of blocks) {
      const policy = parsePolicy(text, 'yaml');
      expect(policy.kind).toBe('rules');
      // A block with test cases of its own decides as they say (what 'tool-envelope policy check' runs).
      expect(runPolicyTests(policy)).toEqual([]);
    }
    expect(blocks.some((b) => b.includes('\ntests:'))).toBe(true);
  });

  it('accepts a redact map of tool names to pointers under /args/ or /result/, and the $schema key', () => {
    const p = compilePolicy({
      $schema: './policy.schema.json',
      version: 1,
      redact: { 'crm.update': ['/args/customer/ssn', '/result/token'], 'a/b': ['/args/x'] },
    });
    expect(p.document.redact).toEqual({ 'crm.update': ['/args/customer/ssn', '/result/token'], 'a/b': ['/args/x'] });
    expect(Object.isFrozen(p.document.redact)).toBe(true);
  });
});

describe('bad documents: typed errors with a JSON path and what was expected', () => {
  it('from text, each problem is located by line and column (of the key, for a key not allowed), with the bad value', () => {
    const yaml = 'version: 1\nrules:\n  - name: a\n    effect: alow\n  - match: { tol: x, mode: wirte }\n    effect: deny\n';
    const json = '{"version": 1,\n "rules": [{"effect": "alow"}]}';
    for (const [text, format, expected] of [
      [
        yaml,
        'yaml',
        [
          ['/rules/0/effect', { line: 4, column: 13 }, 'must be one of allow, deny, require-approval, got "alow"'],
          ['/rules/1/match/tol', { line: 5, column: 14 }, /unknown property "tol"/],
          ['/rules/1/match/mode', { line: 5, column: 28 }, /got "wirte"$/],
        ],
      ],
      [json, 'json', [['/rules/0/effect', { line: 2, column: 23 }, 'must be one of allow, deny, require-approval, got "alow"']]],
    ] as const) {
      let e: ToolEnvelopeError | undefined;
      try {
        parsePolicy(text, format, 'p');
      } catch (err) {
        e = err as ToolEnvelopeError;
      }
      expect(e?.code).toBe('invalid-option');
      for (const [where, at, message] of expected) {
        const issue = e!.issues.find((i) => i.path === where);
        expect(issue?.params?.at, where).toEqual(at);
        expect(issue!.message).toMatch(message);
        expect(e!.message).toContain(`${where} ${issue!.message} (line ${at.line}, column ${at.column})`);
      }
    }
  });

  it('wrong types', () => {
    const cases: [unknown, string, RegExp][] = [
      [{ version: '1' }, '/version', /must be 1/],
      [{ version: 1, rules: {} }, '/rules', /must be a list/],
      [{ version: 1, rules: ['allow'] }, '/rules/0', /must be an object/],
      [{ version: 1, rules: [{ effect: 'allow', name: 7 }] }, '/rules/0/name', /must be a string/],
      [{ version: 1, rules: [{ effect: 'allow', selfApproval: 'yes' }] }, '/rules/0/selfApproval', /must be true or false/],
      [{ version: 1, rules: [{ effect: 'allow', match: { tool: 5 } }] }, '/rules/0/match/tool', /must be a string or a list/],
      [{ version: 1, rules: [{ effect: 'allow', match: { tool: [] } }] }, '/rules/0/match/tool', /must not be an empty list/],
      [{ version: 1, rules: [{ effect: 'allow', match: { principalKind: 'robot' } }] }, '/rules/0/match/principalKind', /must be one of user, service/],
      [{ version: 1, rules: [{ effect: 'allow', rateBudget: { calls: 1.5, perMs: 10 } }] }, '/rules/0/rateBudget/calls', /positive integer/],
      [{ version: 1, rules: [{ effect: 'allow', rateBudget: { calls: 1 } }] }, '/rules/0/rateBudget/perMs', /is required/],
      [{ version: 1, builtin: { egress: { allow: 'x' } } }, '/builtin/egress/allow', /must be a list/],
      [{ version: 1, redact: { t: '/args/x' } }, '/redact/t', /must be a list/],
      [{ version: 1, redact: { t: ['/outcome/x'] } }, '/redact/t/0', /JSON pointer under \/args\/ or \/result\//],
      [{ version: 1, redact: { 'a/b': [5] } }, '/redact/a~1b/0', /must be a string/],
      [{ rules: [] }, '/version', /is required/],
      ['version: 1', '', /must be an object/],
      [null, '', /must be an object/],
    ];
    for (const [doc, where, message] of cases) {
      const e = refused(doc);
      expect(e.code, JSON.stringify(doc)).toBe('invalid-option');
      const issue = e.issues.find((i) => i.path === where);
      expect(issue, `${JSON.stringify(doc)}: ${JSON.stringify(e.issues)}`).toBeDefined();
      expect(issue!.message).toMatch(message);
      expect(issue!.params?.expected, 'says what was expected').toBeDefined();
      expect(e.message).toContain(where || '/');
    }
  });

  it('unknown keys, at any level, naming the keys that are allowed', () => {
    const e = refused({ version: 1, rulez: [], rules: [{ effect: 'allow', match: { tools: 'x' }, egress: { allow: ['a'], hosts: [] } }] });
    expect(e.issues.map((i) => i.path).sort()).toEqual(['/rules/0/egress/hosts', '/rules/0/match/tools', '/rulez']);
    expect(e.issues.find((i) => i.path === '/rulez')!.message).toMatch(/unknown property "rulez" \(expected one of .*version.*rules/);
    expect(e.issues.find((i) => i.path === '/rules/0/match/tools')!.params?.expected).toContain('tool');
    // A key named __proto__ is a key like any other (refused), never a prototype.
    const proto = refused(JSON.parse('{"version":1,"rules":[{"effect":"allow","__proto__":{"effect":"deny"}}]}'));
    expect(proto.issues.map((i) => i.path)).toEqual(['/rules/0/__proto__']);
  });

  it('huge documents: too-large, in bounded time, before the schema is applied', () => {
    const many = { version: 1, rules: Array.from({ length: POLICY_LIMITS.maxValues }, () => ({ effect: 'allow' })) };
    const t0 = performance.now();
    const e = refused(many);
    expect(e.code).toBe('too-large');
    expect(e.issues[0]!.path).toMatch(/^\/rules\/\d+/);
    expect(refused({ version: 1, rules: [{ effect: 'allow', name: 'x'.repeat(POLICY_LIMITS.maxStringLength + 1) }] }).issues[0]).toMatchObject({
      code: 'too-large',
      path: '/rules/0/name',
    });
    // A list that only says it is long is refused by its length, not walked.
    expect(refused({ version: 1, rules: new Array(2 ** 31) }).code).toBe('too-large');
    expect(() => parsePolicy(' '.repeat(POLICY_LIMITS.maxTextBytes + 1), 'json')).toThrow(expect.objectContaining({ code: 'too-large' }));
    // Many problems at once: every one counted, a bounded number kept and printed.
    const bad = refused({ version: 1, rules: Array.from({ length: 5000 }, () => ({ effect: 'nope' })) });
    expect(bad.code).toBe('invalid-option');
    expect(bad.issues.length).toBe(POLICY_LIMITS.maxIssues);
    expect(bad.message).toMatch(/and 4990 more$/);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  it('deep documents: too-deep with the path where it went too deep, also for JSON and YAML text and cycles', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const e = refused({ version: 1, rules: deep });
    expect(e.code).toBe('too-deep');
    expect(e.issues[0]!.path.split('/').length - 1).toBe(POLICY_LIMITS.maxDepth);
    const json = `{"version":1,"rules":${'['.repeat(50_000)}${']'.repeat(50_000)}}`;
    expect(() => parsePolicy(json, 'json')).toThrow(expect.objectContaining({ code: 'too-deep' }));
    const yaml = `version: 1\nrules: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`;
    // Refused before the YAML document is built: building it recurses, and its stack would run out.
    for (const text of [yaml, `version: 1\nrules:\n${Array.from({ length: 300 }, (_, i) => `${'  '.repeat(i + 1)}- `).join('\n')}x\n`]) {
      const deepYaml = (() => {
        try {
          parsePolicy(text, 'yaml');
        } catch (err) {
          return err as ToolEnvelopeError;
        }
        throw new Error('accepted');
      })();
      expect(deepYaml).toMatchObject({ code: 'too-deep', message: expect.stringMatching(/nests deeper than 32 levels \(line \d+, column \d+\)$/) });
      expect(deepYaml.issues[0]!.path).toBe(`/rules${'/0'.repeat(POLICY_LIMITS.maxDepth - 1)}`);
    }
    const cyclic: Record<string, unknown> = { version: 1, rules: [{ effect: 'allow' }] };
    (cyclic.rules as unknown[]).push(cyclic);
    expect(refused(cyclic).code).toBe('too-deep');
  });

  it('values that are not JSON, getters that throw and proxies: refused, and the checked copy is what runs', () => {
    expect(refused({ version: 1, rules: [{ effect: 'allow', name: () => 'x' }] }).issues[0]).toMatchObject({ path: '/rules/0/name', code: 'type' });
    expect(refused({ version: Number.NaN }).issues[0]).toMatchObject({ path: '/version' });
    expect(refused({ version: 1, rules: [new Date()] }).issues[0]).toMatchObject({ path: '/rules/0', message: 'must be a plain object' });
    const getter = { version: 1 };
    Object.defineProperty(getter, 'rules', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    expect(refused(getter)).toMatchObject({ code: 'invalid-option', issues: [expect.objectContaining({ code: 'unreadable' })] });
    // A document that changes after it was checked does not change the policy.
    const doc = { version: 1 as const, rules: [{ match: { tool: 'fs.*' }, effect: 'deny' as 'allow' | 'deny' }] };
    const policy = compilePolicy(doc);
    doc.rules[0]!.effect = 'allow';
    expect(policy.evaluate(ctx()).effect).toBe('deny');
  });

  it('files: a file over the limit is refused without being read whole, /dev/zero included', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-policy-'));
    try {
      const big = path.join(dir, 'big.json');
      writeFileSync(big, `{"version":1,"x":"${'a'.repeat(POLICY_LIMITS.maxTextBytes)}"}`);
      await expect(loadPolicyFile(big)).rejects.toMatchObject({ code: 'too-large' });
      await expect(loadPolicyFile('/dev/zero')).rejects.toMatchObject({ code: 'too-large' });
      const bad = path.join(dir, 'bad.yaml');
      writeFileSync(bad, 'version: 1\nrules:\n  - effect: allow\n    match: { mode: admin }\n');
      await expect(loadPolicyFile(bad)).rejects.toMatchObject({ code: 'invalid-option', issues: [expect.objectContaining({ path: '/rules/0/match/mode' })] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('patterns are compiled once per policy', () => {
  it('compiling a policy compiles its globs; evaluating calls compiles none', async () => {
    const before = policyRegExpsCompiled();
    const policy = compilePolicy({
      version: 1,
      rules: [
        { name: 'deny-ops', match: { tool: ['db.*', 'ops.*'], principalId: 'ops-*' }, effect: 'deny' },
        { name: 'exact', match: { tool: 'fs.read', riskTag: 'pii' }, effect: 'require-approval' },
        { name: 'http', match: { tool: 'http.*' }, effect: 'allow', egress: { allow: ['*.example.com', 'api.internal'], argPaths: 'url' as never } },
        { name: 'rest', match: { tool: '*' }, effect: 'allow' },
      ],
    });
    // db.*, ops.*, ops-*, http.*, *.example.com: five expressions; exact names and a lone * need none.
    expect(policyRegExpsCompiled() - before).toBe(5);
    const compiled = policyRegExpsCompiled();
    const verdicts = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const tool = ['db.query', 'fs.read', 'http.get', 'x'][i % 4] as string;
      const d = await resolveApproval({
        tool,
        ceiling: 'network',
        requested: 'network',
        principalChain: [{ kind: 'user', id: i % 3 ? 'ops-1' : 'alice' }],
        riskTags: ['pii'],
        args: { url: i % 5 ? 'https://a.example.com/x' : 'https://evil.net' },
        policy,
      });
      verdicts.add(`${tool}:${d.rule}:${d.effect}`);
    }
    expect(policyRegExpsCompiled()).toBe(compiled);
    expect(verdicts).toEqual(
      new Set(['db.query:deny-ops:deny', 'db.query:rest:allow', 'fs.read:exact:require-approval', 'http.get:http:allow', 'http.get:http:deny', 'x:rest:allow']),
    );
  });

  it('a glob matches like before: * is any run of characters (also none and newlines), the rest is literal', () => {
    const policy = compilePolicy({ version: 1, default: 'deny', rules: [{ match: { tool: 'a.*.b+c' }, effect: 'allow' }] });
    const effect = (tool: string) => policy.evaluate(ctx({ tool })).effect;
    expect(effect('a..b+c')).toBe('allow');
    expect(effect('a.x\ny.b+c')).toBe('allow');
    expect(effect('a.x.bbc')).toBe('deny');
    expect(effect('za.x.b+c')).toBe('deny');
  });

  // The counting itself is the store's, through the pipeline: governance/budgets.test.ts (the same three calls: two run, one refused).
  it('a per-principal rate budget keys the verified chain: declared entries buy no fresh budget', () => {
    const policy = compilePolicy({ version: 1, rules: [{ effect: 'allow', rateBudget: { calls: 2, perMs: 1000, scope: 'principal' } }] });
    const call = (declared: string, verifiedPrincipals = 1) =>
      policy.evaluate(
        ctx({
          principalChain: [
            { kind: 'user', id: 'alice' },
            { kind: 'agent', id: declared },
          ],
          verifiedPrincipals,
        }),
      ).budgets;
    expect(call('a')).toEqual([{ key: '["rules[0]","rateBudget",1000,"principal=user:alice"]', calls: 2, perMs: 1000, name: expect.any(String) }]);
    expect(call('b')).toEqual(call('a'));
    expect(call('c')?.[0]?.key).not.toBe(call('c', 2)?.[0]?.key);
  });
});

describe('resolveCompiledApproval (the synchronous path the pipeline takes) agrees with resolveApproval (its reference)', () => {
  it('gives the same decision on generated calls and policies (500 cases)', async () => {
    const mode = fc.constantFrom(...APPROVAL_MODES);
    const anyMode = fc.oneof(mode, fc.constant('admin'), fc.constant(undefined));
    const principal = fc.record({
      kind: fc.constantFrom(...PRINCIPAL_KINDS),
      id: fc.constantFrom('alice', 'ops-1', 'bot'),
      tenant_id: fc.constantFrom('acme', 'prod'),
    });
    const rule = fc
      .record(
        {
          match: fc.record(
            {
              tool: fc.constantFrom('fs.*', 'db.query', '*'),
              mode: fc.array(mode, { minLength: 1, maxLength: 2 }),
              principalId: fc.constantFrom('ops-*', 'alice'),
            },
            { requiredKeys: [] },
          ),
          effect: fc.constantFrom('allow', 'deny', 'require-approval'),
          mode: mode,
          requireEvidence: fc.boolean(),
          requireUserDelegation: fc.boolean(),
          selfApproval: fc.boolean(),
        },
        { requiredKeys: ['effect'] },
      )
      // selfApproval is refused off a require-approval rule (policy-rule-checks.ts).
      .map(({ selfApproval, ...r }) => (r.effect === 'require-approval' && selfApproval !== undefined ? { ...r, selfApproval } : r));
    const doc = fc.record({
      version: fc.constant(1),
      default: fc.constantFrom('builtin', 'allow', 'deny', 'require-approval'),
      rules: fc.array(rule, { maxLength: 4 }),
    });
    await fc.assert(
      fc.asyncProperty(
        doc,
        fc.constantFrom('fs.write', 'db.query', 'x'),
        anyMode,
        anyMode,
        fc.array(principal, { maxLength: 3 }),
        fc.option(fc.nat(4), { nil: undefined }),
        fc.array(fc.constant('ev:1'), { maxLength: 1 }),
        async (d, tool, ceiling, requested, principalChain, verifiedPrincipals, evidenceRefs) => {
          const policy = compilePolicy(d);
          const input = {
            tool,
            ceiling,
            requested,
            principalChain,
            evidenceRefs,
            now: 5,
            newId: () => 'pd_same',
            ...(verifiedPrincipals !== undefined && { verifiedPrincipals }),
          };
          expect(resolveCompiledApproval(input, policy)).toEqual(await resolveApproval({ ...input, policy }));
        },
      ),
      { numRuns: 500 },
    );
  });
});

// Budgets are counted under the rule's name; a setting the effect never uses would be silently ignored.
describe('rules a policy refuses at compile time', () => {
  it('two rules of one name, approvers off require-approval, budgets off allow', () => {
    const budget = { calls: 1, perMs: 60_000, scope: 'global' };
    const refused = (rules: unknown[]): string[] => {
      try {
        compilePolicy({ version: 1, rules });
      } catch (e) {
        expect(e).toBeInstanceOf(ToolEnvelopeError);
        return (e as ToolEnvelopeError).issues.map((i) => `${(e as ToolEnvelopeError).code} ${i.path}`);
      }
      return [];
    };
    expect(
      refused([
        { name: 'b', match: { tool: 'add' }, effect: 'allow', rateBudget: budget },
        { name: 'b', match: { tool: 'list_items' }, effect: 'allow', rateBudget: budget },
      ]),
    ).toEqual(['invalid-option /rules/1/name']);
    expect(
      refused([
        { effect: 'deny', approvers: 2 },
        { effect: 'allow', approvers: 2 },
      ]),
    ).toEqual(['invalid-option /rules/0/approvers', 'invalid-option /rules/1/approvers']);
    expect(
      refused([
        { effect: 'deny', rateBudget: budget },
        { effect: 'require-approval', quotas: [{ calls: 1, per: 'day' }] },
      ]),
    ).toEqual(['invalid-option /rules/0/rateBudget', 'invalid-option /rules/1/quotas']);
    expect(
      refused([
        { effect: 'allow', rateBudget: budget },
        { name: 'x', effect: 'require-approval', approvers: 2 },
      ]),
    ).toEqual([]);
  });
});
