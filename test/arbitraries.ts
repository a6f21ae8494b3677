/**
 * fast-check arbitraries shared by the property tests: JSON values with
 * hostile keys and astral characters, canonical outcomes and calls, and wire
 * documents valid by construction for each contract (including unknown extra
 * properties where a schema allows them, null vs absent, and documents that
 * use the keys the encoders carry canonical fields under, with other shapes),
 * plus invalid documents made by mutation.
 *
 * @example
 * ```ts
 * import fc from 'fast-check';
 * import { dwDoc } from '../../test/arbitraries.js';
 * fc.assert(fc.property(dwDoc, (doc) => validateDw(doc)), { numRuns: 1000 });
 * ```
 */
import fc from 'fast-check';
import { APPROVAL_MODES, ERROR_CATEGORIES, FOUNDING_MCEC_CATEGORIES, OUTCOME_STATUSES } from '../src/core/taxonomy.js';
import type { JsonObject, JsonValue } from '../src/core/json.js';
import type { ContentBlock, ToolCall, ToolError, ToolOutcome, ToolWarning } from '../src/core/model.js';

/**
 * Keys that break code which assigns untrusted keys on plain objects.
 *
 * @example
 * ```ts
 * fc.sample(hostileKey, 1); // e.g. ['__proto__']
 * ```
 */
export const hostileKey = fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf');

/**
 * Short strings over all of Unicode (astral planes included).
 *
 * @example
 * ```ts
 * fc.sample(text, 1); // e.g. ['😀x']
 * ```
 */
export const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 10 }) },
  { weight: 1, arbitrary: fc.constantFrom('', '😀', '𝄞 clef', 'é', 'timeout', 'not_found', 'a/b~c') },
);

/**
 * Object keys: hostile, pointer-special, or any text.
 *
 * @example
 * ```ts
 * fc.dictionary(anyKey, jsonValue);
 * ```
 */
export const anyKey = fc.oneof(
  { weight: 1, arbitrary: hostileKey },
  { weight: 1, arbitrary: fc.constantFrom('value', 'a/b', 'x~y', '', 'type', 'status', 'error') },
  { weight: 4, arbitrary: text },
);

const primitive: fc.Arbitrary<JsonValue> = fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), text);

/** `fc.record` building plain objects (Object.prototype), as JSON.parse does. */
function rec<R extends Record<string, fc.Arbitrary<unknown>>>(
  model: R,
  options?: { requiredKeys?: (keyof R)[] },
): fc.Arbitrary<{ [K in keyof R]: R[K] extends fc.Arbitrary<infer T> ? T : never }> {
  return fc.record(model, { requiredKeys: (options?.requiredKeys ?? Object.keys(model)) as never, noNullPrototype: true }) as never;
}

/** Builds objects the way JSON.parse does: own data properties, Object.prototype, hostile keys as plain keys. */
function objectOf<T>(key: fc.Arbitrary<string>, value: fc.Arbitrary<T>, maxKeys = 4): fc.Arbitrary<Record<string, T>> {
  return fc.dictionary(key, value, { maxKeys, noNullPrototype: true });
}

const tree = fc.letrec<{ value: JsonValue; array: JsonValue[]; object: JsonObject }>((tie) => ({
  value: fc.oneof({ maxDepth: 3, depthSize: 'small' }, primitive, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 3 }),
  object: objectOf(anyKey, tie('value'), 4),
}));

/**
 * Any JSON value (small, nested up to 3 levels, hostile keys, astral text).
 *
 * @example
 * ```ts
 * fc.assert(fc.property(jsonValue, (v) => JSON.parse(JSON.stringify(v)) !== undefined));
 * ```
 */
export const jsonValue: fc.Arbitrary<JsonValue> = tree.value;
/**
 * Any JSON object.
 *
 * @example
 * ```ts
 * fc.sample(jsonObject, 1); // e.g. [{ '__proto__': 1 }]
 * ```
 */
