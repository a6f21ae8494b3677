/**
 * tool-envelope/runtime: define a tool once as a plain async function; every
 * call returns a canonical outcome, whatever happens inside it.
 */
export { ToolFailure, isToolFailure, classifyThrown, type ToolFailureInit } from 'tool-envelope/core';
export { ToolBinary, type ToolContext, type CallIdentity, type ProgressReport } from './context.js';
export { armedDeadlines } from './deadline.js';
export { defineTool, type ToolDefinition, type ToolSpec, type ToolHandler, type ToolAnnotations, type InferArgs } from './define.js';
export type { Invocation, RuntimeEvent, RuntimeEventMap, RuntimeListener } from './events.js';
export { newTraceId, newToolCallId, resolveCallIds, PROCESS_RUN_ID, type CallIds, type CallIdsInit } from './ids.js';
export {
  invokeTool,
  synthesizeOutcome,
  DEFAULT_INVOKE_ENV,
  type InvokeOptions,
  type InvokeEnv,
  type SynthesizeInit,
} from './invoke.js';
export { ToolRegistry, toListing, type ToolListing } from './registry.js';
export { createRuntime, type Runtime, type RuntimeOptions } from './runtime.js';
export { compileSchema, type ToolSchema, type JsonSchema, type Violation, type CheckResult, type Check, type CompiledSchema } from './schema.js';
export { Session, createSession, type SessionOptions } from './session.js';
export { isStandardSchema, type StandardSchemaV1 } from './standard-schema.js';
// Governance layered over invoke: the governed runtime, and the policy and idempotency names of
// src/governance that this entry point has always exported.
export * from './governed.js';
export * from '../governance/policy.js';
export * from '../governance/idempotency.js';
