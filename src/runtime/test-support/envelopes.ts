// Test helper: encode an outcome in all three contracts and validate each with the oracle.
import { expect } from 'vitest';
import { encodeContextosResult } from '../../core/contracts/contextos.js';
import { encodeDw } from '../../core/contracts/dw.js';
import { encodeMcec } from '../../core/contracts/mcec.js';
import type { ToolOutcome } from '../../core/model.js';
import { oracleValidate } from '../../../test/oracle.js';

/** The three wire documents of an outcome, each asserted valid against the published schemas (the oracle). */
export function expectValidEnvelopes(outcome: ToolOutcome): {
  mcec: ReturnType<typeof encodeMcec>;
  dw: ReturnType<typeof encodeDw>;
  contextos: ReturnType<typeof encodeContextosResult>;
} {
  const mcec = encodeMcec(outcome);
  const dw = encodeDw(outcome);
  const contextos = encodeContextosResult(outcome);
  for (const [name, contract, doc] of [
    ['MCEC', 'mcec', mcec],
    ['Durable Workflow', 'dw', dw],
    ['ContextOS result', 'contextos-result', contextos],
  ] as const) {
    const r = oracleValidate(contract, doc);
    expect(r.errors, `${name} envelope must validate`).toEqual([]);
    expect(r.valid).toBe(true);
  }
  return { mcec, dw, contextos };
}