export const jsonObject: fc.Arbitrary<JsonObject> = tree.object;
/**
 * Any JSON value that is not a plain object.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(jsonNonObject, (v) => encodeMcec(success(v)).result !== v));
 * ```
 */
export const jsonNonObject: fc.Arbitrary<JsonValue> = fc.oneof(primitive, tree.array);

/**
 * `x`, or null.
 *
 * @example
 * ```ts
 * nullable(text); // a string or null
 * ```
 */
export function nullable<T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> {
  return fc.option(arb, { nil: null, freq: 3 });
}

/** `right` (the shape a carried key needs to be lifted) or any JSON value (must stay opaque). */
function rightOrAny<T>(right: fc.Arbitrary<T>): fc.Arbitrary<T | JsonValue> {
  return fc.oneof({ weight: 3, arbitrary: right as fc.Arbitrary<T | JsonValue> }, { weight: 1, arbitrary: jsonValue });
}

/** Extra properties whose keys avoid `known`. */
function extras(known: readonly string[], maxKeys = 3): fc.Arbitrary<JsonObject> {
  const set = new Set(known);
  return objectOf(
    anyKey.filter((k) => !set.has(k)),
    jsonValue,
    maxKeys,
  );
}

/** Merges extras under a record without assignment (hostile keys stay own data). */
function withExtras<T extends object>(record: fc.Arbitrary<T>, extra: fc.Arbitrary<JsonObject>): fc.Arbitrary<T> {
  return fc.tuple(record, extra).map(([r, x]) => ({ ...x, ...r }));
}

/** An object of entries drawn from `entry` with unique keys (built with fromEntries: hostile keys stay data). */
function bagOf(entry: fc.Arbitrary<[string, unknown]>, maxLength = 5): fc.Arbitrary<JsonObject> {
  return fc.uniqueArray(entry, { selector: (e) => e[0], maxLength }).map((entries) => Object.fromEntries(entries) as JsonObject);
}

const category = fc.constantFrom(...ERROR_CATEGORIES);
const foundingCategory = fc.constantFrom(...FOUNDING_MCEC_CATEGORIES);
const status = fc.constantFrom(...OUTCOME_STATUSES);

/**
 * A canonical warning.
 *
 * @example
 * ```ts
 * fc.sample(toolWarning, 1); // [{ code: '...', detail: '...' }]
 * ```
 */
export const toolWarning: fc.Arbitrary<ToolWarning> = rec({ code: text, detail: text });

/**
 * An MCP content block, sometimes one DW cannot carry (non-string text).
 *
 * @example
 * ```ts
 * fc.array(contentBlock, { maxLength: 2 });
 * ```
 */
export const contentBlock: fc.Arbitrary<ContentBlock> = fc.oneof(
  { weight: 4, arbitrary: rec({ type: text, text: nullable(text), mimeType: nullable(text), data: text }, { requiredKeys: ['type'] }) },
  { weight: 1, arbitrary: rec({ type: text, text: fc.integer() }) },
) as fc.Arbitrary<ContentBlock>;

/**
 * A canonical error: every category, nulls vs absents, extensions with hostile keys.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(toolError, (e) => isErrorCategory(e.category)));
 * ```
 */
export const toolError: fc.Arbitrary<ToolError> = rec(
  {
    category,
    categoryInferred: fc.boolean(),
    code: nullable(text),
    detail: nullable(text),
    reason: nullable(text),
    remediation: nullable(text),
    retryable: nullable(fc.boolean()),
    retryAfterMs: fc.nat(),
    details: nullable(jsonObject),
    lastObservation: nullable(jsonObject),
    partialResult: nullable(jsonObject),
    extensions: extras([], 3),
    verbatim: fc.boolean(),
  },
  { requiredKeys: ['category'] },
);

/**
 * A canonical outcome: all statuses, any result, every optional field present or absent.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(toolOutcome, (o) => validateDw(encodeDw(o))));
 * ```
 */
