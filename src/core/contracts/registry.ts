/**
 * The registry of the result contracts (the founding three and the owners' later revisions):
 * the contract objects by id, detection of the contract a document claims, validation of any
 * document against any dialect, conversion between contracts through the canonical model, and
 * `stringifyEnvelope`, the JSON text of an outcome in any contract.
 */
import { type Issue, ToolEnvelopeError } from '../errors.js';
import { isJsonObject } from '../json.js';
import type { ToolOutcome } from '../model.js';
import type { Contract, ContractId, EncodeOptions, Loss } from './types.js';
import { DW14_FIELDS, boundedCheck, owns } from './wire.js';
import { type McecToolResult, checkMcec, mcecContract, validateMcec } from './mcec.js';
import { checkMcec202607, mcec202607Contract, validateMcec202607 } from './mcec-2026-07.js';
import { DW_SCHEMA_ID, type DwToolResult, checkDw, dwContract, encodeDwJson, validateDw } from './dw.js';
import { type Dw14ToolResult, checkDw14, dw14Contract, validateDw14 } from './dw-14.js';
import { CONTEXTOS_CALL_VERSION, checkContextosCall, validateContextosCall } from './contextos-call.js';
import { type ContextosToolResult, checkContextos, checkContextosResult, contextosContract, validateContextos, validateContextosResult } from './contextos.js';

export type { Contract, ContractId, EncodeOptions, Loss };

/** The contract ids, in a stable order: the founding three, then the revisions. */
export const CONTRACT_IDS: readonly ContractId[] = ['mcec', 'dw', 'contextos', 'mcec@2026-07', 'dw@14'];

/** The founding revision of each contract a later revision belongs to (`mcec@2026-07` → `mcec`). */
export function contractFamily(id: ContractId): 'mcec' | 'dw' | 'contextos' {
  return id === 'mcec@2026-07' ? 'mcec' : id === 'dw@14' ? 'dw' : id;
}

/** The registry of the contracts (founding and revisions), keyed by {@link ContractId}. */
export const contracts = {
  mcec: mcecContract,
  dw: dwContract,
  contextos: contextosContract,
  'mcec@2026-07': mcec202607Contract,
  'dw@14': dw14Contract,
} as const;

/** True when `value` is a {@link ContractId}. */
export function isContractId(value: unknown): value is ContractId {
  return value === 'mcec' || value === 'dw' || value === 'contextos' || value === 'mcec@2026-07' || value === 'dw@14';
}

/**
 * The JSON text of `outcome` encoded in `contract`: the same text as
 * `JSON.stringify(contracts[contract].encode(outcome, options))` (and the same
 * losses), made with the result serialised once. Use it wherever an envelope
 * is written out as text; for Durable Workflow it saves serialising the result
 * a second time for `payload_preview`.
 *
 * @throws ToolEnvelopeError `unknown-contract` when `contract` is not a {@link ContractId}.
 */
export function stringifyEnvelope(outcome: ToolOutcome, contract: ContractId, options?: EncodeOptions): string {
  if (contract === 'dw') return encodeDwJson(outcome, options);
  if (!isContractId(contract)) {
    throw new ToolEnvelopeError('unknown-contract', `unknown contract ${JSON.stringify(contract)}`, {
      issues: [{ code: 'unknown-contract', path: '', message: 'contract must be mcec, dw, contextos, mcec@2026-07 or dw@14', params: { contract } }],
    });
  }
  return JSON.stringify(contracts[contract].encode(outcome, options));
}

/**
 * What a document can be checked as: a result contract, the ContextOS call or
 * result envelope alone, or `auto` (detect by markers).
 */
export type Dialect = ContractId | 'contextos-call' | 'contextos-result' | 'auto';

/** What {@link detectContract} can answer. */
export type DetectedContract = ContractId | 'contextos-call';

/** The outcome of {@link validateEnvelope}. */
export interface EnvelopeValidation {
  valid: boolean;
  /** The contract the document was checked against (absent when none could be detected). */
  contract?: Exclude<Dialect, 'auto'>;
  issues: Issue[];
  /** With `maxIssues`: how many more violations were found than `issues` lists (absent when none). */
  unlisted?: number;
}

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
 * validateEnvelope({ hello: 1 }, 'auto').issues[0]?.code; // 'unknown-contract'
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

