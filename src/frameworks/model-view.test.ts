// What the model is shown of an outcome, the same for every framework.
import { describe, expect, it } from 'vitest';
import { failure, success, toolError } from '../core/model.js';
import { oracleValidate } from '../../test/oracle.js';
import { checkContract, envelopeOf, modelError, modelResult, modelText } from './model-view.js';

describe('model view', () => {
  it('a success shows the result, with the warnings when there are any', () => {
    expect(modelResult(success({ n: 1 }))).toEqual({ n: 1 });
    expect(modelResult(success(null))).toBeNull();
    expect(modelResult(success([1], { warnings: [{ code: 'tree-truncated', detail: 'First 500 only.' }] }))).toEqual({
      result: [1],
      warnings: [{ code: 'tree-truncated', detail: 'First 500 only.' }],
    });
    expect(modelText(success({ n: 1 }))).toBe('{"n":1}');
  });

  it('a failure shows category, code, detail, retryable, remediation (the category default when the tool gave none) and retryAfterMs', () => {
    const o = failure(toolError('timeout', 'rate-limited', 'Too many calls.', { retryAfterMs: 2000 }));
    expect(modelError(o)).toEqual({
      status: 'error',
      category: 'timeout',
      code: 'rate-limited',
      detail: 'Too many calls.',
      retryable: true,
      remediation: 'Re-observe, extend the wait, or abandon.',
      retryAfterMs: 2000,
    });
    expect(modelText(o)).toBe('Tool error [timeout/rate-limited]: Too many calls. Retryable: yes. Remediation: Re-observe, extend the wait, or abandon.');
    expect(modelError(failure(toolError('internal', 'x', 'y', { remediation: 'Call support.' }))).remediation).toBe('Call support.');
  });

  it('says which kind of stop a non-success is', () => {
    const e = toolError('elevation', 'policy-denied', 'Blocked.');
    expect(modelText({ status: 'blocked', error: e })).toMatch(/^Tool call blocked by policy \[elevation\/policy-denied\]/);
    expect(modelText({ status: 'paused', error: e })).toMatch(/^Tool call paused, waiting for a human approval/);
    expect(modelText({ status: 'rejected', error: e })).toMatch(/^Tool call not approved/);
    expect(modelText({ status: 'failed', error: e })).toMatch(/^Tool error/);
  });

  it('encodes the envelope in the chosen contract, and rejects an unknown one with a typed error', () => {
    const o = failure(toolError('no-target', 'gone', 'Gone.'));
    expect(checkContract(undefined)).toBe('mcec');
    expect(oracleValidate('mcec', envelopeOf(o, 'mcec')).valid).toBe(true);
    expect(oracleValidate('dw', envelopeOf(o, 'dw')).valid).toBe(true);
    expect(oracleValidate('contextos-result', envelopeOf(o, 'contextos')).valid).toBe(true);
    expect(() => checkContract('xml')).toThrow(expect.objectContaining({ code: 'unknown-contract' }));
  });
});
