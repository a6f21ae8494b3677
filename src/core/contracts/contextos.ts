/**
 * ContextOS ToolEnvelope v1: the tool **call** envelope
 * (`contextos.tool_call.v1`, canonical {@link ToolCall}) and the tool
 * **result** envelope (`contextos.tool_result.v1`, canonical
 * {@link ToolOutcome}). The result's `error` is a plain string; structured
 * error fields and everything else without a result field ride in the open
 * `metadata` object under snake_case keys, lifted back only when that is
 * exactly reversible. Mapping tables: docs/contracts.md.
 */
import type { Issue } from '../errors.js';
import { type JsonObject, isJsonObject } from '../json.js';
import type { ContentBlock, PayloadPreview, ToolError, ToolOutcome, ToolWarning } from '../model.js';
import { type OutcomeStatus, isErrorCategory, isSuccessStatus } from '../taxonomy.js';
import { contextosPrincipalSchema, contextosSchema, contextosFast, contextosResultFast } from '../generated/core.js';
import type { AjvValidator, Contract, EncodeOptions, Loss } from './types.js';
import {
  DW14_FIELDS,
  DW_VERSION,
  carrier,
  checkWith,
  defineOwn,
  inferErrorCategory,
  informative,
  invalidEnvelope,
  isNullableObject,
  isNullableString,
  isWarningArray,
  lose,
  owns,
} from './wire.js';
import { CONTEXTOS_CALL_VERSION, type ContextosToolCall } from './contextos-call.js';
import { parseSafeMutationReference, safeMutationReference } from './safe-mutation.js';

export * from './contextos-call.js';
export { contextosSchema, contextosPrincipalSchema };

const unionFast = contextosFast as unknown as AjvValidator;
const resultFast = contextosResultFast as unknown as AjvValidator;

/** The result envelope marker. */
export const CONTEXTOS_RESULT_VERSION = 'contextos.tool_result.v1';

/** A ContextOS tool result envelope. */
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

/** Either ContextOS envelope (the schema's top-level union). */
export type ContextosEnvelope = ContextosToolCall | ContextosToolResult;

/** Fast check against the whole schema (call **or** result envelope). */
export function validateContextos(doc: unknown): doc is ContextosEnvelope {
  return unionFast(doc);
}

/**
 * Every violation of the whole schema. When the `envelope_version` marker says
 * which envelope the document means, the issues are that envelope's (the
 * union's other branch adds nothing but noise); otherwise the union's.
 */
export function checkContextos(doc: unknown): Issue[] {
  if (unionFast(doc)) return [];
  const marker = isJsonObject(doc) ? doc.envelope_version : undefined;
  if (marker === CONTEXTOS_CALL_VERSION) return checkWith('contextosCallFull', doc);
  if (marker === CONTEXTOS_RESULT_VERSION) return checkWith('contextosResultFull', doc);
  return checkWith('contextosFull', doc);
}

/** Fast check of a result envelope. */
export function validateContextosResult(doc: unknown): doc is ContextosToolResult {
  return resultFast(doc);
}

/** Every violation of the result envelope schema. */
export function checkContextosResult(doc: unknown): Issue[] {
  return checkWith('contextosResultFull', doc);
}

const DW14_BY_KEY = new Map(DW14_FIELDS.map(([field, key, accepts]) => [key, { field, accepts }]));

/** `metadata.error` keys and the canonical error fields they carry. */
const ERROR_FIELDS: readonly (readonly [keyof ToolError, string, (v: unknown) => boolean])[] = [
  ['code', 'code', isNullableString],
  ['reason', 'reason', isNullableString],
  ['remediation', 'remediation', isNullableString],
  ['retryable', 'retryable', (v) => v === null || typeof v === 'boolean'],
  ['retryAfterMs', 'retry_after_ms', (v) => typeof v === 'number'],
  ['details', 'details', isNullableObject],
  ['lastObservation', 'last_observation', isNullableObject],
  ['partialResult', 'partial_result', isNullableObject],
  ['extensions', 'extensions', isJsonObject],
];
const ERROR_FIELD_BY_KEY = new Map(ERROR_FIELDS.map(([field, key, accepts]) => [key, { field, accepts }]));

