import { describe, expect, it } from 'vitest';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { asJsonRpcMessage, InvalidMessageError } from './message.js';

const VALID: unknown[] = [
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: { a: 1 }, _meta: { progressToken: 'p' } } },
  { jsonrpc: '2.0', id: 'a', method: 'ping' },
  { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 3, progress: 1 } },
  { jsonrpc: '2.0', id: 7, result: { content: [], isError: false } },
  { jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found', data: { x: 1 } } },
  { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' } },
];
const INVALID: unknown[] = [
  null,
  [],
  'x',
  { id: 1, method: 'ping' },
  { jsonrpc: '1.0', id: 1, method: 'ping' },
  { jsonrpc: '2.0', id: 1.5, method: 'ping' },
  { jsonrpc: '2.0', id: null, method: 'ping' },
  { jsonrpc: '2.0', id: 1, method: 3 },
  { jsonrpc: '2.0', id: 1, method: 'x', params: [] },
  { jsonrpc: '2.0', id: 1, method: 'x', params: { _meta: 'no' } },
  { jsonrpc: '2.0', id: 1, method: 'x', params: { _meta: { progressToken: 1.5 } } },
  { jsonrpc: '2.0', id: 1, method: 'x', extra: true },
  { jsonrpc: '2.0', id: 1, result: [] },
  { jsonrpc: '2.0', result: {} },
  { jsonrpc: '2.0', id: 1, result: {}, extra: 1 },
  { jsonrpc: '2.0', id: 1, error: { code: 1.5, message: 'x' } },
  { jsonrpc: '2.0', id: 1, error: { code: 1 } },
  { jsonrpc: '2.0', id: 1 },
];

describe('asJsonRpcMessage', () => {
  it('accepts exactly what the SDK schema accepts, and returns the message unchanged', () => {
    for (const m of VALID) {
      expect(JSONRPCMessageSchema.safeParse(m).success).toBe(true);
      expect(asJsonRpcMessage(m)).toBe(m);
    }
    for (const m of INVALID) {
      expect(JSONRPCMessageSchema.safeParse(m).success, JSON.stringify(m)).toBe(false);
      expect(() => asJsonRpcMessage(m), JSON.stringify(m)).toThrow(InvalidMessageError);
    }
  });

  it('reports bad messages as SyntaxErrors (protocol faults of the peer)', () => {
    expect(() => asJsonRpcMessage({ jsonrpc: '2.0' })).toThrow(SyntaxError);
  });
});
