import { celUint, isCelError, isCelList, isCelMap, isCelUint, run } from '@bufbuild/cel';
import { tests as conformance } from '@bufbuild/cel-spec/testdata/conformance.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePolicy, explainCall, explainInput, parsePolicy, resolveCompiledApproval, runPolicyTests } from './policy.js';
import type { PolicyDocument, ResolveApprovalInput } from './policy-types.js';

interface RawTest {
  original: {
    name: string;
    expr: string;
    value?: Record<string, unknown>;
    evalError?: unknown;
    bindings?: Record<string, { value: Record<string, unknown> }>;
    container?: string;
  };
}
interface RawSuite {
  name: string;
  suites?: RawSuite[];
  tests?: RawTest[];
}

class Unsupported extends Error {}

/** A conformance value (cel.expr.Value as JSON) as a JS value; protobuf messages and types are not used by policies. */
function celValueOf(v: Record<string, unknown>): unknown {
  if ('int64Value' in v) return BigInt(v.int64Value as string);
  if ('uint64Value' in v) return celUint(BigInt(v.uint64Value as string));
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('nullValue' in v) return null;
  if ('bytesValue' in v) return new Uint8Array(Buffer.from(v.bytesValue as string, 'base64'));
  if ('listValue' in v) return ((v.listValue as { values?: Record<string, unknown>[] }).values ?? []).map(celValueOf);
  if ('mapValue' in v) {
    const entries = (v.mapValue as { entries?: { key: Record<string, unknown>; value: Record<string, unknown> }[] }).entries ?? [];
    return new Map(entries.map((e) => [celValueOf(e.key), celValueOf(e.value)]));
  }
  throw new Unsupported(Object.keys(v).join());
}

function norm(v: unknown): string {
  if (typeof v === 'bigint') return `int ${v}`;
  if (isCelUint(v)) return `uint ${v.value}`;
  if (typeof v === 'number') return Number.isNaN(v) ? 'double NaN' : `double ${Object.is(v, -0) ? 0 : v}`;
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  if (typeof v === 'boolean' || v === null) return String(v);
  if (v instanceof Uint8Array) return `bytes ${Buffer.from(v).toString('hex')}`;
  if (isCelList(v) || Array.isArray(v)) return `[${[...(v as Iterable<unknown>)].map(norm).join(', ')}]`;
  if (isCelMap(v) || v instanceof Map) {
    return `{${[...(v as Map<unknown, unknown>).entries()]
      .map(([k, x]) => `${norm(k)}: ${norm(x)}`)
      .sort()
      .join(', ')}}`;
  }
  return `other ${String(v)}`;
}

describe('the CEL implementation (@bufbuild/cel) against the cel-spec conformance data', () => {
  const SECTIONS = ['basic', 'comparisons', 'logic', 'string', 'lists', 'macros', 'conversions', 'integer_math', 'fp_math'];
  it(`passes every simple test of ${SECTIONS.join(', ')} that needs no protobuf message`, () => {
    let passed = 0;
    let skipped = 0;
    const failed: string[] = [];
    const walk = (s: RawSuite, path: string): void => {
      for (const t of s.tests ?? []) {
        const o = t.original;
        let expected: string;
        const bindings: Record<string, unknown> = {};
        try {
          if (o.container) throw new Unsupported('container');
          expected = o.value ? norm(celValueOf(o.value)) : o.evalError ? 'error' : 'true';
          for (const [k, b] of Object.entries(o.bindings ?? {})) bindings[k] = celValueOf(b.value);
        } catch (e) {
          if (!(e instanceof Unsupported)) throw e;
          skipped++;
          continue;
        }
        let got: string;
        try {
          const r = run(o.expr, bindings as never);
          got = isCelError(r) ? 'error' : norm(r);
        } catch {
          got = 'error';
        }
        if (got === expected) passed++;
        else failed.push(`${path}/${o.name}: ${o.expr} gave ${got}, expected ${expected}`);
      }
      for (const x of s.suites ?? []) walk(x, `${path}/${x.name}`);
    };
    const suites = (conformance as unknown as RawSuite).suites ?? [];
    for (const name of SECTIONS) {
      const s = suites.find((x) => x.name === name);
      expect(s, name).toBeDefined();
      walk(s!, name);
    }
    expect(failed).toEqual([]);
    // The sample is the bulk of those sections, not a handful that happens to pass.
    expect(passed).toBeGreaterThan(700);
    expect(skipped).toBeLessThan(passed / 5);
  });
});

