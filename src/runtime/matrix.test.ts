// The handler matrix: whatever a handler does, the outcome is right and its
// envelope validates in all three contracts against the published schemas (test/oracle.ts).
import { describe, expect, it } from 'vitest';
import type { ToolCall } from '../core/model.js';
import { ToolFailure } from '../core/classify.js';
import { type ToolHandler, defineTool } from './define.js';
import { createRuntime } from './runtime.js';
import { expectValidEnvelopes } from './test-support/envelopes.js';

const DEADLINE = 100;

function runtimeWith(handler: ToolHandler, riskTags: string[] = []) {
  const tool = defineTool({ name: 'subject', description: 'matrix subject', approvalMode: 'local_write', riskTags, handler });
  return createRuntime({ tools: [tool], defaultTimeoutMs: DEADLINE });
}

async function run(handler: ToolHandler, options?: Parameters<ReturnType<typeof createRuntime>['invoke']>[2]) {
  const outcome = await runtimeWith(handler).invoke('subject', {}, options);
  const docs = expectValidEnvelopes(outcome);
  expect(docs.contextos.capability_id).toBe('subject');
  expect(Number.isInteger(docs.contextos.latency_ms)).toBe(true);
  return { outcome, ...docs };
}

describe('handler matrix: the outcome and all three envelopes', () => {
  it('returns a value', async () => {
    const { outcome, mcec, dw, contextos } = await run(async () => ({ rows: [1, 2, 3] }));
    expect(outcome).toMatchObject({ status: 'ok', result: { rows: [1, 2, 3] } });
    expect(outcome.error).toBeUndefined();
    expect(mcec).toEqual({ ok: true, result: { rows: [1, 2, 3] } });
    expect(dw).toMatchObject({ status: 'ok', result: { rows: [1, 2, 3] }, payload_preview: '{"rows":[1,2,3]}' });
    expect(contextos).toMatchObject({ status: 'ok', output: { rows: [1, 2, 3] } });
  });

  it('returns undefined: a null result, no warning', async () => {
    const { outcome, mcec } = await run(async () => undefined);
    expect(outcome.status).toBe('ok');
    expect(outcome.result).toBeNull();
    expect(outcome.warnings).toBeUndefined();
    expect(mcec).toEqual({ ok: true, result: null });
  });

  it('throws a typed failure: kept exactly', async () => {
    const { outcome, mcec, dw, contextos } = await run(async () => {
      throw new ToolFailure({
        category: 'no-target',
        code: 'window-not-found',
        detail: 'No window titled "Report".',
        remediation: 'Open the report first.',
        retryAfterMs: 250,
        details: { title: 'Report' },
      });
    });
    expect(outcome.error).toEqual({
      category: 'no-target',
      code: 'window-not-found',
      detail: 'No window titled "Report".',
      remediation: 'Open the report first.',
      retryable: true,
      retryAfterMs: 250,
      details: { title: 'Report' },
    });
    expect(mcec.error).toEqual({ category: 'no-target', code: 'window-not-found', detail: 'No window titled "Report".' });
    expect(dw.error).toMatchObject({ code: 'window-not-found', message: 'No window titled "Report".', retryable: true, remediation: 'Open the report first.' });
    expect(contextos).toMatchObject({ status: 'error', error: 'No window titled "Report".' });
  });

  it('ctx.fail() is the same as throwing a ToolFailure', async () => {
    const { outcome } = await run(async (_a, ctx) => ctx.fail({ category: 'focus', code: 'no-focus', detail: 'Nothing focused.' }));
    expect(outcome.error).toMatchObject({ category: 'focus', code: 'no-focus', retryable: true });
  });

  it('throws an Error: internal, no stack, no path', async () => {
    const { outcome, mcec } = await run(async () => {
      throw new TypeError("Cannot read '/srv/app/config.json'");
    });
    expect(outcome.error).toMatchObject({ category: 'internal', code: 'unhandled-exception', retryable: false });
    expect(mcec.error!.detail).toBe("Unhandled TypeError: Cannot read '<path>'");
    expect(JSON.stringify(outcome)).not.toMatch(/\.ts:\d+|\bat .*\(/);
  });

  it('throws synchronously (a non-async handler)', async () => {
    const { outcome } = await run(() => {
      throw new RangeError('bad');
    });
    expect(outcome.error).toMatchObject({ category: 'internal', detail: 'Unhandled RangeError: bad' });
  });

  it.each([
    ['a string', 'disk on fire', 'The tool threw a string: disk on fire'],
    ['a number', 42, 'The tool threw a number: 42'],
    ['null', null, 'The tool threw null'],
    ['undefined', undefined, 'The tool threw undefined'],
  ])('throws %s', async (_label, thrown, detail) => {
    const { outcome, mcec } = await run(async () => {
      throw thrown;
    });
    expect(outcome.error).toMatchObject({ category: 'internal', code: 'non-error-thrown', detail });
    expect(mcec.ok).toBe(false);
  });

  it('resolves after the deadline: timeout, and the late result is discarded', async () => {
    let lateResolved = false;
    const { outcome, mcec, dw } = await run(async () => {
      await new Promise((r) => setTimeout(r, DEADLINE * 3));
      lateResolved = true;
      return { late: true };
    });
    expect(outcome.error).toMatchObject({ category: 'timeout', code: 'deadline-exceeded', retryable: true });
    expect(outcome.result).toBeUndefined();
    expect(outcome.latencyMs).toBeGreaterThanOrEqual(DEADLINE - 1);
    expect(mcec.error!.category).toBe('timeout');
    expect(dw.status).toBe('error');
    await new Promise((r) => setTimeout(r, DEADLINE * 3));
    expect(lateResolved).toBe(true);
    expect(outcome.status).toBe('error'); // the late value changed nothing
  });

  it('never settles: the envelope still arrives on time', async () => {
    const t0 = performance.now();
    const { outcome } = await run(() => new Promise(() => {}));
    const took = performance.now() - t0;
    expect(outcome.error).toMatchObject({ category: 'timeout', code: 'deadline-exceeded' });
    expect(took).toBeGreaterThanOrEqual(DEADLINE - 1);
    expect(took).toBeLessThan(DEADLINE + 1000);
  });

  it('is aborted by the caller: cancelled, and the handler sees the abort', async () => {
    const ac = new AbortController();
    let sawAbort: unknown;
    const pending = run(
      (_a, ctx) =>
        new Promise((_, reject) => {
          ctx.signal.addEventListener('abort', () => {
            sawAbort = ctx.signal.reason;
            reject(ctx.signal.reason);
          });
        }),
      { signal: ac.signal, timeoutMs: 10_000 },
    );
    setTimeout(() => ac.abort(new Error('user pressed stop')), 10);
    const { outcome } = await pending;
    expect(outcome.error).toMatchObject({ category: 'timeout', code: 'cancelled', retryable: true });
    expect((sawAbort as Error).message).toBe('user pressed stop');
  });

  it('returns circular data: internal result-not-json-safe, never a crash', async () => {
    const { outcome } = await run(async () => {
      const a: Record<string, unknown> = { name: 'a' };
      a.self = a;
      return a;
    });
    expect(outcome.error).toMatchObject({ category: 'internal', code: 'result-not-json-safe' });
    expect(outcome.error!.detail).toContain('/self');
  });

  it('returns a value nested too deep: internal result-too-deep, never a stack overflow', async () => {
    const { outcome } = await run(async () => {
      let v: unknown = { leaf: true };
      for (let i = 0; i < 100_000; i++) v = { v };
      return v;
    });
    expect(outcome.error).toMatchObject({ category: 'internal', code: 'result-too-deep' });
  });

  it('keeps a partial result that is not JSON-safe out, with a warning, and still fails cleanly', async () => {
    const { outcome } = await run(async (_a, ctx) => {
      const cyclic: Record<string, unknown> = {};
      cyclic.me = cyclic;
      ctx.keepPartial(cyclic);
      throw new Error('x');
    });
    expect(outcome.error?.partialResult).toBeUndefined();
    expect(outcome.warnings?.[0]?.code).toBe('partial-result-dropped');
  });

  it('returns a hostile thenable or a value with a throwing getter: still an outcome', async () => {
    const thenable = await run(() => ({
      get then() {
        throw new Error('then trap');
      },
    }));
    expect(thenable.outcome.error).toMatchObject({ category: 'internal', detail: 'Unhandled Error: then trap' });
    const getter = await run(async () => ({
      ok: 1,
      get bad() {
        throw new Error('getter trap at /home/me/secret.ts');
      },
    }));
    expect(getter.outcome).toMatchObject({ status: 'ok', result: { ok: 1 } });
    expect(getter.outcome.warnings).toEqual([{ code: 'value-coerced', detail: 'result /bad: getter threw (getter trap at <path>) became omitted' }]);
  });

  it('returns BigInt and other non-JSON values: coerced, with warnings', async () => {
    const { outcome, mcec } = await run(async () => ({
      n: 12345678901234567890n,
      when: new Date(0),
      tags: new Set(['x']),
      map: new Map([['k', 1]]),
      f: () => 1,
      bytes: new Uint8Array([1, 2, 3]),
    }));
    expect(outcome.result).toEqual({
      n: '12345678901234567890',
      when: '1970-01-01T00:00:00.000Z',
      tags: ['x'],
      map: { k: 1 },
      bytes: { $binary: 'AQID', type: 'Uint8Array' },
    });
    expect(outcome.warnings?.map((w) => w.code)).toEqual(Array(6).fill('value-coerced'));
    expect(outcome.warnings?.[0]?.detail).toBe('result /n: bigint became string');
    expect(mcec.warnings).toHaveLength(6);
  });

  it('returns a 50 MB result: ok, and the Durable Workflow preview stays byte-bounded', async () => {
    const big = 'x'.repeat(50 * 1024 * 1024);
    const { outcome, dw } = await run(async () => ({ blob: big }));
    expect(outcome.status).toBe('ok');
    expect((outcome.result as { blob: string }).blob.length).toBe(big.length);
    expect(dw.payload_preview_truncated).toBe(true);
    expect(Buffer.byteLength(dw.payload_preview as string)).toBeLessThanOrEqual(4096);
  });

  it('warns and then fails: the warnings ride on the failure', async () => {
    const { outcome, mcec, contextos } = await run(async (_a, ctx) => {
      ctx.warn('region-clamped', 'The region was clamped to the screen.');
      ctx.keepPartial({ captured: 'half' });
      throw new Error('capture failed');
    });
    expect(outcome.warnings).toEqual([{ code: 'region-clamped', detail: 'The region was clamped to the screen.' }]);
    expect(outcome.error).toMatchObject({ category: 'internal', partialResult: { captured: 'half' } });
    expect(mcec.warnings).toEqual(outcome.warnings);
    expect(mcec.error!.partialResult).toEqual({ captured: 'half' });
    expect(contextos.metadata?.warnings).toEqual(outcome.warnings);
  });

  it('echoes the ids of a ContextOS call envelope', async () => {
    const call: ToolCall = {
      toolCallId: 'call-7',
      runId: 'run-3',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      sessionId: 'sess-1',
      capabilityId: 'subject',
      args: {},
      principalChain: [{ kind: 'user', id: 'u1' }],
      approvalModeRequested: 'local_write',
      approvalModeEffective: 'local_write',
      approvalModeHighest: 'local_write',
      policyDecisionId: 'pd-9',
      evidenceRefs: [],
      idempotencyKey: 'k1',
    };
    const outcome = await runtimeWith(async () => ({ done: true }), ['fs-write']).invoke('subject', undefined, { call });
    const { contextos } = expectValidEnvelopes(outcome);
    expect(contextos).toMatchObject({
      tool_call_id: 'call-7',
      run_id: 'run-3',
      trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
      session_id: 'sess-1',
      capability_id: 'subject',
      policy_decision_id: 'pd-9',
      risk_tags: ['fs-write'],
      status: 'ok',
    });
  });
});
