/**
 * MCEC 3.0 agent tool result: `{ ok, result?, warnings?, error?, sessionId? }`.
 * A closed envelope: everything else the canonical outcome holds is reported
 * as a loss on encode. Mapping tables: docs/contracts.md.
 */
import type { Issue } from '../errors.js';
import { pointer } from '../errors.js';
import { type JsonObject, isJsonObject } from '../json.js';
import type { ToolError, ToolOutcome, ToolWarning } from '../model.js';
import {
  type ErrorCategory,
  type OutcomeStatus,
  defaultRemediation,
  defaultRetryable,
  dwDefaultReason,
  foundingMcecCategory,
  isSuccessStatus,
} from '../taxonomy.js';
import { mcecSchema, mcecFast } from '../generated/core.js';
import type { AjvValidator, Contract, EncodeOptions, Loss } from './types.js';
import { DW_VERSION, checkWith, informative, invalidEnvelope, lose } from './wire.js';

export { mcecSchema };

const fast = mcecFast as unknown as AjvValidator;

/** An MCEC warning. */
export type McecWarning = ToolWarning;

/** An MCEC error object (closed). */
export interface McecError {
  code: string;
  category: ErrorCategory;
  detail: string;
  lastObservation?: JsonObject | null;
  partialResult?: JsonObject | null;
}

/** The fields an MCEC result has whatever its `ok`. */
export interface McecBase {
  sessionId?: string | null;
  result?: JsonObject | null;
  warnings?: McecWarning[];
}

/** An MCEC result document: `ok: true` without an error object, or `ok: false` with one. */
export type McecToolResult = (McecBase & { ok: true; error?: undefined }) | (McecBase & { ok: false; error: McecError });

/**
 * The error MCEC gets for a failure status that has no error of its own
 * (MCEC requires one whenever `ok` is false).
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

/** Fast check (first violation only): true when `doc` is a valid MCEC result. */
export function validateMcec(doc: unknown): doc is McecToolResult {
  return fast(doc);
}

/**
 * Every violation of the MCEC schema, located by JSON pointer. `ok: true` with
 * an error object is reported as rule `not` at `/error`.
 */
export function checkMcec(doc: unknown): Issue[] {
  return relocateErrorNot(doc, checkWith('mcecFull', doc));
}

/**
 * MCEC (every revision) states "no error object when `ok` is true" as a root-level `not`; the
 * offending value is the error property, so the issue is moved there.
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
 * MCEC document → canonical outcome. `ok: true` → status `ok`; `ok: false` →
 * status `error`. Sub-objects are shared with the document, not copied.
 *
 * @example
 * ```ts
 * decodeMcec({ ok: false, error: { code: 't', category: 'timeout', detail: 'd' } }).error?.category; // 'timeout'
 * ```
 */
export function decodeMcec(doc: unknown): ToolOutcome {
  if (!validateMcec(doc)) invalidEnvelope('MCEC agent tool result', checkMcec(doc));
  return decodeValidMcec(doc as McecToolResult);
}

/** The outcome of an MCEC document already validated (by the founding schema or a later revision's). */
export function decodeValidMcec(d: McecToolResult): ToolOutcome {
  const out: ToolOutcome = { status: d.ok ? 'ok' : 'error' };
  if (d.result !== undefined) out.result = d.result;
  if (d.warnings !== undefined) out.warnings = d.warnings;
  if (d.sessionId !== undefined) out.sessionId = d.sessionId;
  if (d.ok === false) {
    const e = d.error;
    const error: ToolError = { category: e.category, code: e.code, detail: e.detail };
    if (e.lastObservation !== undefined) error.lastObservation = e.lastObservation;
    if (e.partialResult !== undefined) error.partialResult = e.partialResult;
    out.error = error;
  }
  return out;
}

const NOT_CARRIED_TOP: readonly (keyof ToolOutcome)[] = [
  'toolCallId',
  'runId',
  'traceId',
  'capabilityId',
  'policyDecisionId',
  'latencyMs',
  'artifacts',
  'citations',
  'mutations',
  'riskTags',
  'metadata',
  'preview',
  'content',
  'schemaVersion',
  'meta',
  'rootCause',
  'remediationPlan',
  'nextActions',
  'safeMutation',
];

const NOT_CARRIED_ERROR: readonly (keyof ToolError)[] = ['retryAfterMs', 'details'];

