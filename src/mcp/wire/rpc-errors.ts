/**
 * JSON-RPC errors: the error to throw from a request handler, and the codes of protocol revision
 * 2026-07-28 that the gateway names in more than one place (the HTTP front answers them itself,
 * and an upstream's answer carrying them stays a JSON-RPC error).
 */
import { ProtocolErrorCode } from '@modelcontextprotocol/server';

/**
 * A header disagrees with the body (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`; SEP-2243). The SDK
 * answers it but does not name it in `ProtocolErrorCode`.
 */
export const HEADER_MISMATCH = -32020;

/** Handling the request needs a client capability its `clientCapabilities` did not declare. */
export const MISSING_CLIENT_CAPABILITY: number = ProtocolErrorCode.MissingRequiredClientCapability;

/**
 * A JSON-RPC error to throw from a request handler: the SDK sends `code`, `message` and `data`
 * as they are (an `McpError` would prefix its message with `MCP error <code>: `).
 */
export function rpcError(code: number, message: string, data?: unknown): Error & { code: number; data?: unknown } {
  const e = new Error(message) as Error & { code: number; data?: unknown };
  e.code = code;
  if (data !== undefined) e.data = data;
  return e;
}
