import { describe, expect, it } from 'vitest';
import { failure, isOk, success, toolError } from './model.js';
import { ERROR_CATEGORIES, compareApprovalModes, defaultRetryable } from './taxonomy.js';

describe('canonical model constructors', () => {
  it('success is ok and carries the result', () => {
    const o = success({ rows: 3 });
    expect(o).toEqual({ status: 'ok', result: { rows: 3 } });
    expect(isOk(o)).toBe(true);
  });

  it('failure defaults to status error and fills retryable from the category', () => {
    const o = failure(toolError('timeout', 'wait-condition-timeout', 'waited 5 s'));
    expect(o.status).toBe('error');
    expect(isOk(o)).toBe(false);
    expect(o.error?.retryable).toBe(true);
    expect(failure(toolError('invalid-argument', 'bad', 'x')).error?.retryable).toBe(false);
  });

  it('an explicit retryable wins over the category default', () => {
    expect(toolError('internal', 'flaky', 'x', { retryable: true }).retryable).toBe(true);
  });

  it('every category has a default retryable and completed counts as success', () => {
    for (const c of ERROR_CATEGORIES) expect(typeof defaultRetryable(c)).toBe('boolean');
    expect(isOk({ status: 'completed' })).toBe(true);
    expect(isOk({ status: 'paused' })).toBe(false);
    expect(compareApprovalModes('read_only', 'destructive')).toBeLessThan(0);
  });
});
