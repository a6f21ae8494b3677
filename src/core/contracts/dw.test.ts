import { describe, expect, it } from 'vitest';
import { conformanceSuite, expectInvalidEnvelope } from '../../../test/conformance.js';
import { dwDoc, toolOutcome } from '../../../test/arbitraries.js';
import type { Loss } from './registry.js';
import { DW_DEFAULT_PREVIEW_LIMIT_BYTES, DW_REASONS, DW_SCHEMA_ID, checkDw, decodeDw, encodeDw, inferDwCategory, validateDw } from './dw.js';
import { failure, success, toolError } from '../model.js';
import { createPreview } from '../preview.js';
import { ERROR_CATEGORIES } from '../taxonomy.js';

conformanceSuite({
  name: 'Durable Workflow',
  oracle: 'dw',
  docs: dwDoc,
  validate: validateDw,
  check: checkDw,
  decode: decodeDw,
  encode: (o) => encodeDw(o),
  canonical: toolOutcome,
  // DW is open at the top level, in error and in meta: adding or retyping an unknown key keeps it valid.
  minInvalidShare: 0.2,
});

const head = { schema: DW_SCHEMA_ID, version: 1 } as const;

describe('Durable Workflow: encode', () => {
  it('a success carries the result by reference and a 4096-byte preview', () => {
    const result = { rows: [1, 2, 3], name: 'é😀' };
    const doc = encodeDw(success(result));
    expect(doc.result).toBe(result);
    expect(doc).toStrictEqual({
      ...head,
      status: 'ok',
      result,
      payload_preview: JSON.stringify(result),
      payload_preview_truncated: false,
      payload_preview_limit_bytes: DW_DEFAULT_PREVIEW_LIMIT_BYTES,
    });
  });

  it('computes the preview with the given byte limit, cut on a character boundary', () => {
    const doc = encodeDw(success('ééééé'), { previewLimitBytes: 5 });
    expect(doc.payload_preview).toBe(createPreview('ééééé', 5).text);
    expect(doc.payload_preview).toBe('éé');
    expect(doc.payload_preview_truncated).toBe(true);
    expect(doc.payload_preview_limit_bytes).toBe(5);
  });

  it('emits a canonical preview as-is, and none when the preview is {}', () => {
    expect(encodeDw({ status: 'ok', result: 1, preview: { text: null, truncated: true, limitBytes: 7 } })).toStrictEqual({
      ...head,
      status: 'ok',
      result: 1,
      payload_preview: null,
      payload_preview_truncated: true,
      payload_preview_limit_bytes: 7,
    });
    expect(encodeDw({ status: 'ok', result: 1, preview: {} })).toStrictEqual({ ...head, status: 'ok', result: 1 });
  });

  it('fills code, reason, remediation and retryable from the category for errors not decoded from DW', () => {
    const doc = encodeDw(failure({ category: 'no-target', detail: 'No window.' }));
    expect(doc.error).toStrictEqual({
      code: 'no-target',
      message: 'No window.',
      reason: 'target_not_found',
      remediation: 'Broaden or discover the target, or wait for it to appear.',
      retryable: true,
      category: 'no-target',
    });
  });

  it('a failure status without an error writes error: null; the exact status rides in meta.status', () => {
    expect(encodeDw({ status: 'paused' })).toStrictEqual({ ...head, status: 'error', error: null, meta: { status: 'paused' } });
    expect(encodeDw({ status: 'completed', result: null, preview: {} })).toStrictEqual({
      ...head,
      status: 'ok',
      result: null,
      meta: { status: 'completed' },
    });
  });

  it('carries ids, latency, lists, warnings and metadata in meta and MCEC error fields in error, losing nothing', () => {
    const losses: Loss[] = [];
    const doc = encodeDw(
      {
        status: 'blocked',
        toolCallId: 'c',
        runId: 'r',
        traceId: 't',
        capabilityId: 'fs.write',
        sessionId: null,
        policyDecisionId: 'p',
        latencyMs: 3,
        artifacts: ['a'],
        citations: [{ u: 1 }],
        mutations: ['m'],
        riskTags: ['x'],
        metadata: { k: 1 },
        warnings: [{ code: 'w', detail: 'd' }],
        meta: { own: true },
        error: { ...toolError('elevation', 'policy-blocked', 'no'), retryAfterMs: 10, lastObservation: null, partialResult: { p: 1 } },
      },
      { losses },
    );
    expect(losses).toEqual([]);
    expect(doc.meta).toStrictEqual({
      own: true,
      status: 'blocked',
      session_id: null,
      tool_call_id: 'c',
      run_id: 'r',
      trace_id: 't',
      capability_id: 'fs.write',
      policy_decision_id: 'p',
      latency_ms: 3,
      artifacts: ['a'],
      citations: [{ u: 1 }],
      mutations: ['m'],
      risk_tags: ['x'],
      metadata: { k: 1 },
      warnings: [{ code: 'w', detail: 'd' }],
    });
    expect(doc.error).toMatchObject({ category: 'elevation', retry_after_ms: 10, last_observation: null, partial_result: { p: 1 } });
  });

  it('reports conflicts between carried fields and bags instead of overwriting silently', () => {
    const losses: Loss[] = [];
    const doc = encodeDw(
      {
        status: 'ok',
        runId: 'r',
        meta: { run_id: 5 },
        extensions: { status: 'x', custom: 1 },
        error: { category: 'focus', extensions: { code: 1, category: 'c' } },
        schemaVersion: 0,
      },
      { losses },
    );
    expect(validateDw(doc)).toBe(true);
    expect(losses.map((l) => `${l.path} ${l.code}`)).toEqual([
      '/schemaVersion not-representable',
      '/error/extensions/code key-conflict',
      '/error/extensions/category key-conflict',
      '/meta/run_id key-conflict',
      '/extensions/status key-conflict',
    ]);
    expect(doc.custom).toBe(1);
    expect(doc.meta).toEqual({ run_id: 'r' });
  });
});

