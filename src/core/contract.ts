/**
 * The shape every contract module implements, and the registry of the three
 * contracts. A contract validates its wire documents (fast boolean check and a
 * full list of located issues), decodes them into the canonical
 * {@link ToolOutcome} and encodes canonical outcomes back out, reporting what
 * it cannot carry as {@link Loss} entries.
 *
 * @example
 * ```ts
 * import { contracts } from 'tool-envelope/core';
 * const doc = contracts.dw.encode(success({ rows: 3 }));
 * contracts.dw.validate(doc); // true
 * ```
 */
import { type Issue, ToolEnvelopeError } from './errors.js';
import type { ToolOutcome } from './model.js';
import { mcecContract } from './mcec.js';
import { dwContract, encodeDwJson } from './dw.js';
import { contextosContract } from './contextos.js';
import { mcec202607Contract } from './mcec-2026-07.js';
import { dw14Contract } from './dw-14.js';

/**
 * The result contracts, by dialect: the three founding ones (`mcec` is MCEC 3.0, `dw` is Durable
 * Workflow catalog 13, `contextos`) and the owners' later revisions, `mcec@2026-07` and `dw@14`.
 *
 * @example
 * ```ts
 * const id: ContractId = 'dw@14';
 * ```
 */
export type ContractId = 'mcec' | 'dw' | 'contextos' | 'mcec@2026-07' | 'dw@14';

/**
 * The contract ids, in a stable order: the founding three, then the revisions.
 *
 * @example
 * ```ts
 * CONTRACT_IDS.includes('mcec@2026-07'); // true
 * ```
 */
export const CONTRACT_IDS: readonly ContractId[] = ['mcec', 'dw', 'contextos', 'mcec@2026-07', 'dw@14'];

/**
 * The founding revision of each contract a later revision belongs to (`mcec@2026-07` → `mcec`).
 *
 * @example
 * ```ts
 * contractFamily('dw@14'); // 'dw'
 * ```
 */
export function contractFamily(id: ContractId): 'mcec' | 'dw' | 'contextos' {
  return id === 'mcec@2026-07' ? 'mcec' : id === 'dw@14' ? 'dw' : id;
}

/**
 * Something a target contract cannot represent. `path` is a JSON pointer into
 * the canonical outcome (e.g. `/runId`, `/error/reason`); `code` is a stable
 * kebab-case loss code (see docs/contracts.md, "Loss codes").
 *
 * @example
 * ```ts
 * const loss: Loss = { path: '/runId', code: 'not-representable', reason: 'MCEC has no run id' };
 * ```
 */
export interface Loss {
  path: string;
  code: string;
  reason: string;
}

/**
 * Options of every encoder.
 *
 * @example
 * ```ts
 * const losses: Loss[] = [];
 * encodeMcec(outcome, { losses });
 * ```
 */
export interface EncodeOptions {
  /** Collector: the encoder pushes one entry for everything it cannot carry. */
  losses?: Loss[];
  /** Durable Workflow preview byte limit (default 4096). */
  previewLimitBytes?: number;
}

/**
 * One wire contract over the canonical model.
 *
 * @example
 * ```ts
 * function roundTrip<W>(c: Contract<W>, doc: unknown): W { return c.encode(c.decode(doc)); }
 * ```
 */
export interface Contract<Wire> {
  /** Registry key. */
  readonly id: ContractId;
  /** Human-readable name. */
  readonly title: string;
  /** The contract's JSON Schema, as published. */
  readonly schema: object;
  /** Fast boolean check (stops at the first violation). */
  validate(doc: unknown): doc is Wire;
  /** Every violation, each with a JSON pointer and the rule broken; `[]` when valid. */
  check(doc: unknown): Issue[];
  /** Wire → canonical; throws `ToolEnvelopeError` `invalid-envelope` (with issues) on invalid input. */
  decode(doc: unknown): ToolOutcome;
  /** Canonical → wire; always returns a schema-valid document. */
  encode(outcome: ToolOutcome, options?: EncodeOptions): Wire;
}

/**
 * The registry of the contracts (founding and revisions), keyed by {@link ContractId}.
 *
 * @example
 * ```ts
 * for (const id of CONTRACT_IDS) console.log(contracts[id].title);
 * ```
 */
export const contracts = {
  mcec: mcecContract,
  dw: dwContract,
  contextos: contextosContract,
  'mcec@2026-07': mcec202607Contract,
  'dw@14': dw14Contract,
} as const;

/**
 * True when `value` is a {@link ContractId}.
 *
 * @example
 * ```ts
 * isContractId('dw'); // true
 * ```
 */
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
 * @example
 * ```ts
 * stringifyEnvelope(success({ n: 1 }), 'mcec'); // '{"ok":true,"result":{"n":1}}'
 * ```
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
