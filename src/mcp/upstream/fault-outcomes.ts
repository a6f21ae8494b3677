/**
 * Upstream faults on the gateway's call path: which stay JSON-RPC errors for the client, and the
 * envelope each of the others becomes (codes documented in docs/mcp.md).
 */
import { ProtocolErrorCode as ErrorCode, type Request } from '@modelcontextprotocol/server';
import { failure, toolError, type ToolOutcome } from 'tool-envelope/core';
import { readCallError } from '../reader.js';
import { DEFAULT_MAX_RESULT_BYTES, tooLargeOutcome } from '../wire/result-size.js';
import { HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, rpcError } from '../wire/rpc-errors.js';
import { UpstreamFault, type UpstreamSpec } from './upstream.js';

/** Wraps a non-RPC upstream fault so the tool path can turn it into an envelope. */
export class UpstreamFaultError extends Error {
  constructor(readonly fault: UpstreamFault) {
    super(fault.message);
  }
}

/**
 * What a forwarded request's failure becomes for the client: an upstream's JSON-RPC error as it
 * was (same code, message and data), any other upstream fault an {@link UpstreamFaultError}.
 */
export function toProtocolError(err: unknown): Error {
  if (err instanceof UpstreamFault) {
    if (err.kind === 'rpc') {
      // Forward the upstream's JSON-RPC error as it was: same code, message and data.
      return rpcError(err.rpcCode ?? ErrorCode.InternalError, err.message, err.rpcData);
    }
    return new UpstreamFaultError(err);
  }
  return err instanceof Error ? err : new Error(String(err));
}

/** The envelope outcome of an upstream fault. Codes are documented in docs/mcp.md. */
export function faultOutcome(fault: UpstreamFault, deadlineMs: number): ToolOutcome {
  // An upstream's last stderr lines say why it is gone ("DATABASE_URL is not set"): they travel with the envelope.
  const details = { upstream: fault.upstream, ...(fault.stderr ? { stderr: fault.stderr } : {}) };
  switch (fault.kind) {
    case 'timeout':
      return failure(toolError('timeout', 'upstream-timeout', fault.message, { details: { ...details, deadlineMs } }));
    case 'hung':
      return failure(toolError('timeout', 'upstream-hung', fault.message, { details, retryable: true }));
    case 'exited':
      return failure(toolError('internal', 'upstream-exited', fault.message, { details, retryable: true }));
    case 'unavailable':
      return failure(
        toolError('internal', 'upstream-unavailable', fault.message, {
          details,
          retryable: true,
          ...(fault.retryAfterMs !== undefined ? { retryAfterMs: fault.retryAfterMs } : {}),
        }),
      );
    case 'protocol':
      return failure(toolError('internal', 'upstream-protocol-error', fault.message, { details, retryable: true }));
    case 'too-large': {
      const data = fault.rpcData as { bytes?: number; limitBytes?: number } | undefined;
      return tooLargeOutcome(fault.upstream, data?.bytes, data?.limitBytes ?? DEFAULT_MAX_RESULT_BYTES, 'upstream');
    }
    case 'cancelled':
      return failure(toolError('internal', 'cancelled', fault.message, { details, retryable: true }));
    case 'rpc':
      return failure(toolError('internal', 'upstream-rpc-error', fault.message, { details: { ...details, rpcCode: fault.rpcCode ?? null } }));
  }
}

/** The request without the client's `progressToken` (the gateway relays progress with its own). */
export function stripProgressToken(req: Request): Request {
  const meta = req.params?._meta;
  if (!meta || meta.progressToken === undefined) return req;
  const { progressToken: _p, ...rest } = meta;
  return { ...req, params: { ...req.params, _meta: rest } };
}

// JSON-RPC errors that say the request itself was malformed or named nothing: protocol faults,
// which stay JSON-RPC errors (MCEC: they are not wrapped).
// A header that disagrees with the body and a client capability the request did not declare are
// about the request, not the tool: the client gets them as the upstream said them.
const PROTOCOL_FAULT_CODES = new Set([-32700, -32600, -32601, HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY]);

/**
 * The envelope of a JSON-RPC error an upstream answered a `tools/call` with, when it means the tool
 * failed (an input-validation error, an internal error): classified by the same plain-failure rules
 * as an `isError` text. `undefined` for a protocol fault or an unknown tool, which stay JSON-RPC errors.
 */
export function rpcToolFailure(err: unknown, rules: UpstreamSpec['failureRules']): ToolOutcome | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'number' || PROTOCOL_FAULT_CODES.has(code)) return undefined;
  const outcome = readCallError(err, rules ? { rules } : undefined);
  return outcome.error?.code === 'tool-not-found' ? undefined : outcome;
}