export const toolOutcome: fc.Arbitrary<ToolOutcome> = rec(
  {
    status,
    result: jsonValue,
    warnings: fc.array(toolWarning, { maxLength: 3 }),
    error: nullable(toolError),
    sessionId: nullable(text),
    runId: text,
    traceId: text,
    toolCallId: text,
    capabilityId: text,
    policyDecisionId: nullable(text),
    latencyMs: fc.oneof({ weight: 5, arbitrary: fc.nat() }, { weight: 1, arbitrary: fc.double() }),
    artifacts: fc.array(text, { maxLength: 3 }),
    citations: fc.array(jsonObject, { maxLength: 2 }),
    mutations: fc.array(text, { maxLength: 3 }),
    riskTags: fc.array(text, { maxLength: 3 }),
    metadata: jsonObject,
    preview: rec({ text: nullable(text), truncated: fc.boolean(), limitBytes: fc.nat() }, { requiredKeys: [] }),
    content: fc.array(contentBlock, { maxLength: 2 }),
    schemaVersion: fc.oneof(fc.integer({ min: 1 }), fc.integer({ min: -3, max: 0 })),
    meta: jsonObject,
    rootCause: nullable(jsonObject),
    remediationPlan: nullable(jsonObject),
    nextActions: fc.array(jsonObject, { maxLength: 2 }),
    safeMutation: nullable(jsonObject),
    extensions: jsonObject,
  },
  { requiredKeys: ['status'] },
);

const principal = rec(
  { kind: fc.constantFrom('user', 'service', 'agent', 'automation'), id: text, tenant_id: text, display: text },
  { requiredKeys: ['kind', 'id'] },
) as fc.Arbitrary<ToolCall['principalChain'][number]>;
const approvalMode = fc.constantFrom(...APPROVAL_MODES);

/**
 * A canonical ContextOS tool call.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(toolCall, (c) => validateContextosCall(encodeContextosCall(c))));
 * ```
 */
export const toolCall: fc.Arbitrary<ToolCall> = rec(
  {
    toolCallId: text,
    runId: text,
    traceId: text,
    sessionId: text,
    capabilityId: text,
    args: jsonObject,
    principalChain: fc.array(principal, { maxLength: 3 }),
    approvalModeRequested: approvalMode,
    approvalModeEffective: approvalMode,
    approvalModeHighest: approvalMode,
    policyDecisionId: nullable(text),
    evidenceRefs: fc.array(text, { maxLength: 3 }),
    idempotencyKey: nullable(text),
    authRef: nullable(text),
    metadata: jsonObject,
  },
  {
    requiredKeys: [
      'toolCallId',
      'runId',
      'traceId',
      'capabilityId',
      'args',
      'principalChain',
      'approvalModeRequested',
      'approvalModeEffective',
      'approvalModeHighest',
      'evidenceRefs',
    ],
  },
);

// ---------------------------------------------------------------- wire documents

const warning = rec({ code: text, detail: text });

/**
 * A valid MCEC error object.
 *
 * @example
 * ```ts
 * fc.sample(mcecErrorDoc, 1); // [{ code, category, detail, ... }]
 * ```
 */
export const mcecErrorDoc = rec(
  { code: text, category: foundingCategory, detail: text, lastObservation: nullable(jsonObject), partialResult: nullable(jsonObject) },
  { requiredKeys: ['code', 'category', 'detail'] },
);

/**
 * A valid MCEC 2026-07 error object (the twelve categories, the OCR ones often).
 *
 * @example
 * ```ts
 * fc.sample(mcec202607ErrorDoc, 1); // [{ code, category: 'ocr-blank', detail }]
 * ```
 */
export const mcec202607ErrorDoc = rec(
  {
    code: text,
    category: fc.oneof(category, fc.constantFrom('ocr-blank', 'ocr-no-text')),
    detail: text,
    lastObservation: nullable(jsonObject),
    partialResult: nullable(jsonObject),
  },
  { requiredKeys: ['code', 'category', 'detail'] },
);

const mcecBase = { sessionId: nullable(text), result: nullable(jsonObject), warnings: fc.array(warning, { maxLength: 3 }) };

