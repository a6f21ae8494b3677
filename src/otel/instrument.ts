/**
 * OpenTelemetry spans for tool calls, following the GenAI semantic
 * conventions: every invocation is an `execute_tool {tool name}` span with
 * `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id` and, on
 * failure, `error.type` = the error category. Only `@opentelemetry/api` is
 * used: with no SDK installed every span is the API's non-recording span and
 * nothing else is done.
 */
import {
  ProxyTracerProvider,
  SpanKind,
  SpanStatusCode,
  context,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { isJsonObject, type ToolOutcome, isSuccessStatus } from 'tool-envelope/core';
import type { GatewayCall, GatewayGovernor } from '../mcp/call.js';
import type { Invocation } from '../runtime/events.js';
import type { Runtime } from '../runtime/runtime.js';
import { contextFromTraceparent } from './traceparent.js';

/**
 * Attribute names set on tool spans. The `gen_ai.*` and `error.type` names
 * are OpenTelemetry's GenAI semantic conventions; `tool_envelope.*` are ours.
 */
export const ATTR = {
  operationName: 'gen_ai.operation.name',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolDescription: 'gen_ai.tool.description',
  conversationId: 'gen_ai.conversation.id',
  errorType: 'error.type',
  sessionId: 'tool_envelope.session.id',
  runId: 'tool_envelope.run.id',
  traceId: 'tool_envelope.trace_id',
  status: 'tool_envelope.outcome.status',
  errorCode: 'tool_envelope.error.code',
  latencyMs: 'tool_envelope.latency_ms',
  approvalMode: 'tool_envelope.approval_mode',
  policyDecisionId: 'tool_envelope.policy_decision.id',
  ran: 'tool_envelope.ran',
  upstream: 'tool_envelope.upstream',
  mcpMethod: 'mcp.method.name',
  mcpSessionId: 'mcp.session.id',
} as const;

/** The tracer name spans are created under. */
export const TRACER_NAME = 'tool-envelope';

/** Options of {@link instrumentRuntime} and {@link traceGateway}. */
export interface TracingOptions {
  /** Use this tracer (default: `trace.getTracer('tool-envelope')` from the global provider, looked up per call). */
  tracer?: Tracer;
  /** Take the tracer from this provider instead of the global one. */
  tracerProvider?: TracerProvider;
}

/**
 * True when an OpenTelemetry SDK is registered as the global tracer provider
 * (without one, the API hands out non-recording spans).
 */
export function globalTracingEnabled(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer(TRACER_NAME) !== undefined;
}

function tracerFrom(options: TracingOptions | undefined): () => Tracer {
  if (options?.tracer) {
    const t = options.tracer;
    return () => t;
  }
  if (options?.tracerProvider) {
    const t = options.tracerProvider.getTracer(TRACER_NAME);
    return () => t;
  }
  // The global tracer is a proxy that follows a provider registered later, so one lookup is enough.
  const t = trace.getTracer(TRACER_NAME);
  return () => t;
}

/** Sets the outcome's attributes and status on a span and ends it. */
export function endToolSpan(span: Span, outcome: ToolOutcome | undefined, endTime?: number): void {
  if (outcome !== undefined && span.isRecording()) {
    const attrs: Attributes = { [ATTR.status]: outcome.status };
    if (outcome.latencyMs !== undefined) attrs[ATTR.latencyMs] = outcome.latencyMs;
    if (outcome.policyDecisionId) attrs[ATTR.policyDecisionId] = outcome.policyDecisionId;
    if (!isSuccessStatus(outcome.status) && outcome.status !== 'paused') {
      const e = outcome.error;
      // A failure always names its category; `internal` when an outcome arrived without an error object.
      attrs[ATTR.errorType] = e?.category ?? 'internal';
      if (e?.code) attrs[ATTR.errorCode] = e.code;
      span.setStatus({ code: SpanStatusCode.ERROR, message: e?.detail ?? outcome.status });
    }
    span.setAttributes(attrs);
  }
  span.end(endTime);
}

/** Starts an `execute_tool {tool}` span with the GenAI attributes every tool span carries. */
export function startToolSpan(
  tracer: Tracer,
  parent: Context,
  startTime: number,
  ids: { tool: string; toolCallId: string; runId: string; traceId: string; sessionId?: string | undefined; mode: string },
): Span {
  const span = tracer.startSpan(`execute_tool ${ids.tool}`, { kind: SpanKind.INTERNAL, startTime }, parent);
  if (span.isRecording()) {
    const attrs: Attributes = {
      [ATTR.operationName]: 'execute_tool',
      [ATTR.toolName]: ids.tool,
      [ATTR.toolCallId]: ids.toolCallId,
      [ATTR.toolType]: 'function',
      [ATTR.runId]: ids.runId,
      [ATTR.traceId]: ids.traceId,
      [ATTR.approvalMode]: ids.mode,
    };
    if (ids.sessionId !== undefined) {
      attrs[ATTR.sessionId] = ids.sessionId;
      attrs[ATTR.conversationId] = ids.sessionId;
    }
    span.setAttributes(attrs);
  }
  return span;
}

function parentOf(inv: Invocation): Context {
  const meta = inv.call?.metadata;
  if (meta !== undefined && isJsonObject(meta) && typeof meta.traceparent === 'string') {
    return contextFromTraceparent(meta.traceparent, meta.tracestate, context.active());
  }
  return context.active();
}

/**
 * Traces every invocation of a runtime (including synthesized outcomes:
 * blocked, paused, rejected, replayed) as an `execute_tool {tool}` span.
 * The parent is the caller's trace from the call envelope's
 * `metadata.traceparent` (e.g. from MCP `_meta.traceparent`) when present,
 * else the active context. Returns the function that stops tracing.
 *
 * With neither `tracer` nor `tracerProvider` given, the global provider is
 * used, and when no SDK is registered there *at this moment* nothing is
 * subscribed at all, so the runtime does not even build its event payloads:
 * no cost. Register the SDK first (as OpenTelemetry instrumentations expect),
 * or pass `tracerProvider`.
 *
 * @example
 * ```ts
 * const stop = instrumentRuntime(runtime); // spans go to the globally registered SDK, if any
 * await governed.invoke('fs_read', { path: 'a' }, { metadata: { traceparent } });
 * stop();
 * ```
 */
export function instrumentRuntime(runtime: Pick<Runtime, 'on'>, options?: TracingOptions): () => void {
  if (options?.tracer === undefined && options?.tracerProvider === undefined && !globalTracingEnabled()) return () => {};
  const tracer = tracerFrom(options);
  const spans = new WeakMap<Invocation, Span>();
  const offStart = runtime.on('invoke:start', (inv) => {
    const span = startToolSpan(tracer(), parentOf(inv), inv.startedAt, {
      tool: inv.toolName,
      toolCallId: inv.toolCallId,
      runId: inv.runId,
      traceId: inv.traceId,
      sessionId: inv.sessionId,
      mode: inv.call?.approvalModeEffective ?? inv.tool.approvalMode,
    });
    if (span.isRecording()) {
      const attrs: Attributes = { [ATTR.ran]: inv.ran };
      if (inv.tool.description) attrs[ATTR.toolDescription] = inv.tool.description;
      if (inv.policyDecisionId) attrs[ATTR.policyDecisionId] = inv.policyDecisionId;
      span.setAttributes(attrs);
    }
    spans.set(inv, span);
  });
  const offEnd = runtime.on('invoke:end', (inv) => {
    const span = spans.get(inv);
    if (span === undefined) return;
    spans.delete(inv);
    endToolSpan(span, inv.outcome);
  });
  return () => {
    offStart();
    offEnd();
  };
}

/**
 * A gateway governor that traces every MCP tool call as an `execute_tool
 * {tool}` span, continuing the caller's trace from `_meta.traceparent`, and
 * runs the call (through `inner`, e.g. the policy governor, when given)
 * inside the span's context.
 *
 * @example
 * ```ts
 * const gw = await Gateway.start({ upstreams, governor: traceGateway(policyGovernor) });
 * ```
 */
export function traceGateway(inner?: GatewayGovernor, options?: TracingOptions): GatewayGovernor {
  const tracer = tracerFrom(options);
  // With the global provider, whether an SDK is registered is checked per call (it is one property read).
  const explicit = options?.tracer !== undefined || options?.tracerProvider !== undefined;
  return {
    async run(call: GatewayCall, execute: () => Promise<ToolOutcome>): Promise<ToolOutcome> {
      if (explicit === false && !globalTracingEnabled()) return inner ? inner.run(call, execute) : execute();
      const parent = call.traceparent ? contextFromTraceparent(call.traceparent, undefined, context.active()) : context.active();
      const span = startToolSpan(tracer(), parent, call.startedAt, {
        tool: call.tool,
        toolCallId: call.toolCallId,
        runId: call.runId,
        traceId: call.traceId,
        sessionId: call.sessionId,
        mode: call.ceiling,
      });
      if (span.isRecording()) {
        const attrs: Attributes = { [ATTR.upstream]: call.upstream, [ATTR.mcpMethod]: 'tools/call' };
        if (call.sessionId !== undefined) attrs[ATTR.mcpSessionId] = call.sessionId;
        span.setAttributes(attrs);
      }
      let outcome: ToolOutcome | undefined;
      try {
        outcome = await context.with(trace.setSpan(parent, span), () => (inner ? inner.run(call, execute) : execute()));
        return outcome;
      } catch (e) {
        // Not a tool failure (those are outcomes): a fault of the gateway itself.
        span.recordException(e instanceof Error ? e : String(e));
        span.setAttribute(ATTR.errorType, e instanceof Error ? e.name : 'internal');
        span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
        throw e;
      } finally {
        endToolSpan(span, outcome);
      }
    },
  };
}