describe('Durable Workflow: decode', () => {
  it('infers the category of an error without one, and round-trips it without gaining one', () => {
    const doc = { ...head, status: 'error', error: { code: 'request_timeout', message: 'slow' } };
    const o = decodeDw(doc);
    expect(o.error).toMatchObject({ category: 'timeout', categoryInferred: true, code: 'request_timeout', detail: 'slow' });
    expect(encodeDw(o)).toStrictEqual(doc);
  });

  it('keeps a stated category and lifts carried error keys only with their shape', () => {
    const o = decodeDw({
      ...head,
      status: 'error',
      error: { category: 'focus', retry_after_ms: 'soon', last_observation: { a: 1 }, x: 1 },
    });
    expect(o.error).toStrictEqual({
      category: 'focus',
      lastObservation: { a: 1 },
      extensions: { retry_after_ms: 'soon', x: 1 },
      verbatim: true,
    });
  });

  it('lifts meta keys only when exactly reversible', () => {
    const o = decodeDw({ ...head, status: 'ok', meta: { status: 'paused', run_id: 'r', latency_ms: 'x', session_id: null } });
    // paused cannot be an ok status: meta.status stays opaque.
    expect(o.status).toBe('ok');
    expect(o.runId).toBe('r');
    expect(o.sessionId).toBeNull();
    expect(o.meta).toStrictEqual({ status: 'paused', latency_ms: 'x' });
    expect(decodeDw({ ...head, status: 'error', error: null, meta: { status: 'paused' } }).status).toBe('paused');
    expect(decodeDw({ ...head, status: 'error', error: null, meta: { status: 'error' } }).meta).toEqual({ status: 'error' });
  });

  it('rejects invalid documents with located issues', () => {
    for (const doc of [null, [], 'x', 1]) expectInvalidEnvelope(decodeDw, doc);
    const err = expectInvalidEnvelope(decodeDw, { ...head, status: 'error' });
    expect(err.issues).toEqual([{ code: 'required', path: '/error', message: "must have required property 'error'", params: { missingProperty: 'error' } }]);
    expect(checkDw({ ...head, status: 'ok', error: { retryable: 'yes' }, content: [{}] }).map((i) => [i.code, i.path])).toEqual([
      ['type', '/error/retryable'],
      ['required', '/content/0/type'],
    ]);
  });
});

describe('Durable Workflow: category inference', () => {
  it.each([
    [{ code: 'request_timeout' }, 'timeout'],
    [{ code: 'deadline_exceeded' }, 'timeout'],
    [{ code: 'validation_failed' }, 'invalid-argument'],
    [{ code: 'invalid_input' }, 'invalid-argument'],
    [{ code: 'workflow_not_found' }, 'no-target'],
    [{ code: 'not-found' }, 'no-target'],
    [{ code: 'forbidden' }, 'elevation'],
    [{ code: 'unauthorized' }, 'elevation'],
    [{ reason: 'permission_denied' }, 'elevation'],
    [{ code: 'stale_handle' }, 'stale-element'],
    [{ code: 'boom' }, 'internal'],
    [{}, 'internal'],
    [{ code: 'x', message: 'Operation timed out' }, 'timeout'],
  ] as const)('%j → %s', (error, category) => {
    expect(inferDwCategory(error)).toBe(category);
  });

  it('a default reason maps back to its category exactly', () => {
    for (const c of ERROR_CATEGORIES) expect(inferDwCategory({ code: 'x', reason: DW_REASONS[c] })).toBe(c);
  });

  it('paused/rejected/blocked fall back to elevation', () => {
    expect(inferDwCategory({ code: 'x' }, 'paused')).toBe('elevation');
    expect(inferDwCategory({ code: 'x' }, 'failed')).toBe('internal');
  });

  it('round-trips every category through encode and decode', () => {
    for (const c of ERROR_CATEGORIES) {
      const o = decodeDw(encodeDw(failure(toolError(c, 'some-code', 'd'))));
      expect(o.error?.category).toBe(c);
      expect(o.error?.categoryInferred).toBeUndefined();
    }
  });
});
