/**
 * Fills a store with real calls for the audit tests: MCP calls through the
 * gateway (in front of the reference server-everything, SDK client over the
 * SDK's in-memory transport) recorded by its StoreRecorder, and governed
 * runtime calls (a session with a success, a failure carrying the last good
 * observation and an artifact, a blocked call and a paused one). Test support only.
 */
import { z } from 'zod';
import { Gateway } from '../../mcp/gateway/gateway.js';
import { StoreRecorder } from '../../mcp/gateway/recorder.js';
import { clientFor, everythingSpec } from '../../mcp/test-support/harness.js';
import { ToolFailure } from '../../core/classify.js';
import { defineTool } from '../../runtime/define.js';
import { createGovernedRuntime } from '../../runtime/governed.js';
import { createRuntime } from '../../runtime/runtime.js';
import { createSession } from '../../runtime/session.js';
import type { Store } from '../../store/types.js';

export interface Filled {
  sessionId: string;
  /** Tool call id of the runtime failure the failure summary must find. */
  failingCallId: string;
  /** Approval id of the paused call. */
  approvalId: string;
  gatewayCalls: number;
  runtimeCalls: number;
}

export const lookup = defineTool({
  name: 'inventory_lookup',
  description: 'Looks up an item by SKU.',
  approvalMode: 'read_only',
  input: z.object({ sku: z.string() }),
  handler: async ({ sku }, ctx) => {
    if (sku.startsWith('missing')) throw new ToolFailure({ category: 'no-target', code: 'sku-not-found', detail: `No item with SKU ${sku}.` });
    ctx.artifact(`file:///var/inventory/${sku}.json`);
    return { sku, stock: sku.length * 3, bin: `B-${sku.length}` };
  },
});

export const purge = defineTool({
  name: 'inventory_purge',
  description: 'Deletes every item of a warehouse.',
  approvalMode: 'destructive',
  input: z.object({ warehouse: z.string() }),
  handler: async ({ warehouse }) => ({ purged: warehouse }),
});

export async function fillWithRealCalls(store: Store): Promise<Filled> {
  // MCP calls through the gateway.
  const recorder = new StoreRecorder(store);
  const gw = await Gateway.start({ upstreams: [everythingSpec({ prefix: 'ev_' })], recorder });
  const client = await clientFor(gw.createServer());
  let gatewayCalls = 0;
  try {
    for (const args of [{ message: 'one' }, { message: 'two' }, { message: 'three' }]) {
      await client.callTool({ name: 'ev_echo', arguments: args });
      gatewayCalls++;
    }
    await client.callTool({ name: 'ev_get-sum', arguments: { a: 2, b: 40 } });
    await client.callTool({ name: 'ev_get-sum', arguments: { a: 'two' } });
    gatewayCalls += 2;
  } finally {
    await client.close();
    await gw.close();
  }
  await recorder.flush();

  // Governed runtime calls in one session.
  const runtime = createRuntime({ tools: [lookup, purge] });
  const governed = createGovernedRuntime({
    runtime,
    store,
    principalChain: [
      { kind: 'user', id: 'u-7' },
      { kind: 'agent', id: 'agent-1' },
    ],
  });
  const session = createSession({ id: `sess-${Math.random().toString(36).slice(2, 10)}` });
  let runtimeCalls = 0;
  await governed.invoke('inventory_lookup', { sku: 'A-100' }, { session });
  await governed.invoke('inventory_lookup', { sku: 'B-2000' }, { session });
  const failed = await governed.invoke('inventory_lookup', { sku: 'missing-9' }, { session });
  runtimeCalls += 3;
  const paused = await governed.invoke('inventory_purge', { warehouse: 'north' }, { session, idempotencyKey: 'purge-north' });
  const blocked = await governed.invoke('inventory_purge', { warehouse: 'south' }, { session, requestedMode: 'read_only' });
  runtimeCalls += 2;
  await governed.flush();
  await governed.close();
  await session.close();
  if (failed.status !== 'error' || paused.status !== 'paused' || blocked.status !== 'blocked') {
    throw new Error(`unexpected outcomes: ${failed.status} ${paused.status} ${blocked.status}`);
  }
  return { sessionId: session.id, failingCallId: failed.toolCallId!, approvalId: paused.metadata!.approvalId as string, gatewayCalls, runtimeCalls };
}
