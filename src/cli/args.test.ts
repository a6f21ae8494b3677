// The shared flag parser: a negative number after a flag that takes a value is that flag's value,
// so the verb's own check says what is wrong with it (not "option --since needs a value"). The
// built CLI as a real process, on verbs whose flags go through parseVerbArgs.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tempDir } from '../mcp/test-support/harness.js';
import { negativeValues } from './args.js';

const MAIN = join(repoRoot, 'dist/src/cli/main.js');

describe('a negative number as a flag value', () => {
  it.each([
    [['audit', 'list', '--since', '-5m'], /^tool-envelope audit list: --since '-5m' is not a time/],
    [['audit', 'failure-summary', 'sess_1', '--before', '-1'], /^tool-envelope audit failure-summary: --before must be an integer from 1 to 1000 \(got '-1'\)/],
  ])('%j: the verb says what is wrong with it', (args, message) => {
    const store = join(tempDir(), 'none.db');
    const r = spawnSync(process.execPath, [MAIN, ...args, '--store', store], { encoding: 'utf8', env: { ...process.env, TOOL_ENVELOPE_STORE: '' } });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/needs a value/);
  });

  it('joins only a value that reads as a number, after a flag that takes one, before --', () => {
    const options = { since: { type: 'string' }, quiet: { type: 'boolean' } } as const;
    expect(negativeValues(['--since', '-5m', '--quiet', '-1', '--', '--since', '-2'], options)).toEqual([
      '--since=-5m',
      '--quiet',
      '-1',
      '--',
      '--since',
      '-2',
    ]);
    expect(negativeValues(['--since', '-x'], options)).toEqual(['--since', '-x']);
  });
});