/**
 * A valid MCEC document (closed: no extra properties anywhere).
 *
 * @example
 * ```ts
 * fc.assert(fc.property(mcecDoc, (d) => validateMcec(d)));
 * ```
 */
export const mcecDoc: fc.Arbitrary<JsonObject> = fc.oneof(
  rec({ ok: fc.constant(true), ...mcecBase }, { requiredKeys: ['ok'] }),
  rec({ ok: fc.constant(false), error: mcecErrorDoc, ...mcecBase }, { requiredKeys: ['ok', 'error'] }),
) as fc.Arbitrary<JsonObject>;

/**
 * A valid MCEC 2026-07 document.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(mcec202607Doc, (d) => validateMcec202607(d)));
 * ```
 */
export const mcec202607Doc: fc.Arbitrary<JsonObject> = fc.oneof(
  rec({ ok: fc.constant(true), ...mcecBase }, { requiredKeys: ['ok'] }),
  rec({ ok: fc.constant(false), error: mcec202607ErrorDoc, ...mcecBase }, { requiredKeys: ['ok', 'error'] }),
) as fc.Arbitrary<JsonObject>;

const DW_ERROR_KEYS = ['code', 'message', 'reason', 'remediation', 'retryable', 'details', 'category', 'retry_after_ms', 'last_observation', 'partial_result'];

/**
 * A valid DW error object: schema fields, carried keys with right or other shapes, unknown extras.
 *
 * @example
 * ```ts
 * fc.sample(dwErrorDoc, 1);
 * ```
 */
export const dwErrorDoc: fc.Arbitrary<JsonObject> = withExtras(
  rec(
    {
      code: nullable(fc.oneof(text, fc.constantFrom('request_timeout', 'workflow_not_found', 'forbidden', 'validation_failed'))),
      message: nullable(text),
      reason: nullable(fc.oneof(text, fc.constantFrom('timed_out', 'target_not_found', 'internal_error'))),
      remediation: nullable(text),
      retryable: nullable(fc.boolean()),
      details: nullable(jsonObject),
      category: rightOrAny(category),
      retry_after_ms: rightOrAny(fc.nat()),
      last_observation: rightOrAny(nullable(jsonObject)),
      partial_result: rightOrAny(nullable(jsonObject)),
    },
    { requiredKeys: [] },
  ),
  extras(DW_ERROR_KEYS),
) as fc.Arbitrary<JsonObject>;

/**
 * DW `meta`: the keys the encoder carries canonical fields under (right or other shapes) and unknown ones.
 *
 * @example
 * ```ts
 * fc.sample(dwMeta, 1); // e.g. [{ run_id: 5, status: 'paused' }]
 * ```
 */
export const dwMeta: fc.Arbitrary<JsonObject> = bagOf(
  fc.oneof(
    fc.tuple(fc.constant('status'), rightOrAny(status)),
    fc.tuple(fc.constantFrom('session_id', 'tool_call_id', 'run_id', 'trace_id', 'capability_id', 'policy_decision_id'), rightOrAny(nullable(text))),
    fc.tuple(fc.constant('latency_ms'), rightOrAny(fc.nat())),
    fc.tuple(fc.constantFrom('artifacts', 'mutations', 'risk_tags'), rightOrAny(fc.array(text, { maxLength: 2 }))),
    fc.tuple(fc.constant('citations'), rightOrAny(fc.array(jsonObject, { maxLength: 2 }))),
    fc.tuple(fc.constant('metadata'), rightOrAny(jsonObject)),
    fc.tuple(fc.constant('warnings'), rightOrAny(fc.oneof(fc.array(warning, { maxLength: 2 }), fc.array(jsonObject, { maxLength: 2 })))),
    fc.tuple(anyKey, jsonValue),
  ) as fc.Arbitrary<[string, unknown]>,
);

const dwContent = withExtras(
  rec({ type: text, text: nullable(text), mimeType: nullable(text) }, { requiredKeys: ['type'] }),
  extras(['type', 'text', 'mimeType'], 2),
);

const DW_TOP_KEYS = [
  'schema',
  'version',
  'status',
  'result',
  'payload_preview',
  'payload_preview_truncated',
  'payload_preview_limit_bytes',
  'error',
  'meta',
  'content',
];

