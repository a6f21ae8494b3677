import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RUNS, conformanceSuite, expectInvalidEnvelope } from '../../../test/conformance.js';
import { contextosCallDoc, contextosResultDoc, mutated, toolCall, toolOutcome } from '../../../test/arbitraries.js';
import { oracleValidate } from '../../../test/oracle.js';
import type { Loss } from './registry.js';
import {
  checkContextos,
  checkContextosCall,
  checkContextosResult,
  decodeContextosCall,
  decodeContextosResult,
  encodeContextosCall,
  encodeContextosResult,
  validateContextos,
  validateContextosCall,
  validateContextosResult,
} from './contextos.js';
import { failure, success, toolError } from '../model.js';

conformanceSuite({
  name: 'ContextOS result',
  oracle: 'contextos-result',
  docs: contextosResultDoc,
  validate: validateContextosResult,
  check: checkContextosResult,
  decode: decodeContextosResult,
  encode: (o) => encodeContextosResult(o),
  canonical: toolOutcome,
});

conformanceSuite({
  name: 'ContextOS call',
  oracle: 'contextos-call',
  docs: contextosCallDoc,
  validate: validateContextosCall,
  check: checkContextosCall,
  decode: decodeContextosCall,
  encode: encodeContextosCall,
  canonical: toolCall,
});

describe('ContextOS union (whole schema)', () => {
  const either = fc.oneof(contextosCallDoc, contextosResultDoc);
  it('validateContextos and checkContextos agree with the oracle on valid and mutated documents', () => {
    fc.assert(
      fc.property(fc.oneof(either, mutated(either)), (doc) => {
        const oracle = oracleValidate('contextos', doc).valid;
        expect(validateContextos(doc)).toBe(oracle);
        expect(checkContextos(doc).length === 0).toBe(oracle);
      }),
      RUNS,
    );
  });

  it('reports the issues of the envelope the marker names', () => {
    const issues = checkContextos({ envelope_version: 'contextos.tool_call.v1', tool_call_id: 1 });
    expect(issues.some((i) => i.code === 'anyOf')).toBe(false);
    expect(issues).toContainEqual(expect.objectContaining({ code: 'type', path: '/tool_call_id' }));
    expect(issues).toContainEqual(expect.objectContaining({ code: 'required', path: '/principal_chain' }));
    expect(checkContextos({}).some((i) => i.code === 'anyOf')).toBe(true);
  });
});

const ids = { toolCallId: 'c1', runId: 'r1', traceId: 't1', capabilityId: 'fs.read', latencyMs: 12 };
const wireIds = { tool_call_id: 'c1', run_id: 'r1', trace_id: 't1', capability_id: 'fs.read', latency_ms: 12 };
const lists = { artifacts: [], citations: [], mutations: [], risk_tags: [] };
const V = 'contextos.tool_result.v1';

describe('ContextOS result: encode', () => {
  it('a success with ids loses nothing and references the result as output', () => {
    const losses: Loss[] = [];
    const result = { n: 1 };
    const doc = encodeContextosResult(success(result, ids), { losses });
    expect(doc).toStrictEqual({ envelope_version: V, ...wireIds, status: 'ok', output: result, ...lists });
    expect(doc.output).toBe(result);
    expect(losses).toEqual([]);
  });

  it('fills missing ids with "" and latency with 0, reporting each', () => {
    const losses: Loss[] = [];
    const doc = encodeContextosResult({ status: 'ok' }, { losses });
    expect(oracleValidate('contextos-result', doc).valid).toBe(true);
    expect(doc).toMatchObject({ tool_call_id: '', run_id: '', trace_id: '', capability_id: '', latency_ms: 0, output: {} });
    expect(losses.map((l) => `${l.path} ${l.code}`)).toEqual([
      '/toolCallId missing-required-id',
      '/runId missing-required-id',
      '/traceId missing-required-id',
      '/capabilityId missing-required-id',
      '/latencyMs missing-latency',
    ]);
  });

  it('rounds a non-integer latency and reports it', () => {
    const losses: Loss[] = [];
    expect(encodeContextosResult({ ...ids, status: 'ok', latencyMs: 2.6 }, { losses }).latency_ms).toBe(3);
    expect(encodeContextosResult({ ...ids, status: 'ok', latencyMs: Number.NaN }, { losses }).latency_ms).toBe(0);
    expect(losses.map((l) => l.code)).toEqual(['not-representable', 'not-representable']);
  });

  it('wraps a non-object result reversibly, with no loss', () => {
    const losses: Loss[] = [];
    const doc = encodeContextosResult(success([1, 'two'], ids), { losses });
    expect(doc.output).toEqual({ value: [1, 'two'] });
    expect(doc.metadata).toEqual({ output_wrapped: true });
    expect(losses).toEqual([]);
    expect(decodeContextosResult(doc).result).toEqual([1, 'two']);
  });

  it('puts the detail in error and the structured fields in metadata.error', () => {
    const e = toolError('timeout', 'wait-timeout', 'Waited 5 s', { lastObservation: { t: 1 }, retryAfterMs: 500 });
    const doc = encodeContextosResult(failure(e, { ...ids, warnings: [{ code: 'w', detail: 'd' }] }));
    expect(doc.error).toBe('Waited 5 s');
    expect(doc.output).toEqual({});
    expect(doc.metadata).toStrictEqual({
      error: { category: 'timeout', code: 'wait-timeout', retryable: true, retry_after_ms: 500, last_observation: { t: 1 } },
      warnings: [{ code: 'w', detail: 'd' }],
    });
    const back = decodeContextosResult(doc);
    expect(back.error).toStrictEqual(e);
    expect(back.result).toBeUndefined();
  });

  it('carries the DW specifics in metadata', () => {
    const losses: Loss[] = [];
    const doc = encodeContextosResult(
      {
        ...ids,
        status: 'ok',
        preview: { text: 'x', truncated: false, limitBytes: 4 },
        content: [{ type: 'text', text: 'x' }],
        schemaVersion: 2,
        meta: { m: 1 },
        extensions: { e: 1 },
      },
      { losses },
    );
    expect(losses).toEqual([]);
    expect(doc.metadata).toStrictEqual({
      preview: { text: 'x', truncated: false, limit_bytes: 4 },
      content: [{ type: 'text', text: 'x' }],
      schema_version: 2,
      meta: { m: 1 },
      extensions: { e: 1 },
    });
  });

  it('a null session id is written as absent (same meaning), an explicit null error stays null', () => {
    const doc = encodeContextosResult({ ...ids, status: 'failed', sessionId: null, error: null });
    expect('session_id' in doc).toBe(false);
    expect(doc.error).toBeNull();
  });
});

