/**
 * tool-envelope/otel: OpenTelemetry traces of tool calls through
 * `@opentelemetry/api` (GenAI semantic conventions: one `execute_tool {tool}`
 * span per invocation). Without an OpenTelemetry SDK registered it costs
 * nothing: the API hands out non-recording spans and no attribute is built.
 */
export { ATTR, TRACER_NAME, endToolSpan, globalTracingEnabled, instrumentRuntime, startToolSpan, traceGateway, type TracingOptions } from './instrument.js';
export { contextFromTraceparent, formatTraceparent, parseTraceparent, traceHeadersFromMeta } from './traceparent.js';
