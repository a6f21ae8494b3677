/**
 * Durable Workflow v2 MCP tool result: `{ schema, version, status, result?,
 * payload_preview*, error?, meta?, content?, ... }`. Open at the top level, in
 * `error` and in `meta`, so every canonical field has a place: ContextOS and
 * MCEC fields ride in `meta` and `error` under snake_case keys, and are lifted
 * back only when that is exactly reversible. Mapping tables: docs/contracts.md.
 */
import { type Issue, isToolEnvelopeError } from '../errors.js';
import { type JsonObject, type JsonValue, isJsonObject } from '../json.js';
import type { ContentBlock, ToolError, ToolOutcome } from '../model.js';
import { DW_REASONS, type ErrorCategory, type OutcomeStatus, defaultRemediation, defaultRetryable, isErrorCategory, isSuccessStatus } from '../taxonomy.js';
import { createPreview, truncateUtf8 } from '../preview.js';
import { dwSchema, dwFast } from '../generated/core.js';
import type { AjvValidator, Contract, EncodeOptions, Loss } from './types.js';
import {
  DW14_FIELDS,
  DW_VERSION,
  carrier,
  checkWith,
  copyBag,
  defineOwn,
  inferDwCategory,
  invalidEnvelope,
  isNullableObject,
  isNullableString,
  isObjectArray,
  isStringArray,
  isWarningArray,
  lose,
  owns,
} from './wire.js';

export { dwSchema, DW14_FIELDS, DW_VERSION, inferDwCategory };
export { DW_REASONS, dwDefaultReason } from '../taxonomy.js';

const fast = dwFast as unknown as AjvValidator;

/** The Durable Workflow `schema` marker. */
export const DW_SCHEMA_ID = 'durable-workflow.v2.mcp-tool-result';

/** The preview byte limit the owner's own tools use, and the encoder default. */
export const DW_DEFAULT_PREVIEW_LIMIT_BYTES = 4096;

/** A Durable Workflow error object (open: unknown properties allowed). */
export interface DwError {
  code?: string | null;
  message?: string | null;
  reason?: string | null;
  remediation?: string | null;
  retryable?: boolean | null;
  details?: JsonObject | null;
  [key: string]: JsonValue | undefined;
}

/** An MCP content block as Durable Workflow constrains it. */
export interface DwContentBlock {
  type: string;
  text?: string | null;
  mimeType?: string | null;
  [key: string]: JsonValue | undefined;
}

/** A Durable Workflow MCP tool-result document. */
export interface DwToolResult {
  schema: typeof DW_SCHEMA_ID;
  version: number;
  status: 'ok' | 'error';
  result?: JsonValue;
  payload_preview?: string | null;
  payload_preview_truncated?: boolean;
  payload_preview_limit_bytes?: number;
  error?: DwError | null;
  meta?: JsonObject;
  content?: DwContentBlock[];
  [key: string]: unknown;
}

/** Fast check (first violation only): true when `doc` is a valid DW result. */
export function validateDw(doc: unknown): doc is DwToolResult {
  return fast(doc);
}

/** Every violation of the DW schema, located by JSON pointer. */
export function checkDw(doc: unknown): Issue[] {
  return checkWith('dwFull', doc);
}

/** Canonical fields carried in `meta`, with the shape a meta value must have to be lifted back. */
const META_FIELDS: readonly (readonly [keyof ToolOutcome, string, (v: unknown) => boolean])[] = [
  ['sessionId', 'session_id', isNullableString],
  ['toolCallId', 'tool_call_id', (v) => typeof v === 'string'],
  ['runId', 'run_id', (v) => typeof v === 'string'],
  ['traceId', 'trace_id', (v) => typeof v === 'string'],
  ['capabilityId', 'capability_id', (v) => typeof v === 'string'],
  ['policyDecisionId', 'policy_decision_id', isNullableString],
  ['latencyMs', 'latency_ms', (v) => typeof v === 'number'],
  ['artifacts', 'artifacts', isStringArray],
  ['citations', 'citations', isObjectArray],
  ['mutations', 'mutations', isStringArray],
  ['riskTags', 'risk_tags', isStringArray],
  ['metadata', 'metadata', isJsonObject],
  ['warnings', 'warnings', isWarningArray],
];
const DW14_BY_KEY = new Map(DW14_FIELDS.map(([field, key, accepts]) => [key, { field, accepts }]));

const META_BY_KEY = new Map(META_FIELDS.map(([field, key, accepts]) => [key, { field, accepts }]));

