import { describe, expect, it } from 'vitest';
import { conformanceSuite, expectInvalidEnvelope } from '../../../test/conformance.js';
import { mcecDoc, toolOutcome } from '../../../test/arbitraries.js';
import { oracleValidate } from '../../../test/oracle.js';
import type { Loss } from './registry.js';
import { MCEC_SYNTHESIZED_ERRORS, checkMcec, decodeMcec, encodeMcec, validateMcec } from './mcec.js';
import { failure, success, toolError } from '../model.js';

conformanceSuite({
  name: 'MCEC',
  oracle: 'mcec',
  docs: mcecDoc,
  validate: validateMcec,
  check: checkMcec,
  decode: decodeMcec,
  encode: (o) => encodeMcec(o),
  canonical: toolOutcome,
});

describe('MCEC: decode', () => {
  it('ok:true is status ok, ok:false is status error with the stated category', () => {
    expect(decodeMcec({ ok: true, result: { n: 1 }, sessionId: null })).toStrictEqual({
      status: 'ok',
      result: { n: 1 },
      sessionId: null,
    });
    const o = decodeMcec({
      ok: false,
      error: { code: 'selector-matched-3', category: 'ambiguous-selector', detail: '3 matches', lastObservation: null },
    });
    expect(o).toStrictEqual({
      status: 'error',
      error: { category: 'ambiguous-selector', code: 'selector-matched-3', detail: '3 matches', lastObservation: null },
    });
  });

  it('rejects non-objects, arrays, strings and null with invalid-envelope, never a crash', () => {
    for (const doc of [null, undefined, 'ok', 42, [], [{ ok: true }], true]) {
      const err = expectInvalidEnvelope(decodeMcec, doc);
      expect(err.issues).toContainEqual(expect.objectContaining({ code: 'type', path: '' }));
    }
  });

  it('names the pointer and the rule of each violation', () => {
    expect(checkMcec({ ok: false })).toEqual([
      { code: 'required', path: '/error', message: "must have required property 'error'", params: { missingProperty: 'error' } },
    ]);
    expect(checkMcec({ ok: true, error: { code: 'a', category: 'focus', detail: 'd' } })).toEqual([
      { code: 'not', path: '/error', message: 'must not have an error object when ok is true', params: {} },
    ]);
    const issues = checkMcec({ ok: true, 'a/b': 1, warnings: [{ code: 'c', detail: 'd', x: 1 }] });
    expect(issues.map((i) => [i.code, i.path])).toEqual([
      ['additionalProperties', '/a~1b'],
      ['additionalProperties', '/warnings/0/x'],
    ]);
    expect(checkMcec({ ok: false, error: { code: 'c', category: 'nope', detail: 'd' } }).map((i) => [i.code, i.path])).toEqual([['enum', '/error/category']]);
  });
});

describe('MCEC: encode', () => {
  it('a success is ok:true with the result, nothing lost', () => {
    const losses: Loss[] = [];
    expect(encodeMcec(success({ rows: [1] }, { warnings: [{ code: 'w', detail: 'd' }] }), { losses })).toStrictEqual({
      ok: true,
      result: { rows: [1] },
      warnings: [{ code: 'w', detail: 'd' }],
    });
    expect(losses).toEqual([]);
  });

  it('references the result instead of copying it', () => {
    const result = { big: [1, 2, 3] };
    expect(encodeMcec(success(result)).result).toBe(result);
  });

  it('a failure carries code, category, detail, lastObservation and partialResult; category defaults are not losses', () => {
    const losses: Loss[] = [];
    const e = toolError('capture-blank', 'all-black', 'The capture is blank.', {
      lastObservation: { tree: 1 },
      partialResult: { png: 'x' },
      remediation: 'The output was blank; inspect partialResult and retry the capture.',
      reason: 'capture_blank',
    });
    expect(encodeMcec(failure(e), { losses })).toStrictEqual({
      ok: false,
      error: {
        code: 'all-black',
        category: 'capture-blank',
        detail: 'The capture is blank.',
        lastObservation: { tree: 1 },
        partialResult: { png: 'x' },
      },
    });
    expect(losses).toEqual([]);
  });

  it('reports exactly what it cannot carry', () => {
    const losses: Loss[] = [];
    encodeMcec(
      {
        status: 'failed',
        result: 'text',
        runId: 'r',
        latencyMs: 0,
        artifacts: [],
        citations: [{ url: 'u' }],
        metadata: {},
        meta: { a: 1 },
        extensions: { 'x/y': 1 },
        error: { category: 'timeout', code: null, detail: null, retryable: false, reason: 'slow', details: { a: 1 }, extensions: { k: 1 } },
      },
      { losses },
    );
    expect(losses.map((l) => [l.path, l.code])).toEqual([
      ['/result', 'wrapped-non-object'],
      ['/error/reason', 'not-representable'],
      ['/error/retryable', 'not-representable'],
      ['/error/details', 'not-representable'],
      ['/error/extensions/k', 'not-representable'],
      ['/status', 'dropped-status'],
      ['/runId', 'not-representable'],
      ['/latencyMs', 'not-representable'],
      ['/citations', 'not-representable'],
      ['/meta', 'not-representable'],
      ['/extensions/x~1y', 'not-representable'],
    ]);
  });

  it('fills a null code and detail from the category', () => {
    const doc = encodeMcec({ status: 'error', error: { category: 'focus', code: null, detail: null } });
    expect(doc.error).toEqual({ code: 'focus', category: 'focus', detail: 'Set focus on the target and retry.' });
  });

  it('ok:true with an error drops the error (MCEC forbids it), null error is no loss', () => {
    const losses: Loss[] = [];
    expect(encodeMcec({ status: 'ok', error: toolError('internal', 'x', 'y') }, { losses })).toStrictEqual({ ok: true });
    expect(losses).toEqual([{ path: '/error', code: 'dropped-error', reason: expect.any(String) }]);
    const none: Loss[] = [];
    expect(encodeMcec({ status: 'completed', error: null }, { losses: none })).toStrictEqual({ ok: true });
    expect(none.map((l) => l.code)).toEqual(['dropped-status']);
  });

  it.each(['paused', 'blocked', 'rejected', 'error', 'failed'] as const)('a %s outcome without an error gets the synthesized error', (status) => {
    const losses: Loss[] = [];
    const doc = encodeMcec({ status }, { losses });
    expect(doc).toStrictEqual({ ok: false, error: MCEC_SYNTHESIZED_ERRORS[status] });
    expect(doc.error).not.toBe(MCEC_SYNTHESIZED_ERRORS[status]);
    expect(oracleValidate('mcec', doc).valid).toBe(true);
    const codes = losses.map((l) => `${l.path} ${l.code}`);
    expect(codes).toEqual(status === 'error' ? ['/error synthesized-error'] : ['/error synthesized-error', '/status dropped-status']);
  });

  it('wraps a non-object result as {value} (null stays null)', () => {
    expect(encodeMcec(success([1, 2])).result).toEqual({ value: [1, 2] });
    expect(encodeMcec(success(null)).result).toBeNull();
    expect(encodeMcec(success('s')).result).toEqual({ value: 's' });
  });

  it('keeps hostile keys of the result as plain data', () => {
    const result = JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}');
    const doc = encodeMcec(success(result));
    expect(Object.keys(doc.result!)).toEqual(['__proto__', 'constructor']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(validateMcec(doc)).toBe(true);
  });
});