/**
 * Lifts `metadata.error` into canonical error fields when it has exactly the
 * shape the encoder writes (known keys, right types, at least one key);
 * `undefined` when it must stay opaque.
 */
function liftError(me: unknown): Partial<ToolError> | undefined {
  if (!isJsonObject(me)) return undefined;
  const lifted: Partial<ToolError> = {};
  let any = false;
  for (const key of Object.keys(me)) {
    const v = me[key];
    any = true;
    if (key === 'category') {
      if (!isErrorCategory(v)) return undefined;
      lifted.category = v;
      continue;
    }
    const spec = ERROR_FIELD_BY_KEY.get(key);
    if (!spec?.accepts(v)) return undefined;
    (lifted as Record<string, unknown>)[spec.field] = v;
  }
  return any ? lifted : undefined;
}

function liftPreview(v: unknown): PayloadPreview | undefined {
  if (!isJsonObject(v)) return undefined;
  const p: PayloadPreview = {};
  let any = false;
  for (const key of Object.keys(v)) {
    const x = v[key];
    any = true;
    if (key === 'text' && isNullableString(x)) p.text = x;
    else if (key === 'truncated' && typeof x === 'boolean') p.truncated = x;
    else if (key === 'limit_bytes' && Number.isInteger(x) && (x as number) >= 0) p.limitBytes = x as number;
    else return undefined;
  }
  return any ? p : undefined;
}

function isContentArray(v: unknown): v is ContentBlock[] {
  if (!Array.isArray(v)) return false;
  for (const b of v) if (!isJsonObject(b) || typeof b.type !== 'string') return false;
  return true;
}

/**
 * Result envelope → canonical outcome. The ids, status, `latency_ms`,
 * `policy_decision_id`, lists map one to one; `output` becomes `result`
 * (unwrapped when `metadata.output_wrapped` is `true` and `output` is
 * `{value: <non-object>}`; an empty `output` of a failure status is no
 * result); `error` (string) becomes `error.detail`; `metadata.error`,
 * `metadata.warnings`, `metadata.preview`, `metadata.content`,
 * `metadata.schema_version`, `metadata.meta`, `metadata.extensions` are
 * lifted when their shape allows an exact round trip. A stated
 * `metadata.error.category` is kept; otherwise the category is inferred
 * (`categoryInferred: true`).
 */