/**
 * A valid Durable Workflow document (unknown extra properties at the top level, in error and meta).
 *
 * @example
 * ```ts
 * fc.assert(fc.property(dwDoc, (d) => validateDw(d)));
 * ```
 */
export const dwDoc: fc.Arbitrary<JsonObject> = withExtras(
  rec(
    {
      schema: fc.constant('durable-workflow.v2.mcp-tool-result'),
      version: fc.oneof(fc.constant(1), fc.integer({ min: 1 })),
      status: fc.constantFrom('ok', 'error'),
      result: jsonValue,
      payload_preview: nullable(text),
      payload_preview_truncated: fc.boolean(),
      payload_preview_limit_bytes: fc.nat(),
      error: nullable(dwErrorDoc),
      meta: dwMeta,
      content: fc.array(dwContent, { maxLength: 2 }),
    },
    { requiredKeys: ['schema', 'version', 'status'] },
  ),
  extras(DW_TOP_KEYS),
).map((d) => (d.status === 'error' && !Object.hasOwn(d, 'error') ? { ...d, error: null } : d)) as fc.Arbitrary<JsonObject>;

const DW14_KEYS = ['root_cause', 'remediation', 'next_actions', 'mutation'];
const nullableText = nullable(text);
const version = fc.integer({ min: 1, max: 5 });
const dwNextAction = withExtras(
  rec(
    { code: text, label: text, tool: nullableText, mutation: fc.boolean(), allowed: nullable(fc.boolean()), reason: nullableText },
    { requiredKeys: ['code', 'label'] },
  ),
  extras(['code', 'label', 'tool', 'mutation', 'allowed', 'reason'], 2),
);
const dwRootCause = nullable(
  withExtras(
    rec(
      {
        schema: fc.constant('durable-workflow.v2.agent-root-cause'),
        version,
        category: fc.oneof(text, fc.constantFrom('activity_failure', 'workflow_failure', 'waiting_for_signal', 'none')),
        reason: fc.oneof(text, fc.constantFrom('activity_timed_out', 'workflow_not_found', 'signal_missing')),
        source: withExtras(rec({ kind: text, id: nullableText }, { requiredKeys: ['kind'] }), extras(['kind', 'id'], 2)),
        retryable: nullable(fc.boolean()),
        severity: fc.constantFrom('info', 'warning', 'error'),
        actionable: fc.boolean(),
        failure_category: nullableText,
        exception_class: nullableText,
        handled: nullable(fc.boolean()),
      },
      { requiredKeys: ['schema', 'version', 'category', 'reason', 'source'] },
    ),
    extras(['schema', 'version', 'category', 'reason', 'source', 'retryable', 'severity', 'actionable', 'failure_category', 'exception_class', 'handled'], 2),
  ),
);
const dwRemediation = nullable(
  withExtras(
    rec(
      {
        schema: fc.constant('durable-workflow.v2.agent-remediation'),
        version,
        classification: text,
        summary: text,
        automatic_repair: withExtras(
          rec({ tool: text, allowed: fc.boolean(), reason: nullableText }, { requiredKeys: ['tool', 'allowed'] }),
          extras(['tool', 'allowed', 'reason'], 2),
        ),
        next_actions: fc.array(dwNextAction, { maxLength: 2 }),
      },
      { requiredKeys: ['schema', 'version', 'classification', 'summary', 'automatic_repair'] },
    ),
    extras(['schema', 'version', 'classification', 'summary', 'automatic_repair', 'next_actions'], 2),
  ),
);
/**
 * A DW 14 safe `mutation` value: `null`, or the schema's object (with or without `reason`, any
 * `applied`, sometimes with extra properties).
 *
 * @example
 * ```ts
 * fc.sample(dwSafeMutation, 1);
 * ```
 */
