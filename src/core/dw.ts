/**
 * Durable Workflow v2 MCP tool result: `{ schema, version, status, result?,
 * payload_preview*, error?, meta?, content?, ... }`. Open at the top level, in
 * `error` and in `meta`, so every canonical field has a place: ContextOS and
 * MCEC fields ride in `meta` and `error` under snake_case keys, and are lifted
 * back only when that is exactly reversible. Mapping tables: docs/contracts.md.
 *
 * @example
 * ```ts
 * import { encodeDw } from 'tool-envelope/core';
 * encodeDw(success({ rows: 3 }));
 * // { schema: 'durable-workflow.v2.mcp-tool-result', version: 1, status: 'ok', result: { rows: 3 },
 * //   payload_preview: '{"rows":3}', payload_preview_truncated: false, payload_preview_limit_bytes: 4096 }
 * ```
 */
import type { Contract } from './contract.js';
import type { Issue } from './errors.js';
import type { JsonObject, JsonValue } from './json.js';
import type { ErrorCategory, OutcomeStatus } from './taxonomy.js';
import { dwSchema } from './generated/schemas.js';
import { loadFastValidators } from './validators.js';
import { type AjvValidator, checkWith, inferErrorCategory } from './wire.js';
import { DW14_FIELDS } from './dw14-fields.js';

import { decodeDw, encodeDw, encodeDwJson } from './dw-codec.js';

export { dwSchema, decodeDw, encodeDw, encodeDwJson, DW14_FIELDS };

let fast: AjvValidator | undefined;

/**
 * The Durable Workflow `schema` marker.
 *
 * @example
 * ```ts
 * DW_SCHEMA_ID; // 'durable-workflow.v2.mcp-tool-result'
 * ```
 */
export const DW_SCHEMA_ID = 'durable-workflow.v2.mcp-tool-result';

/**
 * The envelope `version` written when the canonical outcome has no `schemaVersion`.
 *
 * @example
 * ```ts
 * DW_VERSION; // 1
 * ```
 */
export const DW_VERSION = 1;

/**
 * The preview byte limit the owner's own tools use, and the encoder default.
 *
 * @example
 * ```ts
 * encodeDw(outcome, { previewLimitBytes: DW_DEFAULT_PREVIEW_LIMIT_BYTES });
 * ```
 */
export const DW_DEFAULT_PREVIEW_LIMIT_BYTES = 4096;

/**
 * A Durable Workflow error object (open: unknown properties allowed).
 *
 * @example
 * ```ts
 * const e: DwError = { code: 'timeout', message: 'Waited 5 s', reason: 'timed_out', retryable: true };
 * ```
 */
export interface DwError {
  code?: string | null;
  message?: string | null;
  reason?: string | null;
  remediation?: string | null;
  retryable?: boolean | null;
  details?: JsonObject | null;
  [key: string]: JsonValue | undefined;
}

/**
 * An MCP content block as Durable Workflow constrains it.
 *
 * @example
 * ```ts
 * const b: DwContentBlock = { type: 'text', text: 'done' };
 * ```
 */
export interface DwContentBlock {
  type: string;
  text?: string | null;
  mimeType?: string | null;
  [key: string]: JsonValue | undefined;
}

/**
 * A Durable Workflow MCP tool-result document.
 *
 * @example
 * ```ts
 * const doc: DwToolResult = { schema: DW_SCHEMA_ID, version: 1, status: 'error', error: { code: 'not_found' } };
 * ```
 */
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

/**
 * The machine `reason` written for each category when the error has none.
 *
 * @example
 * ```ts
 * DW_REASONS['no-target']; // 'target_not_found'
 * ```
 */
export const DW_REASONS: Readonly<Record<ErrorCategory, string>> = {
  timeout: 'timed_out',
  'ambiguous-selector': 'ambiguous_selector',
  'stale-element': 'stale_element',
  'no-target': 'target_not_found',
  'invalid-argument': 'invalid_argument',
  'capture-blank': 'capture_blank',
  'ocr-blank': 'ocr_blank',
  'ocr-no-text': 'ocr_no_text',
  focus: 'focus_required',
  foreground: 'foreground_refused',
  elevation: 'elevation_required',
  internal: 'internal_error',
};

/**
 * The default DW `reason` of a category.
 *
 * @example
 * ```ts
 * dwDefaultReason('timeout'); // 'timed_out'
 * ```
 */
export function dwDefaultReason(category: ErrorCategory): string {
  return DW_REASONS[category];
}

const REASON_CATEGORY = new Map<string, ErrorCategory>(Object.entries(DW_REASONS).map(([category, reason]) => [reason, category as ErrorCategory]));

/**
 * The category of a DW error that states none: its `reason` when it is one of
 * {@link DW_REASONS}; else the words of `code`, `reason`, `message` (in that
 * order; see docs/contracts.md); else `elevation` for paused/rejected/blocked; else `internal`.
 *
 * @example
 * ```ts
 * inferDwCategory({ code: 'workflow_not_found' }); // 'no-target'
 * ```
 */
export function inferDwCategory(error: DwError, status: OutcomeStatus = 'error'): ErrorCategory {
  const byReason = typeof error.reason === 'string' ? REASON_CATEGORY.get(error.reason) : undefined;
  return byReason ?? inferErrorCategory(status, error.code, error.reason, error.message);
}

/**
 * Fast check (first violation only): true when `doc` is a valid DW result.
 *
 * @example
 * ```ts
 * validateDw({ schema: DW_SCHEMA_ID, version: 1, status: 'ok' }); // true
 * ```
 */
export function validateDw(doc: unknown): doc is DwToolResult {
  return (fast ??= loadFastValidators('dw').dwFast)(doc);
}

/**
 * Every violation of the DW schema, located by JSON pointer.
 *
 * @example
 * ```ts
 * checkDw({ schema: DW_SCHEMA_ID, version: 1, status: 'error' }); // [{ code: 'required', path: '/error', ... }]
 * ```
 */
export function checkDw(doc: unknown): Issue[] {
  return checkWith('dwFull', doc);
}

/**
 * The Durable Workflow contract object (for the `contracts` registry).
 *
 * @example
 * ```ts
 * dwContract.validate(dwContract.encode(success(1))); // true
 * ```
 */
export const dwContract: Contract<DwToolResult> = {
  id: 'dw',
  title: 'Durable Workflow MCP tool result',
  schema: dwSchema,
  validate: validateDw,
  check: checkDw,
  decode: decodeDw,
  encode: encodeDw,
};
