/**
 * tool-envelope/mcp: envelopes on MCP with the official SDK. A gateway that
 * wraps every tool result of any MCP server in the chosen contract, a reader
 * that turns any tool result into a canonical outcome, and helpers to publish
 * envelope tools.
 *
 * @example
 * ```ts
 * import { Gateway, serveHttp, readToolResult } from 'tool-envelope/mcp';
 * const gw = await Gateway.start({ upstreams: [{ name: 'memory', command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] }] });
 * const http = await serveHttp(() => gw.createServer(), { port: 3333 });
 * ```
 */
export * from './envelope.js';
export * from './reader.js';
export * from './upstream.js';
export * from './gateway.js';
export type { GatewayOptions } from './gateway-options.js';
export type { ConfirmReply, ConfirmRound, GatewayCall, GatewayGovernor, GatewayRecorder } from './gateway-types.js';
export { faultOutcome } from './gateway-faults.js';
export { META_KEYS, rpcError, traceIdFrom } from './meta.js';
export { requestTooLarge } from './guards.js';
export * from './governance.js';
export * from './http.js';
export * from './fetch.js';
export * from './stdio.js';
export * from './recorder.js';
export * from './config.js';
export * from './server-adapter.js';
export * from './env.js';
export * from './output-schema.js';
export * from './binary.js';
export * from './result-size.js';