const POLICY = `
version: 1
default: allow
rules:
  - name: outside-shared
    match: { tool: write_file }
    when: "!within(args.path, '/srv/shared')"
    effect: deny
  - name: research-fetch
    match: { tool: fetch }
    when: "'research' in identity.roles"
    effect: allow
  - name: our-hosts
    match: { tool: fetch }
    when: "host(args.url) == 'example.com' || host(args.url).endsWith('.example.com')"
    effect: allow
  - name: other-hosts
    match: { tool: fetch }
    effect: deny
  - name: big-transfer
    match: { tool: transfer }
    when: "has(args.amount) && toNumber(args.amount) > 1000"
    effect: require-approval
tests:
  - name: dotdot
    call: { tool: write_file, mode: local_write, args: { path: /srv/shared/../etc/passwd } }
    expect: deny
  - name: encoded
    call: { tool: write_file, mode: local_write, args: { path: /srv/shared/%2e%2e/etc/passwd } }
    expect: deny
  - name: inside
    call: { tool: write_file, mode: local_write, args: { path: /srv/shared/a.txt } }
    expect: allow
  - call: { tool: fetch, mode: network, args: { url: "https://evil.com/x" }, identity: { principal: "user:r", roles: [research] } }
    expect: allow
  - call: { tool: fetch, mode: network, args: { url: "https://evil.com/x" } }
    expect: deny
  - call: { tool: fetch, mode: network, args: { url: "https://api.EXAMPLE.com/x" } }
    expect: allow
  - call: { tool: transfer, mode: network, args: { amount: "1000.01" } }
    expect: require-approval
  - call: { tool: transfer, mode: network, args: { amount: 1000 } }
    expect: allow
`;