/** The statuses DW writes to `meta.status` (the ones its own `status` cannot say). */
const META_STATUS: Readonly<Partial<Record<OutcomeStatus, 'ok' | 'error'>>> = {
  completed: 'ok',
  failed: 'error',
  paused: 'error',
  rejected: 'error',
  blocked: 'error',
};

const TOP_KEYS = new Set([
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
]);
const ERROR_SCHEMA_KEYS = new Set(['code', 'message', 'reason', 'remediation', 'retryable', 'details']);

/** DW error keys and the canonical error fields they carry: the schema's own (copied as they are), then the lifted ones with the shape that lifts. */
const ERROR_BY_KEY = new Map<string, readonly [keyof ToolError, ((v: unknown) => boolean)?]>([
  ['code', ['code']],
  ['message', ['detail']],
  ['reason', ['reason']],
  ['remediation', ['remediation']],
  ['retryable', ['retryable']],
  ['details', ['details']],
  ['retry_after_ms', ['retryAfterMs', (v) => typeof v === 'number']],
  ['last_observation', ['lastObservation', isNullableObject]],
  ['partial_result', ['partialResult', isNullableObject]],
]);

function decodeError(e: DwError, status: OutcomeStatus): ToolError {
  const stated = isErrorCategory(e.category);
  const error: ToolError = { category: stated ? (e.category as ErrorCategory) : inferDwCategory(e, status) };
  if (!stated) error.categoryInferred = true;
  let ext: JsonObject | undefined;
  for (const key of Object.keys(e)) {
    const v = e[key];
    if (key === 'category' && stated) continue;
    const spec = ERROR_BY_KEY.get(key);
    if (spec && (spec[1] === undefined || spec[1](v))) {
      (error as unknown as Record<string, unknown>)[spec[0]] = v;
      continue;
    }
    ext ??= {};
    defineOwn(ext, key, v);
  }
  if (ext) error.extensions = ext;
  error.verbatim = true;
  return error;
}

/**
 * DW document → canonical outcome. `meta.status` (when it is a status DW
 * cannot state and agrees with `status`), the ids, latency, lists, warnings
 * and metadata in `meta`, and `error.category`, `error.retry_after_ms`,
 * `error.last_observation`, `error.partial_result` are lifted into their
 * canonical fields when their shape allows an exact round trip; everything
 * else stays in `meta`, `error.extensions` and `extensions`. The outcome's
 * `preview` is `{}` when the document has no preview fields. Sub-objects are
 * shared with the document, not copied.
 */
export function decodeDw(doc: unknown): ToolOutcome {
  if (!validateDw(doc)) invalidEnvelope('Durable Workflow MCP tool result', checkDw(doc));
  const d = doc as DwToolResult;
  let status: OutcomeStatus = d.status;
  const out: ToolOutcome = { status, schemaVersion: d.version };
  const meta = d.meta;
  if (meta !== undefined) {
    const rest: JsonObject = {};
    for (const key of Object.keys(meta)) {
      const v = meta[key];
      const spec = META_BY_KEY.get(key);
      if (spec?.accepts(v)) {
        (out as unknown as Record<string, unknown>)[spec.field] = v;
      } else if (key === 'status' && typeof v === 'string' && owns(META_STATUS, v) && META_STATUS[v as OutcomeStatus] === d.status) {
        status = v as OutcomeStatus;
      } else {
        defineOwn(rest, key, v);
      }
    }
    out.status = status;
    out.meta = rest;
  }
  const preview: ToolOutcome['preview'] = {};
  let ext: JsonObject | undefined;
  for (const key of Object.keys(d)) {
    const v = d[key];
    switch (key) {
      case 'schema':
      case 'version':
      case 'status':
      case 'meta':
        continue;
      case 'result':
        out.result = v as JsonValue;
        continue;
      case 'payload_preview':
        preview.text = v as string | null;
        continue;
      case 'payload_preview_truncated':
        preview.truncated = v as boolean;
        continue;
      case 'payload_preview_limit_bytes':
        preview.limitBytes = v as number;
        continue;
      case 'error':
        out.error = v === null ? null : decodeError(v as DwError, status);
        continue;
      case 'content':
        out.content = v as ContentBlock[];
        continue;
    }
    const v14 = DW14_BY_KEY.get(key);
    if (v14?.accepts(v)) {
      (out as unknown as Record<string, unknown>)[v14.field] = v;
      continue;
    }
    ext ??= {};
    defineOwn(ext, key, v);
  }
  out.preview = preview;
  if (ext) out.extensions = ext;
  return out;
}

