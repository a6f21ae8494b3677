import { describe, expect, it } from 'vitest';
import type { ToolCall, ToolOutcome } from 'tool-envelope/core';
import { asThisCall, copyOutcome, stamped } from './pipeline-outcomes.js';

const call = {
  toolCallId: 'c-1',
  runId: 'r-1',
  traceId: '0af7651916cd43dd8448eb211c80319c',
  capabilityId: 'fs.read',
  policyDecisionId: 'pd-1',
  sessionId: 's-1',
} as ToolCall;

describe('copyOutcome', () => {
  it('is what a spread gives: the same keys in the same order, a new object', () => {
    const outcome = { status: 'ok', result: { n: 1 }, content: [{ type: 'text', text: '1' }], latencyMs: 3 } as ToolOutcome;
    const copy = copyOutcome(outcome);
    expect(copy).not.toBe(outcome);
    expect(copy).toEqual({ ...outcome });
    expect(Object.keys(copy)).toEqual(Object.keys({ ...outcome }));
    expect(copy.result).toBe(outcome.result);
  });

  it('keeps an own __proto__ key (JSON of a stored row) as data, never as the prototype', () => {
    const hostile = JSON.parse('{"status":"ok","result":{},"__proto__":{"polluted":true}}') as ToolOutcome;
    const copy = copyOutcome(hostile);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as unknown as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.hasOwn(copy, '__proto__')).toBe(true);
    expect(JSON.stringify(copy)).toBe(JSON.stringify({ ...hostile }));
  });
});

describe('stamped and asThisCall', () => {
  it('give the keys and order the spreads they replace gave', () => {
    const outcome = { status: 'ok', result: { n: 1 } } as ToolOutcome;
    const s = stamped(outcome, call);
    const spread = {
      ...outcome,
      toolCallId: call.toolCallId,
      runId: call.runId,
      traceId: call.traceId,
      capabilityId: call.capabilityId,
      policyDecisionId: call.policyDecisionId,
      sessionId: call.sessionId,
    };
    expect(JSON.stringify(s)).toBe(JSON.stringify(spread));
    expect(outcome).toEqual({ status: 'ok', result: { n: 1 } });
    const stored = { status: 'ok', result: { n: 2 }, toolCallId: 'old', latencyMs: 9 } as ToolOutcome;
    const replayed = asThisCall(stored, call, 4);
    expect(JSON.stringify(replayed)).toBe(
      JSON.stringify({
        ...stored,
        toolCallId: call.toolCallId,
        runId: call.runId,
        traceId: call.traceId,
        policyDecisionId: call.policyDecisionId,
        latencyMs: 4,
        sessionId: call.sessionId,
      }),
    );
  });
});
