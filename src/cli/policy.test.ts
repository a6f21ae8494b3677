/**
 * `tool-envelope policy check|explain` (#38 point 5) on policy files written to disk: exit codes as
 * the README's CLI section defines them (0 valid, 1 invalid or a failed test case, 2 usage or I/O),
 * problems located by rule, line and column, a file's own `tests:`, the JSON shape of explain, and
 * every example of `policy --help` run by a shell through the real command.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_POLICY } from '../governance/test-support/operator-policy.js';
import * as policy from './policy.js';
import { runVerb } from './test-support/run-verb.js';

/** The operator's policy (8 rules) with test cases of its own. */
const GOOD = `${OPERATOR_POLICY}tests:
  - name: escape
    call: { tool: write_file, mode: local_write, args: { path: /srv/shared/../etc/passwd } }
    expect: deny
  - name: inside
    call: { tool: write_file, mode: local_write, args: { path: /srv/shared/a.txt } }
    expect: allow
  - name: researcher
    call: { tool: fetch, mode: network, args: { url: "https://evil.test" }, identity: { principal: "user:rita", roles: [research] } }
    expect: allow
  - call: { tool: transfer, mode: network, args: { amount: "1500" } }
    expect: require-approval
`;

describe('tool-envelope policy', () => {
  let dir: string;
  const file = (name: string, text: string): string => {
    writeFileSync(join(dir, name), text);
    return name;
  };
  const cli = (...args: string[]) => runVerb(policy, args, { cwd: dir });
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'te-policy-cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('check: a valid policy whose test cases all pass exits 0', async () => {
    const r = await cli('check', file('good.yaml', GOOD));
    expect(r).toEqual({ code: 0, stdout: 'good.yaml: 8 rule(s), 4 of 4 test case(s) passed\n', stderr: '' });
  });

  it('check: a test case that decides otherwise exits 1, naming it, what was expected and why', async () => {
    const failing = `${GOOD}  - name: forgot-the-dots
    call: { tool: write_file, mode: local_write, args: { path: "/srv/shared/%2e%2e/etc/passwd" } }
    expect: allow
  - call: { tool: list_files, mode: read_only }
    expect: allow
`;
    const r = await cli('check', file('failing.yaml', failing));
    expect(r.code).toBe(1);
    expect(r.stderr.split('\n')).toEqual([
      'failing.yaml: /tests/4 forgot-the-dots: expected allow, got deny: writes stay under /srv/shared',
      'failing.yaml: /tests/5 tests[5]: expected allow, got deny: no rule matched: default deny',
      '',
    ]);
    expect(r.stdout).toBe('failing.yaml: 8 rule(s), 4 of 6 test case(s) passed\n');
  });

  it('check: a condition with a problem exits 1, located by rule, line and column', async () => {
    const cases: [string, string][] = [
      // [condition as YAML, the located message]
      [`"host(args.url) == 'x' && idenity.roles.size() > 0"`, '/rules/0/when line 1, column 26: unknown variable "idenity"'],
      [`"within(args.path)"`, '/rules/0/when line 1, column 1: within takes 2 argument(s), not 1'],
      [`"identity.role == 'admin'"`, '/rules/0/when line 1, column 9: identity has no field "role"'],
      [`"sha256(args.x) == 'y'"`, '/rules/0/when line 1, column 1: unknown function "sha256"'],
      [`"mode + 1 > 2"`, '/rules/0/when line 1, column 6: cannot add string and int'],
      [`"args.amount"`, '/rules/0/when line 1, column 1: must be true or false, not dyn'],
      ['|\n      args.amount > 10 &&\n        args.amount < )', '/rules/0/when line 2, column 15: syntax error'],
      [`"${'('.repeat(40)}true${')'.repeat(40)}"`, '/rules/0/when line 1, column 33: nests deeper than 32 levels'],
    ];
    for (const [when, message] of cases) {
      const doc = `version: 1\nrules:\n  - name: r\n    match: { tool: fetch }\n    when: ${when}\n    effect: deny\n`;
      const r = await cli('check', file('bad.yaml', doc));
      // 'args.amount' alone is dyn (not known to be a bool at load): it passes the check and errs at run time.
      if (when === `"args.amount"`) {
        expect(r.code, when).toBe(0);
        continue;
      }
      expect(r.code, when).toBe(1);
      expect(r.stdout, when).toBe('');
      expect(r.stderr, when).toContain(`bad.yaml: ${message}`);
    }
  });

  it('check: a second rule is located as the second, and schema problems by their pointer', async () => {
    const two = `version: 1\nrules:\n  - match: { tool: a }\n    when: "true"\n    effect: allow\n  - match: { tool: b }\n    when: "now > 3"\n    effect: maybe\n`;
    const r = await cli('check', file('two.yaml', two));
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('two.yaml:8:13: /rules/1/effect must be one of allow, deny, require-approval, got "maybe"\n');
    const typed = await cli('check', file('typed.yaml', two.replace('maybe', 'deny')));
    expect(typed.code).toBe(1);
    expect(typed.stderr).toBe('typed.yaml: /rules/1/when line 1, column 5: cannot compare timestamp with int\n');
  });

  it('check: schema problems are located by line and column in the file, with the bad value, and a near miss of a key named', async () => {
    const doc = 'version: 1\nrules:\n  - name: a\n    effect: alow\n  - match: { tol: x }\n    effect: deny\n';
    const r = await cli('check', file('e1.yaml', doc));
    expect(r.code).toBe(1);
    expect(r.stderr.split('\n')).toEqual([
      'e1.yaml:4:13: /rules/0/effect must be one of allow, deny, require-approval, got "alow"',
      `e1.yaml:5:14: /rules/1/match/tol unknown property "tol" (expected one of tool, mode, principalKind, principalId, tenant, riskTag) (did you mean 'tool'?)`,
      '',
    ]);
    const json = await cli('check', file('e3.json', '{"version": 1,\n "rules": [{"effect": "alow"}]}'));
    expect(json.stderr).toBe('e3.json:2:23: /rules/0/effect must be one of allow, deny, require-approval, got "alow"\n');
  });

  // Budgets are counted under the rule's name: two rules of one name would share them.
  it('check: two rules of one name, a builtin: name, approvers or selfApproval off require-approval and budgets off allow are located errors', async () => {
    const doc = [
      'version: 1',
      'rules:',
      '  - name: b',
      '    match: { tool: add }',
      '    effect: allow',
      '    rateBudget: { calls: 1, perMs: 60000, scope: global }',
      '  - name: b',
      '    match: { tool: list_items }',
      '    effect: allow',
      '    rateBudget: { calls: 1, perMs: 60000, scope: global }',
      '  - match: { tool: drop }',
      '    effect: deny',
      '    approvers: 2',
      '    rateBudget: { calls: 1, perMs: 1000 }',
      '    quotas: [{ calls: 1, per: day }]',
      '  - name: rules[2]',
      '    effect: require-approval',
      '  - name: builtin:network',
      '    effect: allow',
      '    selfApproval: true',
      '',
    ].join('\n');
    const r = await cli('check', file('dup.yaml', doc));
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')).toEqual([
      'dup.yaml:7:11: /rules/1/name "b" is already the name of rule 0: each rule needs its own name (its budgets are counted under it)',
      "dup.yaml:13:16: /rules/2/approvers is only for require-approval rules (this rule's effect is deny)",
      "dup.yaml:14:17: /rules/2/rateBudget is only for allow rules (this rule's effect is deny: no call it decides is counted)",
      "dup.yaml:15:13: /rules/2/quotas is only for allow rules (this rule's effect is deny: no call it decides is counted)",
      'dup.yaml:16:11: /rules/3/name "rules[2]" is already the name of rule 2: each rule needs its own name (its budgets are counted under it)',
      `dup.yaml:18:11: /rules/4/name "builtin:network": names starting builtin: are the built-in rules'`,
      "dup.yaml:20:19: /rules/4/selfApproval is only for require-approval rules (this rule's effect is allow)",
      '',
    ]);
  });

  it('check: YAML nested thousands deep is too deep, as 40 levels are, not a parser stack overflow', async () => {
    for (const n of [40, 2000]) {
      const r = await cli('check', file(`d${n}.yaml`, `version: 1\nrules: ${'['.repeat(n)}${']'.repeat(n)}\n`));
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`d${n}.yaml:2:39: /rules${'/0'.repeat(31)} nests deeper than 32 levels\n`);
    }
  });

  it('check: past the 100 problems it lists, it says how many more there are', async () => {
    const rules = Array.from({ length: 150 }, () => '  - effect: alow').join('\n');
    const r = await cli('check', file('many.yaml', `version: 1\nrules:\n${rules}\n`));
    expect(r.code).toBe(1);
    const lines = r.stderr.split('\n');
    expect(lines).toHaveLength(102);
    expect(lines[0]).toBe('many.yaml:3:13: /rules/0/effect must be one of allow, deny, require-approval, got "alow"');
    expect(lines[99]).toMatch(/^many\.yaml:102:13: \/rules\/99\/effect /);
    expect(lines.slice(100)).toEqual(['many.yaml: ... and 50 more problems', '']);
  });

  it('check: unreadable YAML is invalid (1), the file named once; a missing file, a directory and usage errors exit 2', async () => {
    const yaml = await cli('check', file('broken.yaml', 'version: 1\nrules: [\n'));
    expect(yaml.code).toBe(1);
    expect(yaml.stderr).toMatch(/^broken\.yaml: invalid YAML: /);
    expect(yaml.stderr).not.toContain(join(dir, 'broken.yaml'));
    mkdirSync(join(dir, 'a-dir'), { recursive: true });
    for (const args of [
      ['check', 'nowhere.yaml'],
      ['check', 'a-dir'],
      [],
      ['lint', 'good.yaml'],
      ['check'],
      ['check', 'good.yaml', 'other.yaml'],
      ['check', 'good.yaml', '--call', 'c.json'],
      ['check', 'good.yaml', '--format', 'json'],
      ['check', 'good.yaml', '--nope'],
      ['explain', 'good.yaml'],
    ]) {
      const r = await cli(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr, args.join(' ')).toMatch(/^tool-envelope policy/);
    }
  });

  it('explain: the decision and each rule looked at, as text', async () => {
    file('good.yaml', GOOD);
    file('escape.json', JSON.stringify({ tool: 'write_file', mode: 'local_write', args: { path: '/srv/shared//../etc/passwd' } }));
    const r = await cli('explain', 'good.yaml', '--call', 'escape.json');
    expect(r).toEqual({
      code: 0,
      stderr: '',
      stdout: [
        `rule 0 outside-shared: match holds, when "!within(args.path, '/srv/shared')" is true => decides`,
        'decision: deny (outside-shared): writes stay under /srv/shared',
        '',
      ].join('\n'),
    });
    file('pay.json', JSON.stringify({ tool: 'transfer', mode: 'network', args: { amount: 'lots' } }));
    const errs = await cli('explain', 'good.yaml', '--call', 'pay.json');
    expect(errs.code).toBe(0);
    expect(errs.stdout.split('\n')).toEqual([
      'rule 0 outside-shared: match.tool does not hold => next',
      'rule 1 shared-writes: match.tool does not hold => next',
      'rule 2 research-fetch: match.tool does not hold => next',
      'rule 3 our-hosts: match.tool does not hold => next',
      'rule 4 other-hosts: match.tool does not hold => next',
      expect.stringMatching(/^rule 5 large-transfer: match holds, when errs \(.*toNumber: "lots" is not a number.*\) => decides$/),
      expect.stringMatching(/^decision: deny \(large-transfer\): large-transfer: condition failed: /),
      '',
    ]);
    file('other.json', JSON.stringify({ tool: 'list_files', mode: 'read_only' }));
    const none = await cli('explain', 'good.yaml', '--call', 'other.json');
    expect(none.stdout).toMatch(/no rule matched: the default decides\ndecision: deny \(default\): no rule matched: default deny\n$/);
  });

  it('explain says when the gateway blocks an allowed call: the tool needs a mode above the effective one', async () => {
    file('good.yaml', GOOD);
    file('low.json', JSON.stringify({ tool: 'write_file', ceiling: 'destructive', mode: 'local_write', args: { path: '/srv/shared/a.txt' } }));
    const text = await cli('explain', 'good.yaml', '--call', 'low.json');
    expect(text.stdout).toContain('\nnot run: blocked by the gateway: the tool needs destructive for this call but the effective mode is local_write\n');
    const json = JSON.parse((await cli('explain', 'good.yaml', '--call', 'low.json', '--format', 'json')).stdout);
    expect(json).toMatchObject({ effect: 'allow', blocked: 'the tool needs destructive for this call but the effective mode is local_write' });
  });

  it('explain --format json: effect, effectiveMode, reason, rule and the rules looked at', async () => {
    file('good.yaml', GOOD);
    file(
      'fetch.json',
      JSON.stringify({ tool: 'fetch', mode: 'network', args: { url: 'https://x.test' }, identity: { principal: 'user:bob', roles: ['dev'] } }),
    );
    const r = await cli('explain', 'good.yaml', '--call', 'fetch.json', '--format', 'json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      effect: 'deny',
      effectiveMode: null,
      reason: 'other-hosts: deny',
      rule: 'other-hosts',
      rules: [
        { index: 0, name: 'outside-shared', matched: false, mismatch: 'tool' },
        { index: 1, name: 'shared-writes', matched: false, mismatch: 'tool' },
        { index: 2, name: 'research-fetch', matched: false, when: { source: "'research' in identity.roles", value: false } },
        { index: 3, name: 'our-hosts', matched: false, when: { source: expect.stringContaining("host(args.url) == 'example.com'"), value: false } },
        { index: 4, name: 'other-hosts', matched: true },
      ],
    });
    file('inside.json', JSON.stringify({ tool: 'write_file', mode: 'local_write', args: { path: '/srv/shared/a.txt' } }));
    const allowed = JSON.parse((await cli('explain', 'good.yaml', '--call', 'inside.json', '--format', 'json')).stdout);
    expect(allowed).toEqual({
      effect: 'allow',
      effectiveMode: 'local_write',
      reason: 'shared-writes: allow',
      rule: 'shared-writes',
      rules: [
        { index: 0, name: 'outside-shared', matched: false, when: { source: "!within(args.path, '/srv/shared')", value: false } },
        { index: 1, name: 'shared-writes', matched: true },
      ],
    });
  });

  it('explain: an allowed call names the budgets it would be counted against, and counts nothing', async () => {
    file('budget.yaml', 'version: 1\nrules:\n  - name: fetch\n    effect: allow\n    rateBudget: { calls: 1, perMs: 60000, scope: principal }\n');
    file('one.json', JSON.stringify({ tool: 'fetch', principalChain: [{ kind: 'user', id: 'bob' }] }));
    // A budget of one call: explained twice, it is still named both times (explain never counts).
    for (let i = 0; i < 2; i++) {
      const json = JSON.parse((await cli('explain', 'budget.yaml', '--call', 'one.json', '--format', 'json')).stdout);
      expect(json).toMatchObject({ effect: 'allow', budgets: [{ key: '["fetch","rateBudget",60000,"principal=user:bob"]', calls: 1, perMs: 60000 }] });
    }
    const text = await cli('explain', 'budget.yaml', '--call', 'one.json');
    expect(text.stdout.trim().split('\n').at(-1)).toBe('counted, when it runs, against fetch: rateBudget (1 calls per 60000 ms per principal)');
  });

  it('explain: a call file that is missing, not JSON or not a call exits 2; a bad policy 1', async () => {
    file('good.yaml', GOOD);
    file('notjson.json', '{"tool":');
    file('nottool.json', JSON.stringify({ tool: 7, args: [] }));
    file('badnow.json', JSON.stringify({ tool: 'fetch', now: 'yesterday' }));
    for (const [callFile, message] of [
      ['nowhere.json', /cannot read nowhere\.json/],
      ['notjson.json', /notjson\.json: not JSON/],
      ['nottool.json', /^nottool\.json: \/tool /m],
      ['badnow.json', /badnow\.json: now: "yesterday" is not an ISO 8601 time/],
    ] as const) {
      const r = await cli('explain', 'good.yaml', '--call', callFile);
      expect(r.code, callFile).toBe(2);
      expect(r.stdout, callFile).toBe('');
      expect(r.stderr, callFile).toMatch(message);
    }
    expect((await cli('explain', 'good.yaml', '--call', 'fetch.json', '--format', 'yaml')).code).toBe(2);
    file('bad.yaml', 'version: 1\nrules:\n  - when: "nope"\n    effect: deny\n');
    const bad = await cli('explain', 'bad.yaml', '--call', 'fetch.json');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('bad.yaml: /rules/0/when line 1, column 1: unknown variable "nope"');
  });
});