function encodeError(e: ToolError, losses: Loss[] | undefined, founding: boolean): McecError {
  const category = founding ? foundingMcecCategory(e.category) : e.category;
  const out: McecError = {
    code: e.code ?? e.category,
    category,
    detail: e.detail ?? defaultRemediation(e.category),
  };
  if (category !== e.category) {
    lose(
      losses,
      '/error/category',
      'category-mapped',
      `MCEC 3.0 has no category "${e.category}" (added in MCEC 2026-07); written as ${category}, the category that revision split it from`,
    );
  }
  if (e.lastObservation !== undefined) out.lastObservation = e.lastObservation;
  if (e.partialResult !== undefined) out.partialResult = e.partialResult;
  if (losses) {
    // Fields equal to what the category implies lose nothing: a reader derives them.
    if (informative(e.reason) && e.reason !== dwDefaultReason(e.category)) {
      lose(losses, '/error/reason', 'not-representable', 'MCEC errors have no reason field');
    }
    if (informative(e.remediation) && e.remediation !== defaultRemediation(e.category)) {
      lose(losses, '/error/remediation', 'not-representable', 'MCEC errors have no remediation field');
    }
    if (typeof e.retryable === 'boolean' && e.retryable !== defaultRetryable(e.category)) {
      lose(losses, '/error/retryable', 'not-representable', 'MCEC derives retryability from the category only');
    }
    for (const key of NOT_CARRIED_ERROR) {
      if (informative(e[key])) lose(losses, `/error/${key}`, 'not-representable', `MCEC errors have no ${key} field`);
    }
    if (e.extensions) {
      for (const key of Object.keys(e.extensions)) {
        lose(losses, '/error/extensions' + pointer([key]), 'not-representable', 'MCEC error objects are closed');
      }
    }
  }
  return out;
}

/**
 * Canonical outcome → MCEC document. `ok` is true for `ok`/`completed`. A
 * non-object result is wrapped as `{ value }`; a failure without an error gets
 * {@link MCEC_SYNTHESIZED_ERRORS}; everything MCEC cannot carry is reported in
 * `options.losses` (see docs/contracts.md).
 *
 * @example
 * ```ts
 * const losses: Loss[] = [];
 * const doc = encodeMcec({ status: 'ok', result: [1, 2], runId: 'r1' }, { losses });
 * // doc: { ok: true, result: { value: [1, 2] } }; losses: /result wrapped-non-object, /runId not-representable
 * ```
 */
export function encodeMcec(outcome: ToolOutcome, options?: EncodeOptions): McecToolResult {
  return encodeMcecAs(outcome, options, true);
}

/**
 * {@link encodeMcec} for the founding schema (`founding`: the OCR categories of 2026-07 are mapped
 * to `capture-blank` with a `category-mapped` loss) or for the 2026-07 revision (all twelve categories).
 */
export function encodeMcecAs(outcome: ToolOutcome, options: EncodeOptions | undefined, founding: boolean): McecToolResult {
  const losses = options?.losses;
  const status = outcome.status;
  const ok = isSuccessStatus(status);
  const doc = { ok } as McecBase & { ok: boolean; error?: McecError };
  if (outcome.sessionId !== undefined) doc.sessionId = outcome.sessionId;
  const result = outcome.result;
  if (result !== undefined) {
    if (result === null || isJsonObject(result)) {
      doc.result = result;
    } else {
      doc.result = { value: result };
      lose(losses, '/result', 'wrapped-non-object', 'MCEC result must be an object or null; wrapped as {"value": ...}');
    }
  }
  if (outcome.warnings !== undefined) doc.warnings = outcome.warnings;
  const error = outcome.error;
  if (ok) {
    if (error) lose(losses, '/error', 'dropped-error', 'MCEC forbids an error object when ok is true');
  } else if (error) {
    doc.error = encodeError(error, losses, founding);
  } else {
    // A copy: the caller owns the document and may change it.
    doc.error = { ...(MCEC_SYNTHESIZED_ERRORS[status as keyof typeof MCEC_SYNTHESIZED_ERRORS] ?? MCEC_SYNTHESIZED_ERRORS.error) };
    lose(losses, '/error', 'synthesized-error', `MCEC requires an error when ok is false; synthesized ${doc.error.code}`);
  }
  if (losses) {
    if (status !== 'ok' && status !== 'error') {
      lose(losses, '/status', 'dropped-status', `MCEC has only ok true/false; status "${status}" became ok: ${ok}`);
    }
    for (const key of NOT_CARRIED_TOP) {
      // Version 1 is what a DW encoder writes when there is none: nothing to lose.
      if (key === 'schemaVersion' && outcome.schemaVersion === DW_VERSION) continue;
      if (informative(outcome[key])) lose(losses, `/${key}`, 'not-representable', `MCEC has no field for ${key}`);
    }
    if (outcome.extensions) {
      for (const key of Object.keys(outcome.extensions)) {
        lose(losses, '/extensions' + pointer([key]), 'not-representable', 'MCEC envelopes are closed');
      }
    }
  }
  return doc as McecToolResult;
}

/** The MCEC contract object (for the {@link contracts} registry). */
export const mcecContract: Contract<McecToolResult> = {
  id: 'mcec',
  title: 'MCEC agent tool result',
  schema: mcecSchema,
  validate: validateMcec,
  check: checkMcec,
  decode: decodeMcec,
  encode: encodeMcec,
};