/** The wire type of each contract. */
export interface WireTypes {
  mcec: McecToolResult;
  dw: DwToolResult;
  contextos: ContextosToolResult;
  'mcec@2026-07': McecToolResult;
  'dw@14': Dw14ToolResult;
}

/** The wire type of contract `C`. */
export type WireOf<C extends ContractId> = WireTypes[C];

export interface ConvertOptions<To extends ContractId = ContractId> {
  /** The target contract. */
  to: To;
  /** The source contract; `auto` (default) detects it by markers. */
  from?: ContractId | 'auto';
  /** Throw `lossy-conversion` instead of returning losses. */
  strict?: boolean;
  /** Durable Workflow preview byte limit when a preview is computed (default 4096). */
  previewLimitBytes?: number;
}

/** The outcome of {@link convert}. */
export interface Conversion<To extends ContractId = ContractId> {
  document: WireOf<To>;
  from: ContractId;
  to: To;
  losses: Loss[];
}

/**
 * Decodes a document of contract `from` (or detected, with `auto`) into the canonical outcome.
 * Throws `unknown-contract` when no contract is detected (or the document is
 * a ContextOS call, which has no outcome), `invalid-envelope` when it breaks its schema.
 */
export function decode(doc: unknown, from: ContractId | 'auto' = 'auto'): ToolOutcome {
  return contracts[resolveSource(doc, from)].decode(doc);
}

/** Encodes a canonical outcome for contract `to` (see the contract modules for the rules). */
export function encode<To extends ContractId>(outcome: ToolOutcome, to: To, options?: EncodeOptions): WireOf<To> {
  if (!isContractId(to)) throw unknownContract(`unknown target contract ${JSON.stringify(to)}`);
  return contracts[to].encode(outcome, options) as WireOf<To>;
}

/**
 * Converts a result document from one contract to another through the
 * canonical model. `losses` lists every canonical field the target could not
 * carry (docs/contracts.md); with `strict`, any loss throws
 * `ToolEnvelopeError('lossy-conversion')` whose issues are the losses.
 *
 * @example
 * ```ts
 * const { document, losses } = convert({ ok: true, result: { n: 1 } }, { to: 'contextos' });
 * losses.map((l) => l.code); // ['missing-required-id', ..., 'missing-latency']
 * ```
 */
export function convert<To extends ContractId>(doc: unknown, options: ConvertOptions<To>): Conversion<To> {
  const from = resolveSource(doc, options.from ?? 'auto');
  const to = options.to;
  const outcome = contracts[from].decode(doc);
  const losses: Loss[] = [];
  const encodeOptions: EncodeOptions = { losses };
  if (options.previewLimitBytes !== undefined) encodeOptions.previewLimitBytes = options.previewLimitBytes;
  const document = encode(outcome, to, encodeOptions);
  if (options.strict && losses.length > 0) {
    throw new ToolEnvelopeError(
      'lossy-conversion',
      `converting ${from} to ${to} would lose ${losses.length} field(s): ${losses.map((l) => l.path).join(', ')}`,
      { issues: losses.map((l) => ({ code: l.code, path: l.path, message: l.reason })) },
    );
  }
  return { document, from, to, losses };
}

function resolveSource(doc: unknown, from: ContractId | 'auto'): ContractId {
  if (from !== 'auto') {
    if (!isContractId(from)) throw unknownContract(`unknown source contract ${JSON.stringify(from)}`);
    return from;
  }
  const detected = detectContract(doc);
  if (detected === undefined) {
    throw unknownContract('no contract marker found (DW "schema", ContextOS "envelope_version", MCEC boolean "ok")');
  }
  if (detected === 'contextos-call') {
    throw unknownContract('a ContextOS call envelope is not a tool result; decode it with decodeContextosCall');
  }
  return detected;
}

function unknownContract(message: string): ToolEnvelopeError {
  return new ToolEnvelopeError('unknown-contract', message, {
    issues: [{ code: 'unknown-contract', path: '', message }],
  });
}