export const dwSafeMutation = nullable(
  withExtras(
    rec(
      {
        schema: fc.constant('durable-workflow.v2.safe-mutation'),
        version,
        tool: text,
        operation: text,
        safe: fc.boolean(),
        applied: fc.boolean(),
        reason: nullableText,
      },
      { requiredKeys: ['schema', 'version', 'tool', 'operation', 'safe', 'applied'] },
    ),
    extras(['schema', 'version', 'tool', 'operation', 'safe', 'applied', 'reason'], 2),
  ),
);

/**
 * A valid Durable Workflow catalog-14 document: {@link dwDoc} with any of 14's objects, valid.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(dw14Doc, (d) => validateDw14(d)));
 * ```
 */
export const dw14Doc: fc.Arbitrary<JsonObject> = fc
  .tuple(
    dwDoc.map((d) => Object.fromEntries(Object.entries(d).filter(([k]) => !DW14_KEYS.includes(k))) as JsonObject),
    rec(
      { root_cause: dwRootCause, remediation: dwRemediation, next_actions: fc.array(dwNextAction, { maxLength: 2 }), mutation: dwSafeMutation },
      { requiredKeys: [] },
    ),
  )
  .map(([d, v14]) => ({ ...d, ...(v14 as JsonObject) }));

/**
 * A `metadata.error` in exactly the shape the ContextOS encoder writes.
 *
 * @example
 * ```ts
 * fc.sample(contextosStructuredError, 1); // [{ category: 'focus', code: null }]
 * ```
 */
export const contextosStructuredError = rec(
  {
    category,
    code: nullable(text),
    reason: nullable(text),
    remediation: nullable(text),
    retryable: nullable(fc.boolean()),
    retry_after_ms: fc.nat(),
    details: nullable(jsonObject),
    last_observation: nullable(jsonObject),
    partial_result: nullable(jsonObject),
    extensions: jsonObject,
  },
  { requiredKeys: [] },
);

/**
 * ContextOS result `metadata`: carried keys (right or other shapes) and unknown ones.
 *
 * @example
 * ```ts
 * fc.sample(contextosMetadata, 1);
 * ```
 */
export const contextosMetadata: fc.Arbitrary<JsonObject> = bagOf(
  fc.oneof(
    fc.tuple(fc.constant('error'), rightOrAny(contextosStructuredError)),
    fc.tuple(fc.constant('warnings'), rightOrAny(fc.array(warning, { maxLength: 2 }))),
    fc.tuple(fc.constant('preview'), rightOrAny(rec({ text: nullable(text), truncated: fc.boolean(), limit_bytes: fc.nat() }, { requiredKeys: [] }))),
    fc.tuple(fc.constant('content'), rightOrAny(fc.array(dwContent, { maxLength: 2 }))),
    fc.tuple(fc.constant('schema_version'), rightOrAny(fc.integer({ min: 1 }))),
    fc.tuple(fc.constantFrom('meta', 'extensions'), rightOrAny(jsonObject)),
    fc.tuple(fc.constant('output_wrapped'), rightOrAny(fc.constant(true))),
    fc.tuple(fc.constant('mutation'), rightOrAny(dwSafeMutation)),
    fc.tuple(anyKey, jsonValue),
  ) as fc.Arbitrary<[string, unknown]>,
);

/**
 * A ContextOS `mutations` entry in the spelling of an applied DW 14 safe mutation
 * (`dw-safe-mutation:v<version>/<tool>/<operation>?safe=<bool>[&reason=<reason>]`, percent-encoded),
 * built here by hand from its parts; sometimes in a spelling that is not the writer's (`%41`).
 *
 * @example
 * ```ts
 * fc.sample(safeMutationReferenceText, 1); // e.g. ['dw-safe-mutation:v3/a%2Fb/retry?safe=true']
 * ```
 */
