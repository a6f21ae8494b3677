// Gateways compared in the same run (bench/observe.bench.mjs, bench/console-live.bench.mjs): each
// contender is `{ label, args, ... }`; starting one sets its `child`, `url` and `client` on it.
import { startGatewayHttp, stop } from './gateway.bench.mjs';

/**
 * Starts each contender's `tool-envelope gateway --http` (its `args`) in turn and connects a client
 * (`connectClient(url)`). `child` is set as soon as the process is up, so `stopContenders` ends
 * every one started even when a later start or connect throws.
 */
export async function startContenders(contenders, connectClient) {
  for (const c of contenders) {
    const g = await startGatewayHttp(c.args);
    c.child = g.child;
    c.url = g.url;
    c.client = await connectClient(g.url);
  }
}

/** Closes the contenders' clients, then stops their gateways and waits until they are gone. */
export async function stopContenders(contenders) {
  for (const c of contenders) await c.client?.close().catch(() => {});
  for (const c of contenders) if (c.child) await stop(c.child);
}
