// What the CLI says when it is used wrong, from the built `tool-envelope` as a user runs it.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../test/oracle.js';

const MAIN = path.join(repoRoot, 'dist/src/cli/main.js');
const run = (...args: string[]) => spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', env: { ...process.env, TOOL_ENVELOPE_STORE: '' } });

describe('CLI messages', () => {
  it.each([
    [['validate', '--formt', 'json', 'a.json'], "tool-envelope validate: unknown option '--formt' (did you mean --format?)"],
    [['convert', '--too', 'dw', 'a.json'], "tool-envelope convert: unknown option '--too' (did you mean --to?)"],
    [['convert', '--strict=yes', '--to', 'dw', 'a.json'], 'tool-envelope convert: option --strict takes no value'],
    [['convert', 'a.json', '--to'], 'tool-envelope convert: option --to needs a value'],
    [['audit', 'list', '--stauts', 'error'], "tool-envelope audit list: unknown option '--stauts' (did you mean --status?)"],
    [['validate', '--zzzzzz', 'a.json'], "tool-envelope validate: unknown option '--zzzzzz'\n"],
  ])('%j: a clean usage error with a suggestion, exit 2', (args, message) => {
    const r = run(...args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(message);
    // Node's own parser text (an unbalanced quote, advice about positionals) is gone.
    expect(r.stderr).not.toMatch(/To specify a positional argument|'-- "/);
    expect(r.stderr).toContain('--help');
  });

  it('a gateway upstream given without -- gets the hint to put it after --', () => {
    const r = run('gateway', '--http', '0', 'node', 'server.js');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      "tool-envelope gateway: unexpected argument 'node': put the upstream command after '--', as in: tool-envelope gateway [options] -- node ...",
    );
    const typo = run('gateway', '--dialct', 'dw', '--', 'node', 'server.js');
    expect(typo.stderr).toContain("unknown option '--dialct' (did you mean --dialect?)");
  });

  it('a mistyped verb gets "did you mean"', () => {
    const r = run('valdate', 'a.json');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^tool-envelope: unknown verb 'valdate' \(did you mean 'validate'\?\)\n/);
    expect(run('gatway').stderr).toContain("(did you mean 'gateway'?)");
    expect(run('frobnicate').stderr).toMatch(/^tool-envelope: unknown verb 'frobnicate'\n/);
  });

  it('every --help, of every verb and audit sub-verb, ends with the exit codes', () => {
    const helps = [['--help'], ...['validate', 'convert', 'schema', 'gateway', 'audit'].map((v) => [v, '--help'])];
    for (const sub of ['list', 'show', 'stats', 'export', 'approvals', 'failure-summary', 'report']) helps.push(['audit', sub, '--help']);
    for (const args of helps) {
      const r = run(...args);
      expect(r.status, args.join(' ')).toBe(0);
      expect(r.stdout, args.join(' ')).toMatch(/\nExit codes: 0 /);
    }
  });
});