export const safeMutationReferenceText: fc.Arbitrary<string> = fc
  .record({
    version: fc.integer({ min: 1, max: 1000 }),
    tool: text,
    operation: text,
    safe: fc.boolean(),
    reason: fc.option(text, { nil: undefined }),
    odd: fc.boolean(),
  })
  .map(({ version, tool, operation, safe, reason, odd }) => {
    const enc = (t: string): string => {
      try {
        return encodeURIComponent(t);
      } catch {
        return '%ZZ';
      }
    };
    const t = odd ? `%41${enc(tool)}` : enc(tool);
    return `dw-safe-mutation:v${version}/${t}/${enc(operation)}?safe=${safe}${reason === undefined ? '' : `&reason=${enc(reason)}`}`;
  });

const contextosOutput = fc.oneof(
  { weight: 3, arbitrary: jsonObject },
  { weight: 1, arbitrary: fc.constant({}) },
  { weight: 2, arbitrary: jsonValue.map((value) => ({ value })) },
);

/**
 * A valid ContextOS result envelope.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(contextosResultDoc, (d) => validateContextosResult(d)));
 * ```
 */
export const contextosResultDoc: fc.Arbitrary<JsonObject> = rec(
  {
    envelope_version: fc.constant('contextos.tool_result.v1'),
    tool_call_id: text,
    run_id: text,
    trace_id: text,
    session_id: text,
    capability_id: text,
    status,
    output: contextosOutput,
    error: nullable(text),
    artifacts: fc.array(text, { maxLength: 2 }),
    citations: fc.array(jsonObject, { maxLength: 2 }),
    mutations: fc.array(fc.oneof({ weight: 3, arbitrary: text }, { weight: 1, arbitrary: safeMutationReferenceText }), { maxLength: 2 }),
    risk_tags: fc.array(text, { maxLength: 2 }),
    policy_decision_id: nullable(text),
    latency_ms: fc.oneof(fc.nat(), fc.constant(0), fc.maxSafeNat()),
    metadata: contextosMetadata,
  },
  {
    requiredKeys: [
      'envelope_version',
      'tool_call_id',
      'run_id',
      'trace_id',
      'capability_id',
      'status',
      'output',
      'artifacts',
      'citations',
      'mutations',
      'risk_tags',
      'latency_ms',
    ],
  },
).map((d) => d as unknown as JsonObject);

/**
 * A valid ContextOS call envelope.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(contextosCallDoc, (d) => validateContextosCall(d)));
 * ```
 */
export const contextosCallDoc: fc.Arbitrary<JsonObject> = rec(
  {
    envelope_version: fc.constant('contextos.tool_call.v1'),
    tool_call_id: text,
    run_id: text,
    trace_id: text,
    session_id: text,
    capability_id: text,
    args: jsonObject,
    principal_chain: fc.array(principal, { maxLength: 3 }),
    approval_mode_requested: approvalMode,
    approval_mode_effective: approvalMode,
    approval_mode_highest: approvalMode,
    policy_decision_id: nullable(text),
    evidence_refs: fc.array(text, { maxLength: 3 }),
    idempotency_key: nullable(text),
    auth_ref: nullable(text),
    metadata: jsonObject,
  },
  {
    requiredKeys: [
      'envelope_version',
      'tool_call_id',
      'run_id',
      'trace_id',
      'capability_id',
      'args',
      'principal_chain',
      'approval_mode_requested',
      'approval_mode_effective',
      'approval_mode_highest',
      'evidence_refs',
    ],
  },
).map((d) => d as unknown as JsonObject);

// ---------------------------------------------------------------- invalid documents by mutation

/** Values of every JSON type, to put where another type is expected. */
const junk = fc.constantFrom<JsonValue>(5, -1, 1.5, 'x', '', null, true, [], {}, ['a'], { a: 1 }, 'bogus-value');

/** Every object inside `doc` up to depth 2 (the document, its object members and the objects in its arrays). */
function containers(doc: JsonObject): JsonObject[] {
  const out: JsonObject[] = [doc];
  for (const v of Object.values(doc)) {
    if (Array.isArray(v)) {
      for (const x of v) if (x !== null && typeof x === 'object' && !Array.isArray(x)) out.push(x as JsonObject);
    } else if (v !== null && typeof v === 'object') {
      out.push(v);
    }
  }
  return out;
}

/** Which container to mutate: the document itself half of the time, else any. */
const where = fc.oneof(fc.constant(0), fc.nat());