describe('ContextOS result: decode', () => {
  const base = { envelope_version: V, ...wireIds, output: {}, ...lists };

  it('an error string without metadata.error gets an inferred category', () => {
    const o = decodeContextosResult({ ...base, status: 'blocked', error: 'denied by policy p-1' });
    expect(o.error).toStrictEqual({ category: 'elevation', categoryInferred: true, detail: 'denied by policy p-1' });
    expect(decodeContextosResult({ ...base, status: 'failed', error: 'connect timed out' }).error?.category).toBe('timeout');
  });

  it('metadata keys with other shapes stay opaque metadata', () => {
    const doc = {
      ...base,
      status: 'ok',
      output: { value: { nested: true } },
      metadata: { error: 'oops', warnings: [{ code: 'w' }], output_wrapped: true, preview: {}, schema_version: '2' },
    };
    const o = decodeContextosResult(doc);
    expect(o.error).toBeUndefined();
    expect(o.warnings).toBeUndefined();
    expect(o.result).toEqual({ value: { nested: true } });
    expect(o.metadata).toStrictEqual(doc.metadata);
    expect(encodeContextosResult(o)).toStrictEqual(doc);
  });

  it('an empty output is no result for a failure and {} for a success', () => {
    expect(decodeContextosResult({ ...base, status: 'failed' }).result).toBeUndefined();
    expect(decodeContextosResult({ ...base, status: 'completed' }).result).toEqual({});
  });

  it('rejects invalid documents with located issues', () => {
    for (const doc of [null, [], 'x', 0]) expectInvalidEnvelope(decodeContextosResult, doc);
    const err = expectInvalidEnvelope(decodeContextosResult, { ...base, status: 'done', latency_ms: -1, extra: 1 });
    expect(err.issues.map((i) => [i.code, i.path])).toEqual([
      ['additionalProperties', '/extra'],
      ['enum', '/status'],
      ['minimum', '/latency_ms'],
    ]);
    expectInvalidEnvelope(decodeContextosCall, { ...base, status: 'ok' });
  });
});

describe('ContextOS call', () => {
  it('maps every field one to one', () => {
    const call = {
      toolCallId: 'c',
      runId: 'r',
      traceId: 't',
      sessionId: 's',
      capabilityId: 'fs.write',
      args: { path: 'a' },
      principalChain: [
        { kind: 'user' as const, id: 'u', tenant_id: 'acme' },
        { kind: 'agent' as const, id: 'a' },
      ],
      approvalModeRequested: 'local_write' as const,
      approvalModeEffective: 'local_write' as const,
      approvalModeHighest: 'destructive' as const,
      policyDecisionId: null,
      evidenceRefs: ['e'],
      idempotencyKey: 'k',
      authRef: null,
      metadata: { m: 1 },
    };
    const doc = encodeContextosCall(call);
    expect(doc).toStrictEqual({
      envelope_version: 'contextos.tool_call.v1',
      tool_call_id: 'c',
      run_id: 'r',
      trace_id: 't',
      session_id: 's',
      capability_id: 'fs.write',
      args: { path: 'a' },
      principal_chain: call.principalChain,
      approval_mode_requested: 'local_write',
      approval_mode_effective: 'local_write',
      approval_mode_highest: 'destructive',
      policy_decision_id: null,
      evidence_refs: ['e'],
      idempotency_key: 'k',
      auth_ref: null,
      metadata: { m: 1 },
    });
    expect(decodeContextosCall(doc)).toStrictEqual(call);
  });
});
