/**
 * The types every contract module shares: the contract ids, a {@link Loss}, the encoder options
 * and the {@link Contract} shape. Types only: nothing of this module exists at run time.
 */
import type { Issue } from '../errors.js';
import type { ToolOutcome } from '../model.js';

/**
 * The result contracts, by dialect: the three founding ones (`mcec` is MCEC 3.0, `dw` is Durable
 * Workflow catalog 13, `contextos`) and the owners' later revisions, `mcec@2026-07` and `dw@14`.
 */
export type ContractId = 'mcec' | 'dw' | 'contextos' | 'mcec@2026-07' | 'dw@14';

/**
 * Something a target contract cannot represent. `path` is a JSON pointer into
 * the canonical outcome (e.g. `/runId`, `/error/reason`); `code` is a stable
 * kebab-case loss code (see docs/contracts.md, "Loss codes").
 */
export interface Loss {
  path: string;
  code: string;
  reason: string;
}

export interface EncodeOptions {
  /** Collector: the encoder pushes one entry for everything it cannot carry. */
  losses?: Loss[];
  /** Durable Workflow preview byte limit (default 4096). */
  previewLimitBytes?: number;
}

/** One wire contract over the canonical model. */
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

/** An Ajv error object, as the standalone validators leave them in `.errors`. */
export interface AjvError {
  keyword: string;
  instancePath: string;
  schemaPath?: string;
  params: Record<string, unknown>;
  message?: string;
}

/** An Ajv standalone validate function. */
export type AjvValidator = ((data: unknown) => boolean) & {
  errors?: AjvError[] | null;
  /** How many errors the last call found (the full set keeps at most the current cap of them in `errors`). */
  total?: number;
};
