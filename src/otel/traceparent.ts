/**
 * W3C Trace Context (`traceparent`, `tracestate`) → an OpenTelemetry parent
 * context, through `@opentelemetry/api` only (no SDK, no propagator package).
 * Malformed headers are ignored (a new trace starts), as the W3C spec asks.
 */
import { ROOT_CONTEXT, createTraceState, trace, type Context, type SpanContext } from '@opentelemetry/api';
import { readTraceparent } from 'tool-envelope/core';

/**
 * Parses a `traceparent` header into a remote span context, or `undefined`
 * when it is malformed by the W3C rules ({@link readTraceparent}: bad version `ff`,
 * all-zero ids, wrong lengths, uppercase hex, trailing data on version 00).
 */
export function parseTraceparent(traceparent: unknown, tracestate?: unknown): SpanContext | undefined {
  const fields = readTraceparent(traceparent);
  if (fields === undefined) return undefined;
  const ctx: SpanContext = { traceId: fields.traceId, spanId: fields.parentId, traceFlags: fields.traceFlags, isRemote: true };
  if (typeof tracestate === 'string' && tracestate.length <= 512) ctx.traceState = createTraceState(tracestate);
  return ctx;
}

/** The context a span continues: the caller's trace when `traceparent` is valid, else `base`. */
export function contextFromTraceparent(traceparent: unknown, tracestate?: unknown, base: Context = ROOT_CONTEXT): Context {
  const sc = parseTraceparent(traceparent, tracestate);
  return sc ? trace.setSpanContext(base, sc) : base;
}

/** Reads `traceparent`/`tracestate` from an MCP request's `_meta` (or any object). */
export function traceHeadersFromMeta(meta: unknown): { traceparent?: string; tracestate?: string } {
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return {};
  const { traceparent, tracestate } = meta as Record<string, unknown>;
  return {
    ...(typeof traceparent === 'string' && { traceparent }),
    ...(typeof tracestate === 'string' && { tracestate }),
  };
}

/** Formats the `traceparent` of a span context (to pass a trace on, e.g. in MCP `_meta`). */
export function formatTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}
