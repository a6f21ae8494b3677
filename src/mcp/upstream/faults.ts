/**
 * How a request to an upstream failed, read from what the SDK v2 client raised: its own errors
 * (`SdkError`: the connection closed, no answer in time, an invalid result) and the upstream's
 * JSON-RPC errors (`ProtocolError`), into one {@link UpstreamFault} kind.
 */
import { ProtocolError, SdkError, SdkErrorCode, type Transport } from '@modelcontextprotocol/client';
import { sanitizeMessage } from 'tool-envelope/core';
import { TOO_LARGE_MARK } from '../wire/result-size.js';
import { describeExit } from './stderr-tail.js';
import { ChildProcessTransport } from './child-process.js';
import { UpstreamFault } from './types.js';

/** What the connection knew when a request failed. */
export interface FailedRequest {
  upstream: string;
  transport: Transport;
  /** Why the gateway itself closed the connection, if it did. */
  killedFor?: 'hung' | 'close';
  /** Undecodable messages seen on the connection while the request was in flight. */
  protocolErrors: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

function tooLarge(name: string, data: Record<string, unknown>, cause: unknown): UpstreamFault {
  const size = typeof data.bytes === 'number' ? `${data.bytes} bytes` : 'more bytes than allowed';
  return new UpstreamFault('too-large', name, `Upstream '${name}' answered with ${size}, over the limit of ${String(data.limitBytes)} bytes.`, {
    cause,
    rpcData: data,
  });
}

function closed(err: unknown, at: FailedRequest): UpstreamFault {
  const name = at.upstream;
  if (at.killedFor === 'hung') {
    return new UpstreamFault('hung', name, `Upstream '${name}' stopped answering health checks and was restarted.`, { cause: err });
  }
  if (at.protocolErrors > 0) {
    return new UpstreamFault('protocol', name, `Upstream '${name}' wrote output that is not MCP and the connection closed.`, { cause: err });
  }
  const t = at.transport;
  if (t instanceof ChildProcessTransport) {
    const why = describeExit(t.exit, t.stderrTail.lines(), t.spawnError);
    return new UpstreamFault('exited', name, `Upstream '${name}' is gone during the call: ${why}.`, { cause: err, stderr: t.stderrTail.lines().slice(-5) });
  }
  return new UpstreamFault('exited', name, `Upstream '${name}' exited or closed the connection during the call.`, { cause: err });
}

/** The {@link UpstreamFault} of an error `Client.request` rejected with. */
export function classifyRequestError(err: unknown, at: FailedRequest): UpstreamFault {
  const name = at.upstream;
  if (at.signal?.aborted) return new UpstreamFault('cancelled', name, 'The caller cancelled the request.', { cause: err });
  if (err instanceof UpstreamFault) return err;
  if (err instanceof SdkError) {
    if (err.code === SdkErrorCode.ConnectionClosed) return closed(err, at);
    if (err.code === SdkErrorCode.RequestTimeout) {
      if (at.protocolErrors > 0) {
        return new UpstreamFault(
          'protocol',
          name,
          `Upstream '${name}' wrote ${at.protocolErrors} line(s) that are not MCP and gave no answer within ${at.timeoutMs} ms.`,
          { cause: err },
        );
      }
      return new UpstreamFault('timeout', name, `Upstream '${name}' gave no answer within ${at.timeoutMs} ms.`, { cause: err });
    }
    if (err.code === SdkErrorCode.NotConnected || err.code === SdkErrorCode.SendFailed) {
      return new UpstreamFault('exited', name, `Upstream '${name}' is not connected.`, { cause: err });
    }
    return new UpstreamFault('protocol', name, `Upstream '${name}' answered with an invalid result: ${err.message}`, { cause: err });
  }
  if (err instanceof ProtocolError) {
    const data = err.data as Record<string, unknown> | undefined;
    if (data && typeof data === 'object' && data[TOO_LARGE_MARK] === true) return tooLarge(name, data, err);
    // v2 keeps the message as the upstream wrote it (v1 prefixed `MCP error <code>: `, stripped then).
    return new UpstreamFault('rpc', name, err.message, { rpcCode: err.code, rpcData: err.data, cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  if (/not connected/i.test(message)) return new UpstreamFault('exited', name, `Upstream '${name}' is not connected.`, { cause: err });
  return new UpstreamFault('protocol', name, `Upstream '${name}' answered with an invalid result: ${message}`, { cause: err });
}

/**
 * An error's message with what caused it, for the log and the fault an operator reads: the SDK's
 * `fetch failed` says nothing, its causes say why (an untrusted certificate, a refused
 * connection). Causes whose text is already in the message are left out; what is added goes
 * through `sanitizeMessage` (a cause may quote the network or a URL with credentials: no control
 * characters, no secrets) and is cut to 300 characters.
 */
export function withCauses(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const parts: string[] = [];
  let seen = message;
  let cause = err instanceof Error ? err.cause : undefined;
  for (let depth = 0; depth < 4 && cause !== undefined && cause !== null; depth++) {
    const text = cause instanceof Error ? cause.message : typeof cause === 'string' ? cause : '';
    const code = (cause as { code?: unknown }).code;
    const part = `${text}${typeof code === 'string' && !text.includes(code) ? ` [${code}]` : ''}`.trim();
    if (part !== '' && !seen.includes(text || part)) {
      parts.push(part);
      seen += ` ${part}`;
    }
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return parts.length === 0 ? message : `${message} (${sanitizeMessage(parts.join('; '), 300)})`;
}