export function decodeContextosResult(doc: unknown): ToolOutcome {
  if (!validateContextosResult(doc)) invalidEnvelope('ContextOS tool result envelope', checkContextosResult(doc));
  const d = doc as ContextosToolResult;
  const status = d.status;
  const out: ToolOutcome = {
    status,
    toolCallId: d.tool_call_id,
    runId: d.run_id,
    traceId: d.trace_id,
    capabilityId: d.capability_id,
    latencyMs: d.latency_ms,
    artifacts: d.artifacts,
    citations: d.citations,
    mutations: d.mutations,
    riskTags: d.risk_tags,
  };
  if (d.session_id !== undefined) out.sessionId = d.session_id;
  if (d.policy_decision_id !== undefined) out.policyDecisionId = d.policy_decision_id;
  const output = d.output;
  let structured: Partial<ToolError> | undefined;
  let wrapped = false;
  if (d.metadata !== undefined) {
    const md = d.metadata;
    const rest: JsonObject = {};
    for (const key of Object.keys(md)) {
      const v = md[key];
      let lifted = false;
      switch (key) {
        case 'error':
          structured = liftError(v);
          lifted = structured !== undefined;
          break;
        case 'warnings':
          if ((lifted = isWarningArray(v))) out.warnings = v as ToolWarning[];
          break;
        case 'preview': {
          const p = liftPreview(v);
          if ((lifted = p !== undefined)) out.preview = p;
          break;
        }
        case 'content':
          if ((lifted = isContentArray(v))) out.content = v as ContentBlock[];
          break;
        case 'schema_version':
          if ((lifted = typeof v === 'number' && v !== DW_VERSION)) out.schemaVersion = v as number;
          break;
        case 'meta':
          if ((lifted = isJsonObject(v) && informative(v))) out.meta = v as JsonObject;
          break;
        case 'extensions':
          if ((lifted = isJsonObject(v) && informative(v))) out.extensions = v as JsonObject;
          break;
        case 'output_wrapped':
          lifted = wrapped = v === true && isWrapped(output);
          break;
        default: {
          const v14 = DW14_BY_KEY.get(key);
          // A mutation a reference can hold is written in `mutations`, never here: such a key is the document's own.
          lifted = v14?.accepts(v) === true && (key !== 'mutation' || safeMutationReference(v as JsonObject | null) === undefined);
          if (lifted) (out as unknown as Record<string, unknown>)[v14!.field] = v;
        }
      }
      if (!lifted) defineOwn(rest, key, v);
    }
    out.metadata = rest;
  }
  const mutations = d.mutations;
  // A `metadata.mutation` key of any value means the encoder did not write a reference (see encodeContextosResult).
  const last = mutations.length > 0 && !owns(d.metadata, 'mutation') ? parseSafeMutationReference(mutations[mutations.length - 1]!) : undefined;
  if (last !== undefined) {
    // The encoder writes the reference last: only a last one is lifted, so the list comes back in its order.
    out.safeMutation = last;
    out.mutations = mutations.slice(0, -1);
  }
  if (wrapped) out.result = output.value;
  else if (isSuccessStatus(status) || informative(output)) out.result = output;
  if (structured) {
    const error = structured as ToolError;
    if (error.category === undefined) {
      error.category = inferErrorCategory(status, error.code, error.reason, d.error);
      error.categoryInferred = true;
    }
    if (d.error !== undefined) error.detail = d.error;
    out.error = error;
  } else if (typeof d.error === 'string') {
    out.error = { category: inferErrorCategory(status, d.error), categoryInferred: true, detail: d.error };
  } else if (d.error === null) {
    out.error = null;
  }
  return out;
}

/** True when `output` is exactly `{value: <JSON that is not a plain object>}`, as the encoder wraps. */
function isWrapped(output: JsonObject): output is { value: Exclude<JsonObject[string], JsonObject> } {
  if (!owns(output, 'value') || isJsonObject(output.value)) return false;
  for (const key in output) if (key !== 'value') return false;
  return true;
}

function encodeStructuredError(e: ToolError): JsonObject | undefined {
  let me: JsonObject | undefined;
  if (e.categoryInferred !== true) me = { category: e.category };
  for (const [field, key] of ERROR_FIELDS) {
    const v = e[field];
    if (v === undefined) continue;
    me ??= {};
    me[key] = v as JsonObject[string];
  }
  return me;
}

const ID_FIELDS = [
  ['toolCallId', 'tool_call_id'],
  ['runId', 'run_id'],
  ['traceId', 'trace_id'],
  ['capabilityId', 'capability_id'],
] as const;

function encodeLatency(latency: number | undefined, losses: Loss[] | undefined): number {
  if (latency === undefined) {
    lose(losses, '/latencyMs', 'missing-latency', 'ContextOS requires latency_ms; wrote 0');
    return 0;
  }
  if (Number.isInteger(latency) && latency >= 0) return latency;
  const fixed = Number.isFinite(latency) ? Math.max(0, Math.round(latency)) : 0;
  lose(losses, '/latencyMs', 'not-representable', `ContextOS latency_ms is a non-negative integer; wrote ${fixed}`);
  return fixed;
}

/**
 * Canonical outcome → result envelope. Required fields the outcome lacks are
 * filled (ids `''` with a `missing-required-id` loss each, `latency_ms` 0 with
 * a `missing-latency` loss, lists `[]`, `output` `{}`); a non-object result
 * is wrapped as `{value}` with `metadata.output_wrapped: true` (reversible, no
 * loss); structured error fields, warnings and the DW specifics go to
 * `metadata` (see docs/contracts.md).
 *
 * @example
 * ```ts
 * const losses: Loss[] = [];
 * encodeContextosResult(failure(toolError('timeout', 'wait-timeout', 'Waited 5 s')), { losses }).error; // 'Waited 5 s'
 * ```
 */
