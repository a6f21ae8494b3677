/**
 * Contract detection and validation of any document against any contract.
 *
 * @example
 * ```ts
 * import { validateEnvelope } from 'tool-envelope/core';
 * validateEnvelope({ ok: true }, 'auto'); // { valid: true, contract: 'mcec', issues: [] }
 * ```
 */
import type { ContractId } from './contract.js';
import type { Issue } from './errors.js';
import { isJsonObject } from './json.js';
import { boundedCheck, owns } from './wire.js';
import { checkMcec, validateMcec } from './mcec.js';
import { DW_SCHEMA_ID, checkDw, validateDw } from './dw.js';
import { DW14_FIELDS } from './dw14-fields.js';
import { checkMcec202607, validateMcec202607 } from './mcec-2026-07.js';
import { checkDw14, validateDw14 } from './dw-14.js';
import {
  CONTEXTOS_CALL_VERSION,
  checkContextos,
  checkContextosCall,
  checkContextosResult,
  validateContextos,
  validateContextosCall,
  validateContextosResult,
} from './contextos.js';

/**
 * What a document can be checked as: a result contract, the ContextOS call or
 * result envelope alone, or `auto` (detect by markers).
 *
 * @example
 * ```ts
 * const d: Dialect = 'contextos-call';
 * ```
 */
export type Dialect = ContractId | 'contextos-call' | 'contextos-result' | 'auto';

/**
 * What {@link detectContract} can answer.
 *
 * @example
 * ```ts
 * const c: DetectedContract = 'contextos-call';
 * ```
 */
export type DetectedContract = ContractId | 'contextos-call';

/**
 * The outcome of {@link validateEnvelope}.
 *
 * @example
 * ```ts
 * const r: EnvelopeValidation = { valid: false, issues: [{ code: 'unknown-contract', path: '', message: '...' }] };
 * ```
 */
export interface EnvelopeValidation {
  valid: boolean;
  /** The contract the document was checked against (absent when none could be detected). */
  contract?: Exclude<Dialect, 'auto'>;
  issues: Issue[];
  /** With `maxIssues`: how many more violations were found than `issues` lists (absent when none). */
  unlisted?: number;
}

/**
 * Options of {@link validateEnvelope}.
 *
 * @example
 * ```ts
 * validateEnvelope(doc, 'auto', { maxIssues: 100 });
 * ```
 */
export interface ValidateEnvelopeOptions {
  /** List at most this many issues, in memory bounded by it; `unlisted` counts the rest. */
  maxIssues?: number;
}

/**
 * The contract a document claims by its markers: the DW `schema` constant
 * (`dw@14` when it has one of catalog 14's objects, `root_cause`, `remediation`,
 * `next_actions`, `mutation`, valid under 14), a ContextOS `envelope_version`
 * (the call marker → `contextos-call`, any other → `contextos`), an MCEC boolean
 * `ok` (`mcec@2026-07` when its error's category is `ocr-blank` or `ocr-no-text`);
 * `undefined` when none. The document may still be invalid.
 *
 * @example
 * ```ts
 * detectContract({ schema: 'durable-workflow.v2.mcp-tool-result' }); // 'dw'
 * detectContract({ ok: false }); // 'mcec'
 * detectContract([1]); // undefined
 * ```
 */
export function detectContract(doc: unknown): DetectedContract | undefined {
  if (!isJsonObject(doc)) return undefined;
  if (doc.schema === DW_SCHEMA_ID) {
    // Catalog 14 keeps 13's markers: a document that uses one of 14's objects, in its shape, is 14.
    return DW14_FIELDS.some(([, key]) => owns(doc, key)) && validateDw14(doc) ? 'dw@14' : 'dw';
  }
  const marker = doc.envelope_version;
  if (typeof marker === 'string') return marker === CONTEXTOS_CALL_VERSION ? 'contextos-call' : 'contextos';
  if (typeof doc.ok === 'boolean') {
    // 2026-07 changed no marker: an error whose category only it has is 2026-07.
    const error = doc.error;
    const category = isJsonObject(error) ? error.category : undefined;
    return category === 'ocr-blank' || category === 'ocr-no-text' ? 'mcec@2026-07' : 'mcec';
  }
  return undefined;
}

const CHECKS: Record<Exclude<Dialect, 'auto'>, { fast(doc: unknown): boolean; full(doc: unknown): Issue[] }> = {
  mcec: { fast: validateMcec, full: checkMcec },
  dw: { fast: validateDw, full: checkDw },
  contextos: { fast: validateContextos, full: checkContextos },
  'contextos-call': { fast: validateContextosCall, full: checkContextosCall },
  'contextos-result': { fast: validateContextosResult, full: checkContextosResult },
  'mcec@2026-07': { fast: validateMcec202607, full: checkMcec202607 },
  'dw@14': { fast: validateDw14, full: checkDw14 },
};

/**
 * Validates `doc` against a dialect (`contextos` is the schema's call-or-result
 * union). With `auto`, the contract is detected first; when nothing is
 * detected the result is invalid with one `unknown-contract` issue.
 *
 * @example
 * ```ts
 * validateEnvelope({ ok: false }, 'mcec').issues[0]; // { code: 'required', path: '/error', ... }
 * validateEnvelope({ hello: 1 }, 'auto').issues[0].code; // 'unknown-contract'
 * validateEnvelope(hugeInvalidDoc, 'mcec', { maxIssues: 100 }); // { issues: [100 issues], unlisted: 1999901, ... }
 * ```
 */
export function validateEnvelope(doc: unknown, dialect: Dialect, options?: ValidateEnvelopeOptions): EnvelopeValidation {
  const contract = dialect === 'auto' ? detectContract(doc) : dialect;
  if (contract === undefined) {
    return {
      valid: false,
      issues: [
        {
          code: 'unknown-contract',
          path: '',
          message: 'no contract marker found (DW "schema", ContextOS "envelope_version", MCEC boolean "ok")',
        },
      ],
    };
  }
  const check = owns(CHECKS, contract) ? CHECKS[contract] : undefined;
  if (check === undefined) {
    return {
      valid: false,
      issues: [{ code: 'unknown-contract', path: '', message: `unknown dialect ${JSON.stringify(dialect)}` }],
    };
  }
  if (check.fast(doc)) return { valid: true, contract, issues: [] };
  const max = options?.maxIssues;
  if (max === undefined) return { valid: false, contract, issues: check.full(doc) };
  const { issues, unlisted } = boundedCheck(max, () => check.full(doc));
  return { valid: false, contract, issues, ...(unlisted > 0 ? { unlisted } : {}) };
}
