import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RUNS } from '../../../test/conformance.js';
import { contextosCallDoc, contextosResultDoc, dw14Doc, dwDoc, mcec202607Doc, mcecDoc } from '../../../test/arbitraries.js';
import { oracleValidate } from '../../../test/oracle.js';
import { CONTRACT_IDS, type ContractId, convert, decode, encode } from './registry.js';
import { ToolEnvelopeError } from '../errors.js';
import type { JsonObject } from '../json.js';

const sources: Record<ContractId, fc.Arbitrary<JsonObject>> = {
  mcec: mcecDoc,
  dw: dwDoc,
  contextos: contextosResultDoc,
  'mcec@2026-07': mcec202607Doc,
  'dw@14': dw14Doc,
};
const oracleOf = { mcec: 'mcec', dw: 'dw', contextos: 'contextos-result', 'mcec@2026-07': 'mcec@2026-07', 'dw@14': 'dw@14' } as const;

describe('convert: all 25 pairs (the founding contracts and the revisions)', () => {
  for (const from of CONTRACT_IDS) {
    it(`from ${from}: every target validates under the oracle; same-contract is the identity without loss`, () => {
      fc.assert(
        fc.property(sources[from], (doc) => {
          for (const to of CONTRACT_IDS) {
            // A revision's document is often also a founding one: auto-detection names the founding one then.
            const r = convert(doc, from.includes('@') ? { to, from } : { to });
            expect(r.from).toBe(from);
            expect(r.to).toBe(to);
            expect(oracleValidate(oracleOf[to], r.document).errors).toEqual([]);
            for (const loss of r.losses) {
              expect(loss.path.startsWith('/')).toBe(true);
              expect(loss.code).toMatch(/^[a-z]+(-[a-z]+)*$/);
              expect(loss.reason.length).toBeGreaterThan(0);
            }
            if (to === from) {
              expect(r.document).toStrictEqual(doc);
              expect(r.losses).toEqual([]);
            }
          }
        }),
        RUNS,
      );
    });
  }
});

describe('convert: strict', () => {
  it('throws lossy-conversion exactly when the lenient conversion reports losses, with the losses as issues', () => {
    const anySource = fc.oneof(mcecDoc, dwDoc, contextosResultDoc);
    fc.assert(
      fc.property(anySource, fc.constantFrom(...CONTRACT_IDS), (doc, to) => {
        const lenient = convert(doc, { to });
        let thrown: unknown;
        try {
          expect(convert(doc, { to, strict: true })).toStrictEqual(lenient);
        } catch (e) {
          thrown = e;
        }
        expect(thrown === undefined).toBe(lenient.losses.length === 0);
        if (thrown !== undefined) {
          expect(thrown).toBeInstanceOf(ToolEnvelopeError);
          expect((thrown as ToolEnvelopeError).code).toBe('lossy-conversion');
          expect((thrown as ToolEnvelopeError).issues).toEqual(lenient.losses.map((l) => ({ code: l.code, path: l.path, message: l.reason })));
        }
      }),
      { numRuns: 300 },
    );
  });
});

const DW = { schema: 'durable-workflow.v2.mcp-tool-result', version: 1 } as const;
const CTX = {
  envelope_version: 'contextos.tool_result.v1',
  tool_call_id: 'c1',
  run_id: 'r1',
  trace_id: 't1',
  capability_id: 'fs.read',
  artifacts: [],
  citations: [],
  mutations: [],
  risk_tags: [],
  latency_ms: 7,
} as const;
const lossesOf = (doc: unknown, to: ContractId): string[] => convert(doc, { to }).losses.map((l) => `${l.path} ${l.code}`);

