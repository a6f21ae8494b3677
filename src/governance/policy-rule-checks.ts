/**
 * What the schema cannot say about a policy's rules, refused at load rather than ignored: two rules
 * of one name (a rule's budgets are counted under its name, so two such rules would share them, and
 * a decision naming the rule would not say which), and settings a rule's effect never uses
 * (`approvers` or `selfApproval` off a require-approval rule, `rateBudget` or `quotas` off an allow
 * rule), and names of the `builtin:` rules.
 */
import type { Issue } from 'tool-envelope/core';
import { failPolicy } from './policy-check.js';
import type { PolicyRule } from './policy-types.js';

/** The name a rule's decisions and budgets go by: its own, else its place. */
export function ruleName(rule: PolicyRule, index: number): string {
  return rule.name ?? `rules[${index}]`;
}

/** Throws a located `invalid-option` error for each duplicate name and each setting the rule's effect never uses. */
export function checkRuleSettings(rules: readonly PolicyRule[]): void {
  const issues: Issue[] = [];
  const seen = new Map<string, number>();
  rules.forEach((r, i) => {
    const name = ruleName(r, i);
    const first = seen.get(name);
    if (first !== undefined) {
      // Located at the name when it has one, else at the rule (an implied name, rules[N], taken by another's).
      const path = r.name === undefined ? `/rules/${i}` : `/rules/${i}/name`;
      issues.push({
        code: 'duplicate',
        path,
        message: `${JSON.stringify(name)} is already the name of rule ${first}: each rule needs its own name (its budgets are counted under it)`,
        params: { first },
      });
    } else seen.set(name, i);
    // The built-in decisions go by `builtin:MODE` (and the network budget by builtin:network): a rule
    // of such a name would share their budgets and read as them in every record.
    if (r.name?.startsWith('builtin:'))
      issues.push({ code: 'reserved', path: `/rules/${i}/name`, message: `${JSON.stringify(r.name)}: names starting builtin: are the built-in rules'` });
    for (const key of ['approvers', 'selfApproval'] as const) {
      if (r[key] !== undefined && r.effect !== 'require-approval')
        issues.push({ code: 'effect', path: `/rules/${i}/${key}`, message: `is only for require-approval rules (this rule's effect is ${r.effect})` });
    }
    for (const key of ['rateBudget', 'quotas'] as const) {
      if (r[key] !== undefined && r.effect !== 'allow')
        issues.push({
          code: 'effect',
          path: `/rules/${i}/${key}`,
          message: `is only for allow rules (this rule's effect is ${r.effect}: no call it decides is counted)`,
        });
    }
  });
  if (issues.length > 0) failPolicy('invalid-option', issues);
}
