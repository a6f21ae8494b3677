// The @example of each public entry point of tool-envelope/otel (see core.ts).
import { type GatewayGovernor, Gateway, type UpstreamSpec } from '../../src/mcp/index.js';
import { instrumentRuntime, traceGateway } from '../../src/otel/index.js';
import type { GovernedRuntime, Runtime } from '../../src/runtime/index.js';

export async function example_instrumentRuntime(runtime: Runtime, governed: GovernedRuntime, traceparent: string) {
  //#region instrumentRuntime
  const stop = instrumentRuntime(runtime); // spans go to the globally registered SDK, if any
  await governed.invoke('fs_read', { path: 'a' }, { metadata: { traceparent } });
  stop();
  //#endregion
}

export async function example_traceGateway(upstreams: UpstreamSpec[], policyGovernor: GatewayGovernor) {
  //#region traceGateway
  const gw = await Gateway.start({ upstreams, governor: traceGateway(policyGovernor) });
  //#endregion
  return gw;
}
