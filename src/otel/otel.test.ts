import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type TextMapGetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import fc from 'fast-check';
import { z } from 'zod';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ToolFailure } from '../core/classify.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Gateway } from '../mcp/gateway/gateway.js';
import { clientFor, everythingSpec } from '../mcp/test-support/harness.js';
import { readToolResult } from '../mcp/reader.js';
import { defineTool } from '../runtime/define.js';
import { createGovernedRuntime } from '../runtime/governed.js';
import { createRuntime } from '../runtime/runtime.js';
import { createSession } from '../runtime/session.js';
import { createMemoryStore } from '../store/memory.js';
import { ATTR, formatTraceparent, globalTracingEnabled, instrumentRuntime, parseTraceparent, traceGateway, traceHeadersFromMeta } from './index.js';

const add = defineTool({
  name: 'math_add',
  description: 'Adds two numbers.',
  approvalMode: 'read_only',
  input: z.object({ a: z.number(), b: z.number() }),
  handler: async ({ a, b }) => ({ sum: a + b }),
});
const slow = defineTool({
  name: 'page_wait',
  description: 'Waits for a dialog.',
  input: z.object({}),
  handler: async () => {
    throw new ToolFailure({ category: 'timeout', code: 'wait-condition-timeout', detail: 'Waited 5 s for the dialog.' });
  },
});
const crash = defineTool({
  name: 'crash',
  description: 'Throws.',
  input: z.object({}),
  handler: () => {
    throw new TypeError('boom');
  },
});
const wipe = defineTool({
  name: 'disk_wipe',
  description: 'Wipes a disk.',
  approvalMode: 'destructive',
  input: z.object({}),
  handler: async () => ({ wiped: true }),
});

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function setup() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, provider };
}

function only(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found, name).toHaveLength(1);
  return found[0]!;
}