export function encodeContextosResult(outcome: ToolOutcome, options?: EncodeOptions): ContextosToolResult {
  const losses = options?.losses;
  const ids: Record<string, string> = {};
  for (const [field, key] of ID_FIELDS) {
    const v = outcome[field];
    if (v === undefined) lose(losses, '/' + field, 'missing-required-id', `ContextOS requires ${key}; wrote ""`);
    ids[key] = v ?? '';
  }
  const metadata = carrier(outcome.metadata, '/metadata', losses);
  // With a `mutation` key of its own in the metadata bag, the mutation goes there as before (a key-conflict).
  const mutationRef = owns(outcome.metadata, 'mutation') ? undefined : safeMutationReference(outcome.safeMutation);
  const result = outcome.result;
  let output: JsonObject;
  if (result === undefined) output = {};
  else if (isJsonObject(result)) output = result;
  else {
    output = { value: result };
    metadata.put('output_wrapped', true);
  }
  const doc: ContextosToolResult = {
    envelope_version: CONTEXTOS_RESULT_VERSION,
    tool_call_id: ids.tool_call_id!,
    run_id: ids.run_id!,
    trace_id: ids.trace_id!,
    capability_id: ids.capability_id!,
    status: outcome.status,
    output,
    artifacts: outcome.artifacts ?? [],
    citations: outcome.citations ?? [],
    mutations: mutationRef === undefined ? (outcome.mutations ?? []) : [...(outcome.mutations ?? []), mutationRef],
    risk_tags: outcome.riskTags ?? [],
    latency_ms: encodeLatency(outcome.latencyMs, losses),
  };
  if (typeof outcome.sessionId === 'string') doc.session_id = outcome.sessionId;
  if (outcome.policyDecisionId !== undefined) doc.policy_decision_id = outcome.policyDecisionId;
  const error = outcome.error;
  if (error === null) doc.error = null;
  else if (error !== undefined) {
    if (error.detail !== undefined) doc.error = error.detail;
    const me = encodeStructuredError(error);
    if (me) metadata.put('error', me);
  }
  if (outcome.warnings !== undefined) metadata.put('warnings', outcome.warnings);
  const preview = outcome.preview;
  if (preview && (preview.text !== undefined || preview.truncated !== undefined || preview.limitBytes !== undefined)) {
    const p: JsonObject = {};
    if (preview.text !== undefined) p.text = preview.text;
    if (preview.truncated !== undefined) p.truncated = preview.truncated;
    if (preview.limitBytes !== undefined) p.limit_bytes = preview.limitBytes;
    metadata.put('preview', p);
  }
  if (outcome.content !== undefined) metadata.put('content', outcome.content);
  // The DW defaults (version 1, no meta, no extra properties) are not worth a key.
  if (outcome.schemaVersion !== undefined && outcome.schemaVersion !== DW_VERSION) {
    metadata.put('schema_version', outcome.schemaVersion);
  }
  if (informative(outcome.meta)) metadata.put('meta', outcome.meta);
  if (informative(outcome.extensions)) metadata.put('extensions', outcome.extensions);
  for (const [field, key] of DW14_FIELDS) {
    const v = outcome[field];
    if (v !== undefined && (field !== 'safeMutation' || mutationRef === undefined)) metadata.put(key, v);
  }
  const md = metadata.done();
  if (md !== undefined) doc.metadata = md;
  return doc;
}

/**
 * The ContextOS result contract object (for the `contracts` registry):
 * `validate`/`check` are the result envelope's; {@link validateContextos} is the whole union.
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

/** Alias of {@link decodeContextosResult}. */
export const decodeContextos = decodeContextosResult;

/** Alias of {@link encodeContextosResult}. */
export const encodeContextos = encodeContextosResult;