type Mutation =
  | { kind: 'delete'; where: number; key: number }
  | { kind: 'retype'; where: number; key: number; value: JsonValue }
  | { kind: 'extra'; where: number; key: string; value: JsonValue }
  | { kind: 'replace'; value: unknown }
  | { kind: 'special'; which: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 3, arbitrary: rec({ kind: fc.constant('delete' as const), where, key: fc.nat() }) },
  { weight: 4, arbitrary: rec({ kind: fc.constant('retype' as const), where, key: fc.nat(), value: junk }) },
  {
    weight: 2,
    arbitrary: rec({
      kind: fc.constant('extra' as const),
      where,
      key: fc.oneof(fc.constantFrom('extra_prop', '__proto__', 'constructor'), text),
      value: junk,
    }),
  },
  {
    weight: 1,
    arbitrary: rec({
      kind: fc.constant('replace' as const),
      value: fc.constantFrom<unknown>(null, [], ['x'], 'text', 42, true, undefined),
    }),
  },
  { weight: 3, arbitrary: rec({ kind: fc.constant('special' as const), which: fc.nat() }) },
);

/** Targeted breakages: the rules each schema states beyond types. */
const SPECIALS: readonly ((d: Record<string, unknown>) => void)[] = [
  // MCEC: ok:true with an error object; ok:false without one.
  (d) => {
    d.ok = true;
    d.error = { code: 'x', category: 'internal', detail: 'y' };
  },
  (d) => {
    d.ok = false;
    delete d.error;
  },
  (d) => {
    d.error = { code: 'x', category: 'not-a-category', detail: 'y' };
  },
  // DW: status error without an error; wrong schema marker; version 0.
  (d) => {
    d.status = 'error';
    delete d.error;
  },
  (d) => {
    d.schema = 'durable-workflow.v1.mcp-tool-result';
  },
  (d) => {
    d.version = 0;
  },
  // ContextOS: wrong marker, bad status, bad latency, bad approval mode, bad principal.
  (d) => {
    d.envelope_version = 'contextos.tool_result.v2';
  },
  (d) => {
    d.status = 'done';
  },
  (d) => {
    d.latency_ms = -1;
  },
  (d) => {
    d.latency_ms = 2.5;
  },
  (d) => {
    d.approval_mode_effective = 'admin';
  },
  (d) => {
    d.principal_chain = [{ kind: 'robot', id: 'r' }];
  },
  (d) => {
    d.principal_chain = [{ kind: 'user', id: 'u', email: 'e' }];
  },
  (d) => {
    d.warnings = [{ code: 'w', detail: 'd', extra: 1 }];
  },
  (d) => {
    d.status = 'ok';
    d.ok = 'yes';
  },
];

function applyMutation(doc: JsonObject, m: Mutation): unknown {
  if (m.kind === 'replace') return m.value;
  const copy = structuredClone(doc) as JsonObject;
  if (m.kind === 'special') {
    SPECIALS[m.which % SPECIALS.length]!(copy as Record<string, unknown>);
    return copy;
  }
  const places = containers(copy);
  const target = places[m.where % places.length]!;
  if (m.kind === 'extra') {
    Object.defineProperty(target, m.key, { value: m.value, enumerable: true, writable: true, configurable: true });
    return copy;
  }
  const keys = Object.keys(target);
  if (keys.length === 0) return copy;
  const key = keys[m.key % keys.length]!;
  if (m.kind === 'delete') delete target[key];
  else Object.defineProperty(target, key, { value: m.value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/**
 * Documents made from valid ones by one mutation; most are invalid, some stay valid.
 *
 * @example
 * ```ts
 * fc.assert(fc.property(mutated(mcecDoc), (d) => validateMcec(d) === oracleValidate('mcec', d).valid));
 * ```
 */
export function mutated(valid: fc.Arbitrary<JsonObject>): fc.Arbitrary<unknown> {
  return fc.tuple(valid, mutation).map(([doc, m]) => applyMutation(doc, m));
}
