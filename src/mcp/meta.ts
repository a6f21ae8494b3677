/**
 * The gateway's wire vocabulary shared by every MCP face (gateway, server adapter, CLI): the
 * `_meta` keys it reads and writes, JSON-RPC errors thrown from handlers, and trace ids.
 */
import { readTraceparent } from 'tool-envelope/core';
import { newTraceId } from '../runtime/ids.js';

/** `_meta` keys the gateway reads from a `tools/call` request. */
export const META_KEYS = {
  /** Idempotency key of a call (preferred spelling). */
  idempotencyKey: 'tool-envelope/idempotency-key',
  /** Idempotency key, short spelling. */
  idempotencyKeyShort: 'idempotencyKey',
  /** W3C trace context. */
  traceparent: 'traceparent',
  /** ContextOS run id the call belongs to. */
  runId: 'tool-envelope/run-id',
  /** The approval mode a tool resolved to, published on each tool in `tools/list`. */
  approvalMode: 'tool-envelope/approval-mode',
  /** The upstream's own output schema, kept when the envelope schema replaces it. */
  upstreamOutputSchema: 'tool-envelope/upstream-output-schema',
  /** The upstream a tool comes from. */
  upstream: 'tool-envelope/upstream',
  /** On `tools/call`: the approval mode the call asks for (default: the tool's mode, its ceiling). */
  requestedMode: 'tool-envelope/approval-mode',
  /** On `tools/call`: the ContextOS principal chain, from the originating principal to the acting agent. */
  principalChain: 'tool-envelope/principal-chain',
  /** On `tools/call`: ContextOS evidence refs (a list of strings). */
  evidenceRefs: 'tool-envelope/evidence-refs',
} as const;

/**
 * A JSON-RPC error to throw from a request handler: the SDK sends `code`, `message` and `data`
 * as they are (an `McpError` would prefix its message with `MCP error <code>: `).
 *
 * @example
 * ```ts
 * throw rpcError(-32602, 'Unknown tool: nope');
 * ```
 */
export function rpcError(code: number, message: string, data?: unknown): Error & { code: number; data?: unknown } {
  const e = new Error(message) as Error & { code: number; data?: unknown };
  e.code = code;
  if (data !== undefined) e.data = data;
  return e;
}

/**
 * The trace id of a W3C `traceparent`, or a fresh random one when it is absent or malformed.
 *
 * @example
 * ```ts
 * traceIdFrom('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'); // '4bf92f3577b34da6a3ce929d0e0e4736'
 * ```
 */
export function traceIdFrom(traceparent: string | undefined): string {
  // One reading of the W3C rules for the whole project (core/trace-context.ts): a malformed header is ignored.
  const fields = readTraceparent(traceparent);
  if (fields) return fields.traceId;
  // Cut from the runtime's pooled random hex (ids.ts, a speed trick with its reference): no UUID and no regex per call.
  return newTraceId();
}