function encodeError(e: ToolError, losses: Loss[] | undefined): DwError {
  const fill = e.verbatim !== true;
  const category = e.category;
  const derived = e.fromRootCause;
  const out: DwError = {};
  if (e.code !== undefined) out.code = e.code;
  else if (fill) out.code = category;
  if (e.detail !== undefined) out.message = e.detail;
  // What a DW 14 decoder read from root_cause/remediation stays there: the error did not state it.
  if (e.reason !== undefined && !derived?.includes('reason')) out.reason = e.reason;
  else if (fill) out.reason = DW_REASONS[category];
  if (e.remediation !== undefined && !derived?.includes('remediation')) out.remediation = e.remediation;
  else if (fill) out.remediation = defaultRemediation(category);
  if (e.retryable !== undefined && !derived?.includes('retryable')) out.retryable = e.retryable;
  else if (fill) out.retryable = defaultRetryable(category);
  if (e.details !== undefined) out.details = e.details;
  if (e.categoryInferred !== true) out.category = category;
  if (e.retryAfterMs !== undefined) out.retry_after_ms = e.retryAfterMs;
  if (e.lastObservation !== undefined) out.last_observation = e.lastObservation;
  if (e.partialResult !== undefined) out.partial_result = e.partialResult;
  if (e.extensions) copyBag(out, e.extensions, ERROR_SCHEMA_KEYS, losses, '/error/extensions');
  return out;
}

function encodeMeta(outcome: ToolOutcome, losses: Loss[] | undefined): JsonObject | undefined {
  const meta = carrier(outcome.meta, '/meta', losses);
  if (META_STATUS[outcome.status] !== undefined) meta.put('status', outcome.status);
  for (const [field, key] of META_FIELDS) {
    const v = outcome[field];
    if (v !== undefined) meta.put(key, v);
  }
  return meta.done();
}

function isContentBlock(b: unknown): boolean {
  if (!isJsonObject(b) || typeof b.type !== 'string') return false;
  return (b.text === undefined || isNullableString(b.text)) && (b.mimeType === undefined || isNullableString(b.mimeType));
}

function encodeContent(content: ContentBlock[], losses: Loss[] | undefined): DwContentBlock[] {
  if (content.every(isContentBlock)) return content as DwContentBlock[];
  const kept: DwContentBlock[] = [];
  content.forEach((block, i) => {
    if (isContentBlock(block)) kept.push(block as DwContentBlock);
    else lose(losses, `/content/${i}`, 'not-representable', 'DW content blocks need a string type and string/null text and mimeType');
  });
  return kept;
}

/** The preview fields: the canonical preview as it is, else one made from the result (cut from `resultText`, its JSON text, when given). */
function encodePreview(doc: DwToolResult, outcome: ToolOutcome, options: EncodeOptions | undefined, resultText: string | undefined): void {
  const preview = outcome.preview;
  const losses = options?.losses;
  if (preview) {
    if (preview.text !== undefined) doc.payload_preview = preview.text;
    if (preview.truncated !== undefined) doc.payload_preview_truncated = preview.truncated;
    const limit = preview.limitBytes;
    if (limit !== undefined) {
      if (Number.isInteger(limit) && limit >= 0) doc.payload_preview_limit_bytes = limit;
      else lose(losses, '/preview/limitBytes', 'not-representable', 'DW preview limits are non-negative integers');
    }
    return;
  }
  const result = outcome.result;
  if (result === undefined) return;
  const limit = options?.previewLimitBytes ?? DW_DEFAULT_PREVIEW_LIMIT_BYTES;
  let p: ReturnType<typeof createPreview>;
  if (resultText !== undefined) {
    // The preview of a non-string result is the longest prefix of its JSON text within the limit.
    // A long text is not cut: JSON.stringify returns it in pieces, and reading its head would join
    // them all (a copy of the whole text); createPreview writes the same prefix from the value,
    // at a cost that grows with the limit. JSON.stringify escapes lone surrogates: a short text is
    // well-formed.
    p = resultText.length <= limit ? truncateUtf8(resultText, limit, { wellFormed: true }) : createPreview(result, limit);
  } else {
    try {
      p = createPreview(result, limit);
    } catch (e) {
      // A result that is not JSON (BigInt, a cycle) is toJsonSafe's concern; the
      // encoder still answers, without a preview. Bad options stay errors.
      if (!isToolEnvelopeError(e, 'not-json-safe')) throw e;
      lose(losses, '/preview', 'not-representable', `no preview: ${e.message}`);
      return;
    }
  }
  doc.payload_preview = p.text;
  doc.payload_preview_truncated = p.truncated;
  doc.payload_preview_limit_bytes = limit;
}

