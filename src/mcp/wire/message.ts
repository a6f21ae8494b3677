/**
 * The JSON-RPC 2.0 message check of the gateway's own transports (stdio and HTTP sessions): plain
 * property tests of the shapes the SDK's `JSONRPCMessageSchema` accepts, without its zod parse.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/client';

/**
 * An input line that is JSON but not a JSON-RPC 2.0 message. A `SyntaxError`, like a line that is
 * not JSON at all, so that callers classify both as a protocol fault of the peer.
 */
export class InvalidMessageError extends SyntaxError {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidMessageError';
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isId(v: unknown): boolean {
  return typeof v === 'string' || Number.isInteger(v);
}

function onlyKeys(o: Record<string, unknown>, allowed: readonly string[]): boolean {
  for (const k in o) if (!allowed.includes(k)) return false;
  return true;
}

const REQUEST_KEYS = ['jsonrpc', 'id', 'method', 'params'] as const;
const RESULT_KEYS = ['jsonrpc', 'id', 'result'] as const;
const ERROR_KEYS = ['jsonrpc', 'id', 'error'] as const;

/**
 * Checks that a parsed value is a JSON-RPC 2.0 message with the shapes the SDK's
 * `JSONRPCMessageSchema` accepts (request, notification, result or error response; no unknown
 * top-level keys; integer or string ids and progress tokens) and returns it as it is.
 */
export function asJsonRpcMessage(value: unknown): JSONRPCMessage {
  if (!isObject(value) || value.jsonrpc !== '2.0') throw new InvalidMessageError('Invalid JSON-RPC message: expected an object with jsonrpc "2.0"');
  if ('method' in value) {
    if (typeof value.method !== 'string') throw new InvalidMessageError('Invalid JSON-RPC message: method must be a string');
    if ('id' in value && !isId(value.id)) throw new InvalidMessageError('Invalid JSON-RPC request: id must be a string or an integer');
    const params = value.params;
    if (params !== undefined) {
      if (!isObject(params)) throw new InvalidMessageError('Invalid JSON-RPC message: params must be an object');
      const meta = params._meta;
      if (meta !== undefined) {
        if (!isObject(meta)) throw new InvalidMessageError('Invalid JSON-RPC message: params._meta must be an object');
        if (meta.progressToken !== undefined && !isId(meta.progressToken)) {
          throw new InvalidMessageError('Invalid JSON-RPC message: progressToken must be a string or an integer');
        }
      }
    }
    if (!onlyKeys(value, REQUEST_KEYS)) throw new InvalidMessageError('Invalid JSON-RPC message: unknown top-level key');
    return value as unknown as JSONRPCMessage;
  }
  if ('result' in value) {
    if (!isId(value.id)) throw new InvalidMessageError('Invalid JSON-RPC response: id must be a string or an integer');
    if (!isObject(value.result)) throw new InvalidMessageError('Invalid JSON-RPC response: result must be an object');
    if (!onlyKeys(value, RESULT_KEYS)) throw new InvalidMessageError('Invalid JSON-RPC response: unknown top-level key');
    return value as unknown as JSONRPCMessage;
  }
  if ('error' in value) {
    if (value.id !== undefined && !isId(value.id)) throw new InvalidMessageError('Invalid JSON-RPC error: id must be a string or an integer');
    const error = value.error;
    if (!isObject(error) || !Number.isInteger(error.code) || typeof error.message !== 'string') {
      throw new InvalidMessageError('Invalid JSON-RPC error: error needs an integer code and a string message');
    }
    if (!onlyKeys(value, ERROR_KEYS)) throw new InvalidMessageError('Invalid JSON-RPC error: unknown top-level key');
    return value as unknown as JSONRPCMessage;
  }
  throw new InvalidMessageError('Invalid JSON-RPC message: neither a request, a notification nor a response');
}
