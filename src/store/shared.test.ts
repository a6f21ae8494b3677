import { describe, expect, it } from 'vitest';
import { auditFromValues, auditRowValues, freezeAuditRecord } from './shared.js';
import { makeAudit } from './test-support/store-suite.js';
import type { JsonValue } from '../core/index.js';
import type { AuditRecord } from './types.js';

const bodyOf = (r: AuditRecord): unknown[] => JSON.parse(auditRowValues(r, (b) => b)[15] as string) as unknown[];

describe('audit body', () => {
  const chain: AuditRecord['principalChain'] = [{ kind: 'user', id: 'u1' }];
  const result = { rows: [1, 2, 3], note: 'x'.repeat(100) };
  const shared = (): AuditRecord => {
    const c = structuredClone(chain);
    const res = structuredClone(result);
    return makeAudit({
      callEnvelope: { principal_chain: c as unknown as JsonValue, args: {} },
      resultEnvelope: { status: 'ok', output: res },
      outcome: { status: 'ok', result: res, latencyMs: 1 },
      principalChain: c,
    });
  };

  it('writes a chain and a result the record holds twice once, and reads them back', () => {
    const r = shared();
    const body = bodyOf(r);
    expect(body).toHaveLength(6);
    expect(body[3]).toBe(0);
    expect(body[2]).toEqual({ status: 'ok', result: 0, latencyMs: 1 });
    expect(body[5]).toBe(3);
    expect(JSON.stringify(body).split('x'.repeat(100)).length - 1).toBe(1);
    const back = auditFromValues(auditRowValues(r, (b) => b));
    expect(back).toEqual(r);
    expect(back.principalChain).toBe(back.callEnvelope.principal_chain);
    expect(back.outcome.result).toBe(back.resultEnvelope.output);
  });

  it('writes equal documents that are separate objects in full, as five elements', () => {
    const r = makeAudit({
      callEnvelope: { principal_chain: structuredClone(chain) as unknown as JsonValue },
      resultEnvelope: { output: structuredClone(result) },
      outcome: { status: 'ok', result: structuredClone(result) },
      principalChain: structuredClone(chain),
    });
    const body = bodyOf(r);
    expect(body).toHaveLength(5);
    expect(body[3]).toEqual(chain);
    expect(auditFromValues(auditRowValues(r, (b) => b))).toEqual(r);
  });

  it('does not share documents through a toJSON, which could answer differently under each key', () => {
    const odd = Object.assign([...chain], { toJSON: (key: string) => (key === 'principal_chain' ? 'a' : 'b') });
    const r = makeAudit({ callEnvelope: { principal_chain: odd as unknown as JsonValue }, principalChain: odd as unknown as AuditRecord['principalChain'] });
    const body = bodyOf(r);
    expect(body).toHaveLength(5);
    expect(body[0]).toEqual({ principal_chain: 'a' });
    expect(body[3]).toBe('b');
  });

  it('keeps what was shared when the record is frozen, and later changes out of it', () => {
    const r = freezeAuditRecord(shared());
    (r.outcome.result as { rows: number[] }).rows.push(4);
    const back = auditFromValues(auditRowValues(r, (b) => b));
    expect(back.outcome.result).toEqual(result);
    expect(back.resultEnvelope.output).toEqual(result);
  });
});