describe('convert: exact loss reports', () => {
  it('MCEC → DW loses nothing; MCEC → ContextOS loses only the required ids and latency', () => {
    const doc = {
      ok: false,
      sessionId: 's',
      warnings: [{ code: 'w', detail: 'd' }],
      error: { code: 'window-not-found', category: 'no-target', detail: 'No window', lastObservation: { t: 1 } },
    };
    expect(lossesOf(doc, 'dw')).toEqual([]);
    expect(convert(doc, { to: 'dw' }).document).toStrictEqual({
      ...DW,
      status: 'error',
      error: {
        code: 'window-not-found',
        message: 'No window',
        reason: 'target_not_found',
        remediation: 'Broaden or discover the target, or wait for it to appear.',
        retryable: true,
        category: 'no-target',
        last_observation: { t: 1 },
      },
      meta: { session_id: 's', warnings: [{ code: 'w', detail: 'd' }] },
    });
    expect(lossesOf(doc, 'contextos')).toEqual([
      '/toolCallId missing-required-id',
      '/runId missing-required-id',
      '/traceId missing-required-id',
      '/capabilityId missing-required-id',
      '/latencyMs missing-latency',
    ]);
  });

  it('DW → MCEC reports the status, the wrapped result and every uncarried field', () => {
    const doc = {
      ...DW,
      status: 'error',
      result: [1, 2],
      payload_preview: '[1,2]',
      error: { code: 'request_timeout', message: 'slow', retryable: true, details: { a: 1 }, trace: 'x' },
      meta: { status: 'failed', run_id: 'r', note: 1 },
      content: [{ type: 'text', text: 'slow' }],
      extra: true,
    };
    expect(lossesOf(doc, 'mcec')).toEqual([
      '/result wrapped-non-object',
      '/error/details not-representable',
      '/error/extensions/trace not-representable',
      '/status dropped-status',
      '/runId not-representable',
      '/preview not-representable',
      '/content not-representable',
      '/meta not-representable',
      '/extensions/extra not-representable',
    ]);
    expect(convert(doc, { to: 'mcec' }).document).toStrictEqual({
      ok: false,
      result: { value: [1, 2] },
      error: { code: 'request_timeout', category: 'timeout', detail: 'slow' },
    });
  });

  it('DW → ContextOS keeps everything in metadata', () => {
    const doc = { ...DW, status: 'ok', result: 'text', meta: { tool_call_id: 'c', run_id: 'r', trace_id: 't', capability_id: 'k', latency_ms: 5 } };
    const r = convert(doc, { to: 'contextos' });
    expect(r.losses).toEqual([]);
    expect(r.document).toStrictEqual({
      envelope_version: 'contextos.tool_result.v1',
      tool_call_id: 'c',
      run_id: 'r',
      trace_id: 't',
      capability_id: 'k',
      status: 'ok',
      output: { value: 'text' },
      artifacts: [],
      citations: [],
      mutations: [],
      risk_tags: [],
      latency_ms: 5,
      metadata: { output_wrapped: true },
    });
  });

  it('ContextOS → MCEC reports ids, latency, lists and metadata; → DW loses nothing', () => {
    const doc = {
      ...CTX,
      status: 'paused',
      output: {},
      risk_tags: ['write'],
      policy_decision_id: 'p1',
      metadata: { approval_url: 'u' },
    };
    expect(lossesOf(doc, 'mcec')).toEqual([
      '/error synthesized-error',
      '/status dropped-status',
      '/toolCallId not-representable',
      '/runId not-representable',
      '/traceId not-representable',
      '/capabilityId not-representable',
      '/policyDecisionId not-representable',
      '/latencyMs not-representable',
      '/riskTags not-representable',
      '/metadata not-representable',
    ]);
    expect(convert(doc, { to: 'mcec' }).document).toStrictEqual({
      ok: false,
      error: { code: 'approval-pending', category: 'elevation', detail: 'The call is waiting at an approval gate.' },
    });
    expect(lossesOf(doc, 'dw')).toEqual([]);
    const back = convert(convert(doc, { to: 'dw' }).document, { to: 'contextos' });
    expect(back.losses).toEqual([]);
    expect(back.document).toMatchObject({ ...doc, metadata: { approval_url: 'u' } });
  });

  it('strict conversion throws lossy-conversion with the losses as issues', () => {
    try {
      convert({ ok: true, result: {} }, { to: 'contextos', strict: true });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ToolEnvelopeError);
      const err = e as ToolEnvelopeError;
      expect(err.code).toBe('lossy-conversion');
      expect(err.issues[0]).toEqual({ code: 'missing-required-id', path: '/toolCallId', message: expect.any(String) });
      expect(err.issues).toHaveLength(5);
    }
  });

  it('passes the preview limit through', () => {
    const r = convert({ ok: true, result: { text: 'x'.repeat(100) } }, { to: 'dw', previewLimitBytes: 10 });
    expect(r.document).toMatchObject({ payload_preview: '{"text":"x', payload_preview_truncated: true, payload_preview_limit_bytes: 10 });
  });
});

