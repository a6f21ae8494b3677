/**
 * tool-envelope/mcp: envelopes on MCP with the official SDK. A gateway that
 * wraps every tool result of any MCP server in the chosen contract, a reader
 * that turns any tool result into a canonical outcome, and helpers to publish
 * envelope tools.
 */
export * from './envelope.js';
export * from './reader.js';
export * from './upstream/upstream.js';
export * from './gateway/gateway.js';
export type { GatewayOptions } from './gateway/options.js';
export type { ConfirmReply, ConfirmRound, GatewayCall, GatewayGovernor, GatewayRecorder } from './call.js';
export { faultOutcome } from './upstream/fault-outcomes.js';
export { META_KEYS } from './wire/meta-keys.js';
export { rpcError } from './wire/rpc-errors.js';
export { traceIdFrom } from './wire/trace-id.js';
export {
  TOOL_FAILURE_CATEGORY_META_KEY,
  TOOL_FAILURE_META_KEY,
  canonicalErrorOfToolFailure,
  toolFailureMetaOf,
  toolFailureOf,
  type ToolFailureMeta,
} from './wire/tool-failure.js';
export { requestTooLarge } from './upstream/request-size.js';
export * from './gateway/governor.js';
export * from './serve/http.js';
export * from './upstream/fetch.js';
export * from './serve/stdio.js';
export * from './upstream/child-process.js';
export * from './wire/message.js';
export * from './gateway/recorder.js';
export * from './gateway/config.js';
export * from './server-adapter.js';
export * from './upstream/env.js';
export * from './gateway/output-schema.js';
export * from './binary.js';
export * from './wire/result-size.js';
