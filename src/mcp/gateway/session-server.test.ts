// The plain tools/call dispatch of SessionServer: which requests take it. That both paths answer
// alike, valid and malformed calls, over HTTP with a real gateway: serve/http-session.test.ts.
import { describe, expect, it } from 'vitest';
import { isPlainToolCall } from './session-server.js';

const call = (params: unknown) => ({ jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: params as Record<string, unknown> });

describe('isPlainToolCall: the shape for which the SDK check is the identity', () => {
  it.each([
    [{ name: 'add' }],
    [{ name: 'add', arguments: { a: 1 } }],
    [{ _meta: { progressToken: 'p' }, name: 'add', arguments: {} }],
    [{ name: 'add', _meta: { progressToken: 7, other: 1 } }],
    [{ name: 'add', _meta: {} }],
  ])('takes %j', (params) => {
    expect(isPlainToolCall(call(params))).toBe(true);
  });

  it.each([
    [undefined],
    [null],
    [[]],
    [{}],
    [{ name: 1 }],
    [{ name: 'add', arguments: [] }],
    [{ name: 'add', arguments: null }],
    [{ name: 'add', arguments: 'a' }],
    [{ name: 'add', extra: 1 }],
    [{ name: 'add', task: { ttl: 1 } }],
    [{ name: 'add', requestState: 's' }],
    [{ name: 'add', _meta: null }],
    [{ name: 'add', _meta: [] }],
    [{ name: 'add', _meta: { progressToken: 1.5 } }],
    [{ name: 'add', _meta: { progressToken: 2 ** 53 } }],
    [{ name: 'add', _meta: { progressToken: {} } }],
    [{ name: 'add', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't' } } }],
    [JSON.parse('{"name":"add","arguments":{"__proto__":{"x":1}}}')],
    [JSON.parse('{"name":"add","__proto__":{"x":1}}')],
  ])('leaves %j to the SDK', (params) => {
    expect(isPlainToolCall(call(params))).toBe(false);
  });
});