describe('when conditions in a policy file', () => {
  it('decide, and the file carries test cases that check them', () => {
    const policy = parsePolicy(POLICY, 'yaml');
    expect(runPolicyTests(policy)).toEqual([]);
    // A test case that expects otherwise is reported with the decision's reason.
    const doc = structuredClone(policy.document) as PolicyDocument;
    doc.tests![0]!.expect = 'allow';
    const failures = runPolicyTests(compilePolicy(doc));
    expect(failures).toEqual([{ index: 0, name: 'dotdot', expected: 'allow', actual: 'deny', reason: 'outside-shared: deny' }]);
  });

  it('an expression that errs for a call denies it, with the reason recorded', () => {
    const policy = compilePolicy({ version: 1, default: 'allow', rules: [{ name: 'amount', when: 'args.amount > 10', effect: 'require-approval' }] });
    const { decision, explanation } = explainCall(policy, { tool: 'pay', mode: 'network', args: { amount: 'lots' } });
    expect(decision.effect).toBe('deny');
    expect(decision.rule).toBe('amount');
    expect(decision.reason).toMatch(/^amount: condition failed: .*overload/);
    expect(explanation?.rules[0]?.when?.error).toMatch(/overload/);
    expect(explainCall(policy, { tool: 'pay', mode: 'network', args: {} }).decision.reason).toMatch(/condition failed/);
  });

  it('explain says which rules matched and each condition value', () => {
    const policy = parsePolicy(POLICY, 'yaml');
    const { decision, explanation } = explainCall(policy, { tool: 'fetch', mode: 'network', args: { url: 'https://evil.com' } });
    expect(decision.effect).toBe('deny');
    expect(explanation?.rules).toEqual([
      { index: 0, name: 'outside-shared', matched: false, mismatch: 'tool' },
      { index: 1, name: 'research-fetch', matched: false, when: { source: "'research' in identity.roles", value: false } },
      { index: 2, name: 'our-hosts', matched: false, when: { source: expect.stringContaining('host(args.url)'), value: false } },
      { index: 3, name: 'other-hosts', matched: true },
    ]);
    expect(explanation?.deciding).toBe(3);
  });

  it('problems are located by rule, line and column, like every policy error', () => {
    const cases: [string, RegExp][] = [
      ['args.a +', /^\/rules\/1\/when line 1, column 8: syntax error/],
      ['nope == 1', /column 1: unknown variable "nope"/],
      ['exec("rm")', /column 1: unknown function "exec"/],
      ['mode + 1 == 2', /column \d+: cannot add string and int/],
      ['identity.role == "x"', /column 9: identity has no field "role"/],
      ['"x"', /must be true or false, not string/],
      ['args.a.matches(args.b)', /pattern of matches must be a string literal/],
      ['within(args.path, 1)', /argument 2 of within must be string, not int/],
    ];
    for (const [when, re] of cases) {
      let err: unknown;
      try {
        compilePolicy({ version: 1, rules: [{ effect: 'deny' }, { when, effect: 'allow' }] });
      } catch (e) {
        err = e;
      }
      const issue = (err as { issues?: { path: string; message: string; params?: { column?: number } }[] })?.issues?.[0];
      expect(issue, when).toBeDefined();
      expect(`${issue!.path} ${issue!.message}`, when).toMatch(re);
      expect((err as { code?: string }).code, when).toBe('invalid-option');
      expect(typeof issue!.params?.column, when).toBe('number');
    }
  });

  it('hostile expressions and documents are refused at load', () => {
    const refused = (when: string, code: string, re: RegExp): void => {
      let err: { code?: string; message?: string } | undefined;
      try {
        compilePolicy({ version: 1, rules: [{ when, effect: 'allow' }] });
      } catch (e) {
        err = e as typeof err;
      }
      expect(err?.code, when.slice(0, 40)).toBe(code);
      expect(err?.message, when.slice(0, 40)).toMatch(re);
    };
    refused(`${'('.repeat(1000)}true${')'.repeat(1000)}`, 'too-large', /longer than 1024/);
    refused(`${'('.repeat(200)}true${')'.repeat(200)}`, 'invalid-option', /nests deeper than 32/);
    refused(`${'!'.repeat(300)}true`, 'invalid-option', /nests deeper than 32/);
    refused(`'${'a'.repeat(1100)}' == args.a`, 'too-large', /longer than 1024/);
    refused(`args.a == 1${' + 1'.repeat(240)}`, 'invalid-option', /nests deeper than 32|more than 400 parts/);
    refused(`[${Array.from({ length: 450 }, () => '1').join(',')}] == args.a`, 'too-large', /more than 400 parts/);
    refused('[1,2,3].all(a, [1,2,3].all(b, [1,2,3].all(c, a == b)))', 'invalid-option', /comprehensions .* deeper than 2/);
    const hundred = `[${Array.from({ length: 100 }, (_, i) => i).join(',')}]`;
    refused(`${hundred}.all(a, ${hundred}.all(b, a + b >= 0 && a - b <= 200 && a * b >= 0))`, 'invalid-option', /costs more than 100000/);
    refused('system("x")', 'invalid-option', /unknown function "system"/);
    // Many conditions: the total is bounded, and what is past it is not parsed.
    const many = Array.from({ length: 200 }, () => ({ when: `args.x == '${'y'.repeat(200)}'`, effect: 'allow' as const }));
    let err: { code?: string; issues?: unknown[] } | undefined;
    try {
      compilePolicy({ version: 1, rules: many });
    } catch (e) {
      err = e as typeof err;
    }
    expect(err?.code).toBe('too-large');
    expect(err?.issues).toHaveLength(1);
    // A 10 MB document is refused before it is parsed.
    expect(() => parsePolicy(`version: 1\n# ${'x'.repeat(10 * 1024 * 1024)}\n`, 'yaml')).toThrow(/longer than/);
  });

  it('bounds the cost at run time by the sizes of the call’s collections', () => {
    const policy = compilePolicy({
      version: 1,
      default: 'allow',
      rules: [{ name: 'pairs', when: 'args.xs.exists(a, args.xs.exists(b, a == b + 1))', effect: 'deny' }],
    });
    expect(explainCall(policy, { tool: 't', args: { xs: [1, 2] } }).decision.rule).toBe('pairs');
    const big = explainCall(policy, { tool: 't', args: { xs: Array.from({ length: 5000 }, (_, i) => i * 2) } });
    expect(big.decision.effect).toBe('deny');
    expect(big.decision.reason).toMatch(/condition failed: cost limit/);
  });

  it('explain and the decision the pipeline resolves agree on 10 000 generated calls (fast-check)', () => {
    const policy = parsePolicy(POLICY, 'yaml');
    const reference = parsePolicy(POLICY, 'yaml');
    const segment = fc.constantFrom('srv', 'shared', '..', '.', '', '%2e%2e', 'etc', 'a.txt', '%252e');
    const call = fc.record({
      tool: fc.constantFrom('write_file', 'fetch', 'transfer', 'other'),
      mode: fc.constantFrom('read_only', 'local_write', 'network'),
      path: fc.array(segment, { maxLength: 6 }).map((s) => `/${s.join('/')}`),
      url: fc.oneof(fc.webUrl(), fc.constantFrom('https://example.com', 'https://a.example.com', 'https://example.com.evil.org', 'nonsense')),
      amount: fc.oneof(fc.double({ noNaN: true }), fc.constantFrom('1000', '1000.5', 'x', '')),
      roles: fc.subarray(['research', 'dev']),
      hasAmount: fc.boolean(),
    });
    fc.assert(
      fc.property(call, (c) => {
        const args: Record<string, unknown> = { path: c.path, url: c.url };
        if (c.hasAmount) args.amount = c.amount;
        const input: ResolveApprovalInput = {
          tool: c.tool,
          ceiling: 'network',
          requested: c.mode,
          principalChain: [{ kind: 'user', id: 'u' }],
          args: args as never,
          identity: { principal: 'user:u', roles: c.roles },
          now: 1_700_000_000_000,
          newId: () => 'pd',
        };
        const explained = explainInput(policy, input);
        const enforced = resolveCompiledApproval(input, reference);
        expect(explained.decision).toEqual(enforced);
      }),
      { numRuns: 10_000 },
    );
  });
});