/**
 * Canonical outcome → DW document. `status` is `ok` for `ok`/`completed`,
 * `error` otherwise (the exact status goes to `meta.status` when DW cannot
 * say it); the preview is the canonical one as-is, or computed from `result`
 * (`options.previewLimitBytes`, default 4096); a failure without an error
 * gets `error: null`. An error not decoded from DW gets the per-category
 * defaults for `code`, `reason`, `remediation` and `retryable`.
 *
 * @example
 * ```ts
 * const doc = encodeDw(failure(toolError('timeout', 'wait-timeout', 'Waited 5 s')));
 * doc.error; // { code: 'wait-timeout', message: 'Waited 5 s', reason: 'timed_out', retryable: true, category: 'timeout', ... }
 * ```
 */
export function encodeDw(outcome: ToolOutcome, options?: EncodeOptions): DwToolResult {
  return encodeDoc(outcome, options, undefined);
}

/**
 * The document of {@link encodeDw}; with `resultText` (the JSON text of a
 * non-string result), without `result` and with the preview cut from that text.
 */
function encodeDoc(outcome: ToolOutcome, options: EncodeOptions | undefined, resultText: string | undefined): DwToolResult {
  const losses = options?.losses;
  let version = DW_VERSION;
  const sv = outcome.schemaVersion;
  if (sv !== undefined) {
    if (Number.isInteger(sv) && sv >= 1) version = sv;
    else lose(losses, '/schemaVersion', 'not-representable', 'DW versions are integers >= 1; wrote 1');
  }
  const ok = isSuccessStatus(outcome.status);
  const doc: DwToolResult = { schema: DW_SCHEMA_ID, version, status: ok ? 'ok' : 'error' };
  if (resultText === undefined && outcome.result !== undefined) doc.result = outcome.result;
  encodePreview(doc, outcome, options, resultText);
  const error = outcome.error;
  if (error) doc.error = encodeError(error, losses);
  else if (error === null || !ok) doc.error = null;
  const meta = encodeMeta(outcome, losses);
  if (meta !== undefined) doc.meta = meta;
  if (outcome.content !== undefined) doc.content = encodeContent(outcome.content, losses);
  for (const [field, key] of DW14_FIELDS) {
    const v = outcome[field];
    if (v !== undefined) defineOwn(doc, key, v);
  }
  if (outcome.extensions) copyBag(doc, outcome.extensions, TOP_KEYS, losses, '/extensions');
  return doc;
}

/**
 * `JSON.stringify(encodeDw(outcome, options))`, with the result serialised
 * once: when the preview has to be computed from a non-string result, the
 * result's JSON text is made once, the preview is cut from it and it is
 * spliced into the envelope text (`encodeDw` then `JSON.stringify` serialise
 * it twice when it fits the preview limit). The text and the losses are
 * exactly those of `encodeDw` then `JSON.stringify`.
 */
export function encodeDwJson(outcome: ToolOutcome, options?: EncodeOptions): string {
  const result = outcome.result;
  // A canonical preview is used as it is, and a string result previews as itself: one serialisation already.
  if (outcome.preview || result === undefined || typeof result === 'string' || hasToJson(result)) {
    return JSON.stringify(encodeDw(outcome, options));
  }
  let resultText: string | undefined;
  try {
    resultText = JSON.stringify(result) as string | undefined;
  } catch {
    // Not JSON (BigInt, a cycle): the plain path reports it exactly as encodeDw does.
  }
  if (resultText === undefined) return JSON.stringify(encodeDw(outcome, options));
  const doc = encodeDoc(outcome, options, resultText);
  const text = JSON.stringify(doc);
  // encodeDoc writes schema, version and status first; `result` follows them. (The schema is a
  // constant, the version an integer and the status a plain word: their JSON is known.)
  const head = `${SCHEMA_HEAD}${doc.version},"status":"${doc.status}"`;
  return `${head},"result":${resultText}${text.slice(head.length)}`;
}

const SCHEMA_HEAD = `{"schema":${JSON.stringify(DW_SCHEMA_ID)},"version":`;

function hasToJson(value: JsonValue): boolean {
  // The result's own toJSON gets the key "result" inside the envelope, "" alone.
  return typeof value === 'object' && value !== null && typeof (value as { toJSON?: unknown }).toJSON === 'function';
}

/** The Durable Workflow contract object (for the `contracts` registry). */
export const dwContract: Contract<DwToolResult> = {
  id: 'dw',
  title: 'Durable Workflow MCP tool result',
  schema: dwSchema,
  validate: validateDw,
  check: checkDw,
  decode: decodeDw,
  encode: encodeDw,
};
