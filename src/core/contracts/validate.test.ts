import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contextosCallDoc, contextosResultDoc, dwDoc, mcecDoc, mutated } from '../../../test/arbitraries.js';
import { oracleValidate } from '../../../test/oracle.js';
import { type Dialect, detectContract, validateEnvelope } from './registry.js';

const DW = { schema: 'durable-workflow.v2.mcp-tool-result', version: 1, status: 'ok' };

describe('detectContract', () => {
  it.each([
    [DW, 'dw'],
    [{ ...DW, ok: true }, 'dw'],
    [{ envelope_version: 'contextos.tool_call.v1' }, 'contextos-call'],
    [{ envelope_version: 'contextos.tool_result.v1' }, 'contextos'],
    [{ envelope_version: 'something-else' }, 'contextos'],
    [{ ok: false }, 'mcec'],
    [{ ok: 'true' }, undefined],
    [{ schema: 'other' }, undefined],
    [{}, undefined],
    [null, undefined],
    [[{ ok: true }], undefined],
    ['{"ok":true}', undefined],
    [42, undefined],
  ] as const)('%j → %s', (doc, expected) => {
    expect(detectContract(doc)).toBe(expected);
  });

  it('detects every generated document as its own contract', () => {
    const cases = [
      [mcecDoc, 'mcec'],
      [dwDoc, 'dw'],
      [contextosResultDoc, 'contextos'],
      [contextosCallDoc, 'contextos-call'],
    ] as const;
    for (const [arb, id] of cases) for (const doc of fc.sample(arb, 200)) expect(detectContract(doc)).toBe(id);
  });
});

describe('validateEnvelope', () => {
  it('auto with nothing detected is invalid with unknown-contract', () => {
    expect(validateEnvelope({ hello: 1 }, 'auto')).toEqual({
      valid: false,
      issues: [{ code: 'unknown-contract', path: '', message: expect.any(String) }],
    });
    expect(validateEnvelope('x', 'auto').issues[0]?.code).toBe('unknown-contract');
  });

  it('an unknown dialect is unknown-contract, also for prototype keys', () => {
    for (const d of ['xml', '__proto__', 'toString']) {
      expect(validateEnvelope({ ok: true }, d as Dialect)).toMatchObject({ valid: false, issues: [{ code: 'unknown-contract' }] });
    }
  });

  it('reports the contract checked and the located issues', () => {
    expect(validateEnvelope({ ok: true }, 'auto')).toEqual({ valid: true, contract: 'mcec', issues: [] });
    expect(validateEnvelope({ ...DW, status: 'error' }, 'auto')).toEqual({
      valid: false,
      contract: 'dw',
      issues: [{ code: 'required', path: '/error', message: "must have required property 'error'", params: { missingProperty: 'error' } }],
    });
    expect(validateEnvelope({ ok: true }, 'dw').valid).toBe(false);
  });

  it('agrees with the oracle for every dialect on valid and mutated documents', () => {
    const any = fc.oneof(mcecDoc, dwDoc, contextosResultDoc, contextosCallDoc);
    const dialect = fc.constantFrom('mcec', 'dw', 'contextos', 'contextos-call', 'contextos-result', 'auto') as fc.Arbitrary<Dialect>;
    fc.assert(
      fc.property(fc.oneof(any, mutated(any)), dialect, (doc, d) => {
        const r = validateEnvelope(doc, d);
        const expected = d === 'auto' ? detectContract(doc) : d;
        expect(r.contract).toBe(expected);
        expect(r.valid).toBe(expected !== undefined && oracleValidate(expected, doc).valid);
        expect(r.issues.length === 0).toBe(r.valid);
      }),
      { numRuns: 500 },
    );
  });
});