describe('convert: errors and helpers', () => {
  it('an undetectable document or a call envelope is unknown-contract; an invalid one is invalid-envelope', () => {
    expect(() => convert({ hello: 1 }, { to: 'dw' })).toThrow(expect.objectContaining({ code: 'unknown-contract' }));
    expect(() => convert(null, { to: 'dw' })).toThrow(expect.objectContaining({ code: 'unknown-contract' }));
    expect(() => decode(fc.sample(contextosCallDoc, 1)[0])).toThrow(expect.objectContaining({ code: 'unknown-contract' }));
    expect(() => convert({ ok: false }, { to: 'dw' })).toThrow(expect.objectContaining({ code: 'invalid-envelope' }));
    expect(() => convert({ ok: true }, { to: 'dw', from: 'contextos' })).toThrow(expect.objectContaining({ code: 'invalid-envelope' }));
    expect(() => convert({ ok: true }, { to: 'xml' as ContractId })).toThrow(expect.objectContaining({ code: 'unknown-contract' }));
    expect(() => decode({ ok: true }, '__proto__' as ContractId)).toThrow(expect.objectContaining({ code: 'unknown-contract' }));
  });

  it('encode and decode go through the registry', () => {
    expect(encode({ status: 'ok', result: { a: 1 } }, 'mcec')).toStrictEqual({ ok: true, result: { a: 1 } });
    expect(decode({ ok: true, result: { a: 1 } })).toStrictEqual({ status: 'ok', result: { a: 1 } });
    expect(decode({ ok: true }, 'mcec').status).toBe('ok');
  });
});

describe('encoders and hostile input', () => {
  it('do not crash on non-JSON values inside an outcome', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const values: unknown[] = [10n, Number.NaN, Number.POSITIVE_INFINITY, () => 1, { u: undefined, f: () => 1 }, cyclic, [1n]];
    for (const result of values) {
      for (const to of CONTRACT_IDS) {
        const losses: { path: string; code: string }[] = [];
        expect(() => encode({ status: 'ok', result: result as never }, to, { losses: losses as never })).not.toThrow();
      }
    }
    const losses: { path: string; code: string; reason: string }[] = [];
    const doc = encode({ status: 'ok', result: { big: 1n } as never }, 'dw', { losses });
    expect('payload_preview' in doc).toBe(false);
    expect(losses).toEqual([{ path: '/preview', code: 'not-representable', reason: expect.stringContaining('BigInt') }]);
  });

  it('keeps __proto__ and constructor keys from parsed documents as data through every conversion', () => {
    const text =
      '{"schema":"durable-workflow.v2.mcp-tool-result","version":1,"status":"error","__proto__":{"polluted":1},' +
      '"result":{"__proto__":{"polluted":2},"constructor":{"prototype":1}},' +
      '"error":{"code":"x","__proto__":{"polluted":3}},"meta":{"__proto__":{"polluted":4},"run_id":"r"}}';
    const doc = JSON.parse(text);
    expect(convert(doc, { to: 'dw' }).document).toStrictEqual(doc);
    for (const to of CONTRACT_IDS) {
      const out = convert(doc, { to }).document;
      expect(JSON.stringify(out)).toContain('"__proto__":{"polluted":2}');
    }
    const ctx = convert(doc, { to: 'contextos' }).document;
    const back = convert(ctx, { to: 'dw' }).document as Record<string, unknown>;
    for (const key of ['__proto__', 'result']) {
      expect(Object.getOwnPropertyDescriptor(back, key)?.value, key).toStrictEqual(doc[key]);
    }
    // meta also gained the ContextOS required fields (empty ids, latency 0, empty lists).
    expect(Object.getOwnPropertyDescriptor(back.meta, '__proto__')?.value).toEqual({ polluted: 4 });
    expect(back.meta).toMatchObject({ run_id: 'r', tool_call_id: '', latency_ms: 0 });
    // The error gained the DW defaults on the way (it no longer comes from DW), and kept its own keys.
    expect(back.error).toMatchObject({ code: 'x', reason: 'internal_error' });
    expect(Object.getOwnPropertyDescriptor(back.error, '__proto__')?.value).toEqual({ polluted: 3 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(decode(doc).extensions)).toBe(Object.prototype);
    expect(Object.keys(decode(doc).extensions!)).toEqual(['__proto__']);
  });
});
