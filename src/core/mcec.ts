/**
 * MCEC 3.0 agent tool result: `{ ok, result?, warnings?, error?, sessionId? }`.
 * A closed envelope: everything else the canonical outcome holds is reported
 * as a loss on encode. Mapping tables: docs/contracts.md.
 *
 * @example
 * ```ts
 * import { encodeMcec, decodeMcec } from 'tool-envelope/core';
 * const doc = encodeMcec(success({ rows: 3 })); // { ok: true, result: { rows: 3 } }
 * decodeMcec(doc).status; // 'ok'
 * ```
 */
import type { Contract } from './contract.js';
import type { Issue } from './errors.js';
import { type JsonObject, isJsonObject } from './json.js';
import type { ToolWarning } from './model.js';
import type { ErrorCategory, OutcomeStatus } from './taxonomy.js';
import { mcecSchema } from './generated/schemas.js';
import { loadFastValidators } from './validators.js';
import { type AjvValidator, checkWith } from './wire.js';

import { decodeMcec, encodeMcec } from './mcec-codec.js';

export { mcecSchema, decodeMcec, encodeMcec };

let fast: AjvValidator | undefined;

/**
 * An MCEC warning.
 *
 * @example
 * ```ts
 * const w: McecWarning = { code: 'tree-truncated', detail: 'First 500 nodes only.' };
 * ```
 */
export type McecWarning = ToolWarning;

/**
 * An MCEC error object (closed).
 *
 * @example
 * ```ts
 * const e: McecError = { code: 'window-not-found', category: 'no-target', detail: 'No window "Report".' };
 * ```
 */
export interface McecError {
  code: string;
  category: ErrorCategory;
  detail: string;
  lastObservation?: JsonObject | null;
  partialResult?: JsonObject | null;
}

/**
 * The fields an MCEC result has whatever its `ok`.
 *
 * @example
 * ```ts
 * const base: McecBase = { sessionId: 's1', result: { rows: 3 } };
 * ```
 */
export interface McecBase {
  sessionId?: string | null;
  result?: JsonObject | null;
  warnings?: McecWarning[];
}

/**
 * An MCEC result document: `ok: true` without an error object, or `ok: false` with one.
 *
 * @example
 * ```ts
 * const doc: McecToolResult = { ok: false, error: { code: 'x', category: 'internal', detail: 'boom' } };
 * ```
 */
export type McecToolResult = (McecBase & { ok: true; error?: undefined }) | (McecBase & { ok: false; error: McecError });

/**
 * The error MCEC gets for a failure status that has no error of its own
 * (MCEC requires one whenever `ok` is false).
 *
 * @example
 * ```ts
 * MCEC_SYNTHESIZED_ERRORS.paused.code; // 'approval-pending'
 * ```
 */
export const MCEC_SYNTHESIZED_ERRORS: Readonly<Record<Exclude<OutcomeStatus, 'ok' | 'completed'>, McecError>> = {
  paused: { code: 'approval-pending', category: 'elevation', detail: 'The call is waiting at an approval gate.' },
  blocked: { code: 'policy-blocked', category: 'elevation', detail: 'Policy denied the call before it ran.' },
  rejected: {
    code: 'approval-rejected',
    category: 'elevation',
    detail: 'An approver declined the call, or the approval expired.',
  },
  error: { code: 'unknown-error', category: 'internal', detail: 'The tool failed without stating an error.' },
  failed: { code: 'unknown-error', category: 'internal', detail: 'The tool failed without stating an error.' },
};

/**
 * Fast check (first violation only): true when `doc` is a valid MCEC result.
 *
 * @example
 * ```ts
 * validateMcec({ ok: true }); // true
 * validateMcec({ ok: false }); // false: error is required
 * ```
 */
export function validateMcec(doc: unknown): doc is McecToolResult {
  return (fast ??= loadFastValidators('mcec').mcecFast)(doc);
}

/**
 * Every violation of the MCEC schema, located by JSON pointer. `ok: true` with
 * an error object is reported as rule `not` at `/error`.
 *
 * @example
 * ```ts
 * checkMcec({ ok: false }); // [{ code: 'required', path: '/error', ... }]
 * ```
 */
export function checkMcec(doc: unknown): Issue[] {
  return relocateErrorNot(doc, checkWith('mcecFull', doc));
}

/**
 * MCEC (every revision) states "no error object when `ok` is true" as a root-level `not`; the
 * offending value is the error property, so the issue is moved there.
 *
 * @example
 * ```ts
 * relocateErrorNot({ ok: true, error: {} }, [{ code: 'not', path: '', message: 'must NOT be valid' }])[0].path; // '/error'
 * ```
 */
export function relocateErrorNot(doc: unknown, issues: Issue[]): Issue[] {
  if (!isJsonObject(doc) || !isJsonObject(doc.error)) return issues;
  for (const issue of issues) {
    // The schema states "no error object when ok is true" as a root-level `not`;
    // the offending value is the error property.
    if (issue.code === 'not' && issue.path === '') {
      issue.path = '/error';
      issue.message = 'must not have an error object when ok is true';
    }
  }
  return issues;
}

/**
 * The MCEC contract object (for the {@link contracts} registry).
 *
 * @example
 * ```ts
 * mcecContract.validate(mcecContract.encode(success({}))); // true
 * ```
 */
export const mcecContract: Contract<McecToolResult> = {
  id: 'mcec',
  title: 'MCEC agent tool result',
  schema: mcecSchema,
  validate: validateMcec,
  check: checkMcec,
  decode: decodeMcec,
  encode: encodeMcec,
};
