import { describe, expect, it } from 'vitest';
import { auditFromValues, auditRowValues } from './rows.js';
import { documentsOf, freezeAuditRecord } from './audit-body.js';
import { startedAuditRecord } from './started-record.js';
import { createRedactor } from './redact.js';
import { interruptedDocuments } from './started-record.js';
import { ToolEnvelopeError } from '../core/index.js';
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

  describe('started records', () => {
    const started = (over: Partial<AuditRecord> = {}): AuditRecord => {
      const base = makeAudit({ sessionId: 'sess-1', ...over });
      return startedAuditRecord({ ...base, callEnvelope: { args: { path: '/x' }, principal_chain: base.principalChain as unknown as JsonValue } });
    };
    const asRead = (r: AuditRecord): AuditRecord => ({ ...r, status: 'interrupted' });

    it('leave out their result envelope and outcome, which a read rebuilds from the columns', () => {
      const r = started();
      const body = bodyOf(r);
      expect(body.slice(1, 3)).toEqual([0, 0]);
      expect(body[5]).toBe(4 | 1);
      expect(JSON.stringify(body)).not.toContain('no outcome was recorded');
      const back = auditFromValues(auditRowValues(r, (b) => b));
      expect(back).toEqual(asRead(r));
      expect(back.outcome).toEqual({ ...interruptedDocuments(r).outcome });
      expect(back.resultEnvelope.status).toBe('error');
      // The rebuilt documents are the reader's own, not the frozen ones of the record.
      expect(Object.isFrozen(back.outcome)).toBe(false);
      expect(Object.isFrozen(r.outcome)).toBe(true);
    });

    it('are written in full when their columns no longer match their documents, or the documents are not the ones made for them', () => {
      const moved = started();
      const first = moved.toolCallId;
      moved.toolCallId = 'another-call';
      expect(bodyOf(moved)[1]).not.toBe(0);
      const back = auditFromValues(auditRowValues(moved, (b) => b));
      expect(back.outcome.toolCallId).toBe(first);
      expect(back.toolCallId).toBe('another-call');
      const own = { ...started(), outcome: { status: 'error', note: 'mine' }, resultEnvelope: { status: 'error' } } as AuditRecord;
      expect(bodyOf(own)[2]).toEqual({ status: 'error', note: 'mine' });
      expect(auditFromValues(auditRowValues(own, (b) => b))).toEqual(asRead(own));
      const session = started();
      session.sessionId = null;
      expect(bodyOf(session)[1]).not.toBe(0);
    });

    it('refuse to be read without their columns', () => {
      const body = auditRowValues(started(), (b) => b)[15];
      expect(() => documentsOf(body)).toThrow(ToolEnvelopeError);
      expect(() => documentsOf(body)).toThrow(/columns/);
    });

    it('stay lean when a secret in their arguments is redacted', () => {
      const r = started();
      (r.callEnvelope.args as Record<string, JsonValue>).password = 'hunter2-hunter2';
      const stored = createRedactor()(r);
      expect(stored.redaction).toEqual({ pointers: ['/callEnvelope/args/password'] });
      const body = bodyOf(stored);
      expect(body.slice(1, 3)).toEqual([0, 0]);
      expect(JSON.stringify(body)).not.toContain('hunter2');
      const back = auditFromValues(auditRowValues(stored, (b) => b));
      expect(back.callEnvelope.args).toEqual({ path: '/x', password: '[REDACTED]' });
      expect(back.outcome).toEqual(r.outcome);
      expect(back.redaction).toEqual(stored.redaction);
      // The caller's record keeps the real value.
      expect((r.callEnvelope.args as Record<string, JsonValue>).password).toBe('hunter2-hunter2');
    });
  });
});
