/**
 * ContextOS ToolEnvelope v1: the tool **call** envelope
 * (`contextos.tool_call.v1`, canonical {@link ToolCall}) and the tool
 * **result** envelope (`contextos.tool_result.v1`, canonical
 * {@link ToolOutcome}). The result's `error` is a plain string; structured
 * error fields and everything else without a result field ride in the open
 * `metadata` object under snake_case keys, lifted back only when that is
 * exactly reversible. Mapping tables: docs/contracts.md.
 *
 * @example
 * ```ts
 * import { encodeContextosResult } from 'tool-envelope/core';
 * encodeContextosResult({ status: 'ok', result: { n: 1 }, toolCallId: 'c1', runId: 'r1', traceId: 't1',
 *   capabilityId: 'fs.read', latencyMs: 12 });
 * ```
 */
import type { Contract } from './contract.js';
import type { Issue } from './errors.js';
import { type JsonObject, isJsonObject } from './json.js';
import type { Principal, ToolCall, ToolOutcome } from './model.js';
import type { ApprovalMode, OutcomeStatus } from './taxonomy.js';
import { contextosPrincipalSchema, contextosSchema } from './generated/schemas.js';
import { type FastValidators, loadFastValidators } from './validators.js';
import { checkWith } from './wire.js';

import { decodeContextosCall, decodeContextosResult, encodeContextosCall, encodeContextosResult } from './contextos-codec.js';

export { contextosSchema, contextosPrincipalSchema, decodeContextosCall, decodeContextosResult, encodeContextosCall, encodeContextosResult };

let validators: FastValidators['contextos'] | undefined;
const fast = (): FastValidators['contextos'] => (validators ??= loadFastValidators('contextos'));

/**
 * The call envelope marker.
 *
 * @example
 * ```ts
 * CONTEXTOS_CALL_VERSION; // 'contextos.tool_call.v1'
 * ```
 */
export const CONTEXTOS_CALL_VERSION = 'contextos.tool_call.v1';

/**
 * The result envelope marker.
 *
 * @example
 * ```ts
 * CONTEXTOS_RESULT_VERSION; // 'contextos.tool_result.v1'
 * ```
 */
export const CONTEXTOS_RESULT_VERSION = 'contextos.tool_result.v1';

/**
 * A ContextOS principal (`{kind, id, tenant_id?, display?}`, closed).
 *
 * @example
 * ```ts
 * const p: ContextosPrincipal = { kind: 'agent', id: 'a1' };
 * ```
 */
export type ContextosPrincipal = Principal;

/**
 * A ContextOS tool call envelope.
 *
 * @example
 * ```ts
 * const call: ContextosToolCall = encodeContextosCall(toolCall);
 * ```
 */
export interface ContextosToolCall {
  envelope_version: typeof CONTEXTOS_CALL_VERSION;
  tool_call_id: string;
  run_id: string;
  trace_id: string;
  session_id?: string;
  capability_id: string;
  args: JsonObject;
  principal_chain: ContextosPrincipal[];
  approval_mode_requested: ApprovalMode;
  approval_mode_effective: ApprovalMode;
  approval_mode_highest: ApprovalMode;
  policy_decision_id?: string | null;
  evidence_refs: string[];
  idempotency_key?: string | null;
  auth_ref?: string | null;
  metadata?: JsonObject;
}

/**
 * A ContextOS tool result envelope.
 *
 * @example
 * ```ts
 * const doc: ContextosToolResult = encodeContextosResult(outcome);
 * ```
 */
export interface ContextosToolResult {
  envelope_version: typeof CONTEXTOS_RESULT_VERSION;
  tool_call_id: string;
  run_id: string;
  trace_id: string;
  session_id?: string;
  capability_id: string;
  status: OutcomeStatus;
  output: JsonObject;
  error?: string | null;
  artifacts: string[];
  citations: JsonObject[];
  mutations: string[];
  risk_tags: string[];
  policy_decision_id?: string | null;
  latency_ms: number;
  metadata?: JsonObject;
}

/**
 * Either ContextOS envelope (the schema's top-level union).
 *
 * @example
 * ```ts
 * const env: ContextosEnvelope = { ...resultDoc };
 * ```
 */
export type ContextosEnvelope = ContextosToolCall | ContextosToolResult;

/**
 * Fast check against the whole schema (call **or** result envelope).
 *
 * @example
 * ```ts
 * validateContextos(encodeContextosCall(call)); // true
 * ```
 */
export function validateContextos(doc: unknown): doc is ContextosEnvelope {
  return fast().contextosFast(doc);
}

/**
 * Every violation of the whole schema. When the `envelope_version` marker says
 * which envelope the document means, the issues are that envelope's (the
 * union's other branch adds nothing but noise); otherwise the union's.
 *
 * @example
 * ```ts
 * checkContextos({ envelope_version: 'contextos.tool_result.v1' }); // required issues of the result envelope
 * ```
 */
export function checkContextos(doc: unknown): Issue[] {
  if (fast().contextosFast(doc)) return [];
  const marker = isJsonObject(doc) ? doc.envelope_version : undefined;
  if (marker === CONTEXTOS_CALL_VERSION) return checkWith('contextosCallFull', doc);
  if (marker === CONTEXTOS_RESULT_VERSION) return checkWith('contextosResultFull', doc);
  return checkWith('contextosFull', doc);
}

/**
 * Fast check of a call envelope.
 *
 * @example
 * ```ts
 * validateContextosCall({ envelope_version: 'contextos.tool_call.v1' }); // false
 * ```
 */
export function validateContextosCall(doc: unknown): doc is ContextosToolCall {
  return fast().contextosCallFast(doc);
}

/**
 * Every violation of the call envelope schema.
 *
 * @example
 * ```ts
 * checkContextosCall({}).length > 0; // true
 * ```
 */
export function checkContextosCall(doc: unknown): Issue[] {
  return checkWith('contextosCallFull', doc);
}

/**
 * Fast check of a result envelope.
 *
 * @example
 * ```ts
 * validateContextosResult(encodeContextosResult(success({}))); // true
 * ```
 */
export function validateContextosResult(doc: unknown): doc is ContextosToolResult {
  return fast().contextosResultFast(doc);
}

/**
 * Every violation of the result envelope schema.
 *
 * @example
 * ```ts
 * checkContextosResult({ envelope_version: 'contextos.tool_result.v1' }); // required: tool_call_id, ...
 * ```
 */
export function checkContextosResult(doc: unknown): Issue[] {
  return checkWith('contextosResultFull', doc);
}

/**
 * The ContextOS result contract object (for the `contracts` registry):
 * `validate`/`check` are the result envelope's; {@link validateContextos} is the whole union.
 *
 * @example
 * ```ts
 * contextosContract.validate(contextosContract.encode(success({}))); // true
 * ```
 */
export const contextosContract: Contract<ContextosToolResult> = {
  id: 'contextos',
  title: 'ContextOS ToolEnvelope v1 result',
  schema: contextosSchema,
  validate: validateContextosResult,
  check: checkContextosResult,
  decode: decodeContextosResult,
  encode: encodeContextosResult,
};

/**
 * Alias of {@link decodeContextosResult}.
 *
 * @example
 * ```ts
 * decodeContextos(doc).status;
 * ```
 */
export const decodeContextos = decodeContextosResult;

/**
 * Alias of {@link encodeContextosResult}.
 *
 * @example
 * ```ts
 * encodeContextos(outcome).envelope_version; // 'contextos.tool_result.v1'
 * ```
 */
export const encodeContextos = encodeContextosResult;