describe('tool-envelope policy --help, through the real command', () => {
  let dir: string;
  let bin: string;
  const main = fileURLToPath(new URL('./main.ts', import.meta.url));
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'te-policy-help-'));
    bin = join(dir, 'bin');
    mkdirSync(bin);
    // `tool-envelope` on the PATH, as an installed CLI is: the real main, its real exit code.
    writeFileSync(
      join(bin, 'tool-envelope'),
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} --import ${JSON.stringify(tsx)} ${JSON.stringify(main)} "$@"\n`,
    );
    chmodSync(join(bin, 'tool-envelope'), 0o755);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const sh = (line: string, cwd: string) =>
    spawnSync('/bin/sh', ['-c', line], { cwd, encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });

  it('runs every example of the help, in order, with POSIX sh', () => {
    const help = sh('tool-envelope policy --help', dir);
    expect(help.status).toBe(0);
    expect(help.stdout).toBe(`${policy.help}\n`);
    const examples = (/\nExamples:\n((?: {2}.*\n)+)/.exec(help.stdout)?.[1] ?? '').split('\n').filter((l) => l !== '');
    expect(examples.length).toBeGreaterThanOrEqual(4);
    const work = join(dir, 'work');
    mkdirSync(work);
    const outputs: string[] = [];
    for (const line of examples) {
      const r = sh(line.trim(), work);
      expect([line, r.status, r.stderr]).toEqual([line, 0, '']);
      outputs.push(r.stdout);
    }
    // What the examples wrote and said: the printf gave a valid policy whose test case passes...
    expect(readFileSync(join(work, 'policy.yaml'), 'utf8')).toContain(`when: "!within(args.path, '/srv/shared')"`);
    expect(outputs).toContain('policy.yaml: 1 rule(s), 1 of 1 test case(s) passed\n');
    // ...and explain answered JSON for the call inside /srv/shared: the built-in local_write default.
    const json = outputs.find((o) => o.startsWith('{'));
    expect(JSON.parse(json ?? 'null')).toMatchObject({ effect: 'allow', rule: 'builtin:local_write', rules: [{ name: 'outside', when: { value: false } }] });
  });

  it('exits 1 for an invalid policy and 2 for a missing one', () => {
    writeFileSync(join(dir, 'bad.yaml'), 'version: 1\nrules:\n  - when: "args.x >"\n    effect: deny\n');
    const bad = sh('tool-envelope policy check bad.yaml', dir);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/^bad\.yaml: \/rules\/0\/when line 1, column \d+: syntax error/);
    const missing = sh('tool-envelope policy check missing.yaml', dir);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^tool-envelope policy: /);
  });
});
