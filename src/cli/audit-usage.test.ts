/** What `tool-envelope audit` says about its own use: sub-verb typos and the help texts. */
import { describe, expect, it } from 'vitest';
import * as audit from './audit.js';
import * as policy from './policy.js';
import { runVerb } from './test-support/run-verb.js';

describe('audit usage', () => {
  it.each([
    [['lst'], "tool-envelope audit: unknown sub-verb 'lst' (did you mean 'list'?)"],
    [['aprovals'], "tool-envelope audit: unknown sub-verb 'aprovals' (did you mean 'approvals'?)"],
    [['approvals', 'aprove', 'apr_1'], "tool-envelope audit approvals: unknown action 'aprove' (did you mean 'approve'?)"],
    [['approvals', 'rejct', 'apr_1'], "tool-envelope audit approvals: unknown action 'rejct' (did you mean 'reject'?)"],
    [['zzzzzz'], "tool-envelope audit: unknown sub-verb 'zzzzzz' (one of list,"],
    [['lst\u001b[2J'], "tool-envelope audit: unknown sub-verb 'lst?[2J'"],
  ])('%j: a usage error with the closest sub-verb, exit 2', async (args, message) => {
    const r = await runVerb(audit, args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).not.toContain('\u001b');
  });

  it('the --status list of list, stats, export and report names every status, interrupted too', async () => {
    for (const sub of ['list', 'stats', 'export', 'report']) {
      const help = await audit.helpFor([sub]);
      expect([sub, /--status S\[,S\.\.\.\] +ok, error, paused, completed, failed, rejected, blocked, interrupted \(repeatable\)/.test(help)]).toEqual([
        sub,
        true,
      ]);
    }
  });

  it('audit --help says who the approver is, and does not claim it can be named', () => {
    expect(audit.help).not.toContain('naming the approver');
    expect(audit.help).toContain('the approver is\nthe OS user running the command (user:NAME), or with --tokens the identity of TOOL_ENVELOPE_TOKEN.');
  });

  it.each([
    [['chek', 'p.yaml'], "tool-envelope policy: unknown sub-verb 'chek': check or explain (did you mean 'check'?)"],
    [['explian', 'p.yaml'], "tool-envelope policy: unknown sub-verb 'explian': check or explain (did you mean 'explain'?)"],
    [['zzzzzz'], "tool-envelope policy: unknown sub-verb 'zzzzzz': check or explain\n"],
    [['chek\u001b[2J'], "tool-envelope policy: unknown sub-verb 'chek?[2J'"],
  ])('policy %j: a usage error with the closest sub-verb, exit 2', async (args, message) => {
    const r = await runVerb(policy, args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).not.toContain('\u001b');
  });
});
