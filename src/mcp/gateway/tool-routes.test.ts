// The tool table under unknown names: a client sending calls to tools no upstream has cannot make each
// call a tools/list on every upstream (the table asks again at most once a second, and concurrent
// lookups share one refresh). Real gateway, real upstream process, a real SDK client.
import { join } from 'node:path';
import type { Request } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { Gateway } from './gateway.js';
import { clientFor, repoRoot, silent } from '../test-support/harness.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');
let gw: Gateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

/** Counts the tools/list requests the gateway sends its upstream (the real request goes through). */
function countLists(gateway: Gateway): () => number {
  const up = gateway.upstreams[0]!;
  let lists = 0;
  const request = up.request.bind(up);
  up.request = ((req: Request, options: Parameters<typeof request>[1]) => {
    if (req.method === 'tools/list') lists++;
    return request(req, options);
  }) as typeof up.request;
  return () => lists;
}

describe('unknown tool names', () => {
  it('200 calls to unknown tools ask the upstream for its list at most once a second, and each is refused', async () => {
    gw = await Gateway.start({ upstreams: [{ name: 'counting', command: process.execPath, args: [COUNTING] }], log: silent });
    const client = await clientFor(gw.createServer());
    await client.listTools();
    const lists = countLists(gw);
    const results = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => client.callTool({ name: `no_such_tool_${i}`, arguments: {} })));
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect(String((r as PromiseRejectedResult).reason)).toMatch(/Unknown tool: no_such_tool_/);
    }
    expect(lists()).toBeLessThanOrEqual(1);
    // A known tool still answers at once from the table.
    const read = await client.callTool({ name: 'read_notes', arguments: {} });
    expect(read.isError).toBeFalsy();
    // Once the second is over, an unknown name asks again (an upstream may have added it without saying so).
    const before = lists();
    await new Promise((r) => setTimeout(r, 1_100));
    await expect(client.callTool({ name: 'added_later', arguments: {} })).rejects.toThrow(/Unknown tool: added_later/);
    expect(lists()).toBe(before + 1);
    await client.close();
  });
});
