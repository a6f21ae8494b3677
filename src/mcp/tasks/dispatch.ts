/**
 * Raw task requests to an upstream, on its SDK transport. The SDK v2 client rejects a
 * `tools/call` answered with a task (`resultType: "task"`: UNSUPPORTED_RESULT_TYPE) and keeps
 * nothing of it, so the task-carrying requests go out beside the client on the same
 * `Transport` (the SDK's supported seam; ext-tasks calls this a host-owned raw dispatch): ids of
 * their own, responses taken off the transport before the client sees them, everything else
 * passed through untouched.
 */
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { randomBytes } from 'node:crypto';
import { ToolEnvelopeError, type JsonObject } from 'tool-envelope/core';

/** One JSON-RPC answer: a result object or an error. */
export type TaskRpcAnswer = { result: JsonObject; error?: undefined } | { result?: undefined; error: { code: number; message: string; data?: unknown } };

/** Sends task-carrying requests to one upstream. */
export interface TaskDispatch {
  request(method: string, params: JsonObject, options: TaskRequestOptions): Promise<TaskRpcAnswer>;
}

/** Options of one {@link TaskDispatch.request}. */
export interface TaskRequestOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * HTTP headers of this one request (the `Mcp-Param-*` of a `tools/call`, SEP-2243), through the
   * SDK transport's per-message `headers`: sent by a Streamable HTTP transport, ignored by stdio. The
   * transport derives `Mcp-Method` and `Mcp-Name` from the body itself and never lets these override them.
   */
  headers?: Record<string, string>;
}

export interface TaskDispatchOptions {
  /**
   * The modern era's per-request `_meta` envelope (protocol version, client info, client
   * capabilities) the client would attach; merged under each request's own `_meta`.
   */
  envelope: () => JsonObject;
  /** Requests in flight at most (default 256); more fail with `invalid-option`. */
  maxInFlight?: number;
}

/**
 * Taps a connected transport (call it after `client.connect(transport)`, which installs the
 * client's `onmessage`; again after every reconnect).
 */
export function tapTaskDispatch(transport: Transport, options: TaskDispatchOptions): TaskDispatch {
  const maxInFlight = options.maxInFlight ?? 256;
  const prefix = `te-task-${randomBytes(6).toString('hex')}-`;
  const pending = new Map<string, (answer: TaskRpcAnswer) => void>();
  let seq = 0;
  const clientOnMessage = transport.onmessage;
  const clientOnClose = transport.onclose;
  transport.onmessage = (message: JSONRPCMessage, extra?: unknown) => {
    const id = (message as { id?: unknown }).id;
    const settle = typeof id === 'string' && !('method' in message) ? pending.get(id) : undefined;
    if (!settle) return (clientOnMessage as ((m: JSONRPCMessage, e?: unknown) => void) | undefined)?.(message, extra);
    pending.delete(id as string);
    const m = message as { result?: unknown; error?: { code?: unknown; message?: unknown; data?: unknown } };
    if (m.error) {
      settle({
        error: {
          code: typeof m.error.code === 'number' ? m.error.code : -32603,
          message: typeof m.error.message === 'string' ? m.error.message : 'upstream error',
          ...(m.error.data !== undefined ? { data: m.error.data } : {}),
        },
      });
    } else if (m.result !== null && typeof m.result === 'object' && !Array.isArray(m.result)) {
      settle({ result: m.result as JsonObject });
    } else {
      settle({ error: { code: -32603, message: 'upstream answered with a result that is not an object' } });
    }
  };
  transport.onclose = () => {
    for (const settle of pending.values()) settle({ error: { code: -32000, message: 'Connection closed' } });
    pending.clear();
    clientOnClose?.();
  };
  return {
    request(method, params, { timeoutMs, signal, headers }) {
      if (pending.size >= maxInFlight)
        return Promise.reject(new ToolEnvelopeError('invalid-option', `more than ${maxInFlight} task requests in flight to one upstream`));
      const id = prefix + ++seq;
      const meta = { ...options.envelope(), ...(isObject(params._meta) ? params._meta : {}) };
      return new Promise<TaskRpcAnswer>((resolve) => {
        const done = (answer: TaskRpcAnswer) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          pending.delete(id);
          resolve(answer);
        };
        const onAbort = () => done({ error: { code: -32001, message: 'Request cancelled' } });
        const timer = setTimeout(() => done({ error: { code: -32001, message: 'Request timed out' } }), timeoutMs);
        signal?.addEventListener('abort', onAbort, { once: true });
        pending.set(id, done);
        const message = { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } } as JSONRPCMessage;
        transport.send(message, headers ? { headers } : undefined).catch((e: unknown) => {
          done({ error: { code: -32000, message: e instanceof Error ? e.message : String(e) } });
        });
      });
    },
  };
}

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
