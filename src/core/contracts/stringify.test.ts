import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonValue, toolOutcome } from '../../../test/arbitraries.js';
import { oracleValidate } from '../../../test/oracle.js';
import { CONTRACT_IDS, type Loss, contracts, stringifyEnvelope } from './registry.js';
import { encodeDw, encodeDwJson } from './dw.js';
import { isToolEnvelopeError } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { ToolOutcome } from '../model.js';
import { success } from '../model.js';

/** Outcomes without a canonical preview half of the time, so that the DW preview is computed from the result. */
const outcome: fc.Arbitrary<ToolOutcome> = fc.tuple(toolOutcome, fc.boolean(), fc.option(jsonValue, { nil: undefined })).map(([o, dropPreview, result]) => {
  const { preview, ...rest } = o;
  const out: ToolOutcome = dropPreview ? rest : { ...rest, ...(preview ? { preview } : {}) };
  if (result !== undefined) out.result = result;
  return out;
});
const limit = fc.oneof(fc.constant(undefined), fc.nat({ max: 64 }), fc.constant(4096));
const oracleOf = { mcec: 'mcec', dw: 'dw', contextos: 'contextos-result', 'mcec@2026-07': 'mcec@2026-07', 'dw@14': 'dw@14' } as const;

describe('stringifyEnvelope', () => {
  it('writes exactly JSON.stringify(encode(outcome)), with the same losses, for every contract', () => {
    fc.assert(
      fc.property(outcome, limit, fc.constantFrom(...CONTRACT_IDS), (o, previewLimitBytes, contract) => {
        const expectedLosses: Loss[] = [];
        const expected = JSON.stringify(contracts[contract].encode(o, { losses: expectedLosses, previewLimitBytes }));
        const losses: Loss[] = [];
        const text = stringifyEnvelope(o, contract, { losses, previewLimitBytes });
        expect(text).toBe(expected);
        expect(losses).toEqual(expectedLosses);
        expect(oracleValidate(oracleOf[contract], JSON.parse(text)).errors).toEqual([]);
      }),
      { numRuns: 1500 },
    );
  });

  it('DW: splices the result once and cuts the preview from its text, small and truncated alike', () => {
    const rows = Array.from({ length: 400 }, (_, i) => ({ id: i, note: 'ünïcödé 😀 "quoted"' }));
    for (const previewLimitBytes of [0, 1, 7, 100, 4096, 1e6]) {
      for (const result of [rows, { rows }, 42, null, true, [], {}, 'a string result 😀'] as JsonValue[]) {
        const o = success(result);
        expect(encodeDwJson(o, { previewLimitBytes })).toBe(JSON.stringify(encodeDw(o, { previewLimitBytes })));
      }
    }
  });

  it('DW: a result with its own toJSON, a BigInt or a cycle behaves exactly as encodeDw then JSON.stringify', () => {
    const withToJson = { toJSON: (key: string) => ({ key }) } as unknown as JsonValue;
    expect(encodeDwJson(success(withToJson))).toBe(JSON.stringify(encodeDw(success(withToJson))));
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const bad of [{ n: 1n }, cyclic]) {
      const o = success(bad as unknown as JsonValue);
      expect(() => JSON.stringify(encodeDw(o))).toThrow(TypeError);
      expect(() => encodeDwJson(o)).toThrow(TypeError);
    }
  });

  it('rejects an unknown contract with a typed error, and a bad preview limit as encodeDw does', () => {
    let thrown: unknown;
    try {
      stringifyEnvelope(success(1), 'json' as never);
    } catch (e) {
      thrown = e;
    }
    expect(isToolEnvelopeError(thrown, 'unknown-contract')).toBe(true);
    expect(() => encodeDwJson(success({ a: 1 }), { previewLimitBytes: -1 })).toThrow(/limitBytes/);
    expect(() => encodeDw(success({ a: 1 }), { previewLimitBytes: -1 })).toThrow(/limitBytes/);
  });
});