describe('runtime spans (GenAI semantic conventions)', () => {
  it('one execute_tool span per invocation with the tool, call, session and run ids; error.type = the category', async () => {
    const { exporter, provider } = setup();
    const runtime = createRuntime({ tools: [add, slow, crash], runId: 'run-7' });
    const stop = instrumentRuntime(runtime, { tracerProvider: provider });
    const session = createSession({ id: 'sess-otel' });
    const ok = await runtime.invoke('math_add', { a: 1, b: 2 }, { session });
    const timedOut = await runtime.invoke('page_wait', {}, { session });
    const crashed = await runtime.invoke('crash', {});
    const invalid = await runtime.invoke('math_add', { a: 'x' });
    const spans = exporter.getFinishedSpans();
    expect(spans).toHaveLength(4);

    const s1 = spans[0]!;
    expect(s1.name).toBe('execute_tool math_add');
    expect(s1.kind).toBe(SpanKind.INTERNAL);
    expect(s1.instrumentationScope.name).toBe('tool-envelope');
    expect(s1.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'math_add',
      'gen_ai.tool.call.id': ok.toolCallId,
      'gen_ai.tool.type': 'function',
      'gen_ai.tool.description': 'Adds two numbers.',
      'gen_ai.conversation.id': 'sess-otel',
      'tool_envelope.session.id': 'sess-otel',
      'tool_envelope.run.id': 'run-7',
      'tool_envelope.trace_id': ok.traceId,
      'tool_envelope.outcome.status': 'ok',
      'tool_envelope.ran': true,
    });
    expect(s1.attributes[ATTR.errorType]).toBeUndefined();
    expect(s1.status.code).toBe(SpanStatusCode.UNSET);

    const s2 = spans[1]!;
    expect(s2.attributes).toMatchObject({
      'error.type': 'timeout',
      'tool_envelope.error.code': 'wait-condition-timeout',
      'gen_ai.tool.call.id': timedOut.toolCallId,
    });
    expect(s2.status).toEqual({ code: SpanStatusCode.ERROR, message: 'Waited 5 s for the dialog.' });
    expect(spans[2]!.attributes[ATTR.errorType]).toBe(crashed.error!.category);
    expect(spans[2]!.attributes[ATTR.errorType]).toBe('internal');
    expect(spans[3]!.attributes[ATTR.errorType]).toBe(invalid.error!.category);
    expect(spans[3]!.attributes[ATTR.errorType]).toBe('invalid-argument');
    // Span duration covers the call.
    for (const s of spans) expect(s.endTime[0] * 1e3 + s.endTime[1] / 1e6).toBeGreaterThanOrEqual(s.startTime[0] * 1e3 + s.startTime[1] / 1e6);

    stop();
    await runtime.invoke('math_add', { a: 1, b: 2 });
    expect(exporter.getFinishedSpans()).toHaveLength(4);
    await session.close();
  });

  it('a traceparent in the call metadata (e.g. from MCP _meta) continues the caller trace; blocked and paused calls get spans too', async () => {
    const { exporter, provider } = setup();
    const runtime = createRuntime({ tools: [add, wipe] });
    instrumentRuntime(runtime, { tracerProvider: provider });
    const governed = createGovernedRuntime({ runtime, store: createMemoryStore() });
    const meta = { traceparent: PARENT, tracestate: 'vendor=abc' };
    const ok = await governed.invoke(
      'math_add',
      { a: 2, b: 3 },
      { metadata: traceHeadersFromMeta(meta), ids: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736' } },
    );
    const paused = await governed.invoke('disk_wipe', {}, { idempotencyKey: 'w1' });
    const blocked = await governed.invoke('disk_wipe', {}, { requestedMode: 'read_only' });
    const spans = exporter.getFinishedSpans();
    const s = spans.find((x) => x.attributes[ATTR.toolCallId] === ok.toolCallId)!;
    expect(s.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(s.parentSpanContext).toMatchObject({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', isRemote: true });
    expect(s.parentSpanContext?.traceState?.get('vendor')).toBe('abc');
    expect(s.attributes['tool_envelope.trace_id']).toBe(ok.traceId);
    expect(s.attributes['tool_envelope.policy_decision.id']).toBe(ok.policyDecisionId);

    const p = spans.find((x) => x.attributes[ATTR.toolCallId] === paused.toolCallId)!;
    expect(p.attributes).toMatchObject({ 'tool_envelope.outcome.status': 'paused', 'tool_envelope.ran': false });
    expect(p.attributes[ATTR.errorType]).toBeUndefined();
    expect(p.parentSpanContext).toBeUndefined();
    const b = spans.find((x) => x.attributes[ATTR.toolCallId] === blocked.toolCallId)!;
    expect(b.attributes).toMatchObject({ 'error.type': 'elevation', 'tool_envelope.outcome.status': 'blocked', 'tool_envelope.error.code': 'policy-denied' });
    expect(b.status.code).toBe(SpanStatusCode.ERROR);
    // A malformed traceparent starts a new trace rather than failing the call.
    const bad = await governed.invoke('math_add', { a: 1, b: 1 }, { metadata: { traceparent: '00-zz-00f067aa0ba902b7-01' } }).catch(() => undefined);
    expect(bad).toMatchObject({ status: 'ok' });
    const fresh = exporter.getFinishedSpans().find((x) => x.attributes[ATTR.toolCallId] === bad!.toolCallId)!;
    expect(fresh.parentSpanContext).toBeUndefined();
    await governed.close();
  });

  it('tracing does not change outcomes', async () => {
    const { exporter, provider } = setup();
    const plain = createRuntime({ tools: [add, slow] });
    const traced = createRuntime({ tools: [add, slow] });
    instrumentRuntime(traced, { tracerProvider: provider });
    const strip = (o: object) => {
      const { toolCallId: _a, traceId: _b, runId: _c, latencyMs: _d, ...rest } = o as Record<string, unknown>;
      return rest;
    };
    for (const [name, args] of [
      ['math_add', { a: 1, b: 2 }],
      ['page_wait', {}],
      ['math_add', { a: 'no' }],
    ] as const) {
      expect(strip(await traced.invoke(name, args))).toEqual(strip(await plain.invoke(name, args)));
    }
    expect(exporter.getFinishedSpans()).toHaveLength(3);
    // Without an SDK the API only hands out non-recording spans.
    expect(globalTracingEnabled()).toBe(false);
    expect(trace.getTracer('tool-envelope').startSpan('x').isRecording()).toBe(false);
  });

  describe('with the SDK registered globally', () => {
    const { exporter, provider } = setup();
    beforeAll(() => {
      trace.setGlobalTracerProvider(provider);
    });
    afterAll(() => trace.disable());
    afterEach(() => exporter.reset());

    it('the default tracer is the global provider; instrumenting before an SDK is registered subscribes to nothing', async () => {
      trace.disable();
      expect(globalTracingEnabled()).toBe(false);
      const subscribed: string[] = [];
      const stopEarly = instrumentRuntime({ on: (event: string) => (subscribed.push(event), () => {}) } as never);
      expect(subscribed).toEqual([]);
      stopEarly();
      trace.setGlobalTracerProvider(provider);
      expect(globalTracingEnabled()).toBe(true);
      const runtime = createRuntime({ tools: [add] });
      instrumentRuntime(runtime);
      await runtime.invoke('math_add', { a: 1, b: 1 });
      expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['execute_tool math_add']);
    });
  });
});

describe('gateway spans', () => {
  const { exporter, provider } = setup();
  let gw: Gateway;
  let client: Awaited<ReturnType<typeof clientFor>>;
  beforeAll(async () => {
    gw = await Gateway.start({
      upstreams: [everythingSpec({ prefix: 'ev_' })],
      dialect: 'contextos',
      governor: traceGateway(undefined, { tracerProvider: provider }),
    });
    client = await clientFor(gw.createServer());
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await gw?.close();
  });

  it('an MCP tools/call with _meta.traceparent becomes a child execute_tool span; a failing call carries error.type', async () => {
    const ok = (await client.callTool({ name: 'ev_echo', arguments: { message: 'hi' }, _meta: { traceparent: PARENT } })) as CallToolResult;
    const bad = (await client.callTool({ name: 'ev_get-sum', arguments: { a: 'two' } })) as CallToolResult;
    const spans = exporter.getFinishedSpans();
    const s = only(spans, 'execute_tool ev_echo');
    const okOutcome = readToolResult(ok);
    expect(s.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'ev_echo',
      'gen_ai.tool.call.id': okOutcome.toolCallId,
      'mcp.method.name': 'tools/call',
      'tool_envelope.upstream': 'everything',
      'tool_envelope.outcome.status': 'ok',
    });
    expect(s.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(s.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    const f = only(spans, 'execute_tool ev_get-sum');
    const badOutcome = readToolResult(bad);
    expect(badOutcome.status).toBe('error');
    expect(f.attributes[ATTR.errorType]).toBe(badOutcome.error!.category);
    expect(f.status.code).toBe(SpanStatusCode.ERROR);
    expect(f.parentSpanContext).toBeUndefined();
  });
});

describe('traceparent', () => {
  const reference = new W3CTraceContextPropagator();
  const getter: TextMapGetter<Record<string, string>> = { keys: (c) => Object.keys(c), get: (c, k) => c[k] };
  const viaReference = (tp: string) => trace.getSpanContext(reference.extract(ROOT_CONTEXT, { traceparent: tp }, getter));

  it('parses valid headers and rejects malformed ones', () => {
    expect(parseTraceparent(PARENT)).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1, isRemote: true });
    for (const bad of [
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
      '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01',
      '',
      42,
      undefined,
    ]) {
      expect(parseTraceparent(bad), String(bad)).toBeUndefined();
    }
    expect(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future')?.spanId).toBe('00f067aa0ba902b7');
    expect(formatTraceparent(parseTraceparent(PARENT)!)).toBe(PARENT);
    expect(traceHeadersFromMeta({ traceparent: PARENT, tracestate: 1 })).toEqual({ traceparent: PARENT });
    expect(traceHeadersFromMeta(null)).toEqual({});
  });

  it('agrees with the reference W3C propagator of @opentelemetry/core on 5000 generated headers', () => {
    const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });
    const part = (n: number) =>
      fc.oneof(
        { weight: 6, arbitrary: hex(n) },
        { weight: 1, arbitrary: fc.constant('0'.repeat(n)) },
        { weight: 1, arbitrary: fc.string({ maxLength: n + 1 }) },
      );
    const header = fc.oneof(
      {
        weight: 8,
        arbitrary: fc
          .tuple(
            fc.oneof(fc.constant('00'), fc.constant('ff'), hex(2)),
            part(32),
            part(16),
            hex(2),
            fc.oneof(fc.constant(''), fc.constant('-x'), fc.string({ maxLength: 4 })),
          )
          .map(([v, t, s, f, r]) => `${v}-${t}-${s}-${f}${r}`),
      },
      { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom(' ', '', '\t'), fc.constant(PARENT), fc.constantFrom(' ', '', '  ')).map(([a, b, c]) => a + b + c) },
    );
    fc.assert(
      fc.property(header, (tp) => {
        const mine = parseTraceparent(tp);
        const ref = viaReference(tp);
        expect(mine ? { ...mine } : undefined).toEqual(
          ref ? { traceId: ref.traceId, spanId: ref.spanId, traceFlags: ref.traceFlags, isRemote: ref.isRemote } : undefined,
        );
      }),
      { numRuns: 5000 },
    );
  });
});
