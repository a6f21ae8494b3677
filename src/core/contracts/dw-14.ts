/**
 * Durable Workflow MCP tool result, catalog version 14 (dialect `dw@14`): the founding envelope
 * (same `$id`, same `schema` marker) plus four top-level objects, `root_cause`, `remediation`,
 * `next_actions` and `mutation`, each with a schema of its own. Under catalog 13 they are unknown
 * top-level properties; every DW decoder lifts them into the canonical `rootCause`,
 * `remediationPlan`, `nextActions` and `safeMutation`, and this revision also reads the root
 * cause's words when the error states no category. Mapping: docs/contracts.md, "Revisions".
 */
import type { Issue } from '../errors.js';
import { isJsonObject } from '../json.js';
import type { ToolOutcome } from '../model.js';
import { dw14Schema as loadSchema, dw14Fast } from '../generated/core.js';
import type { AjvValidator, Contract, EncodeOptions, Loss } from './types.js';
import { DW14_FIELDS, checkWith, inferErrorCategory, invalidEnvelope, lose } from './wire.js';
import { type DwToolResult, decodeDw, encodeDw } from './dw.js';

const fast = dw14Fast as unknown as AjvValidator;
let schema: ReturnType<typeof loadSchema> | undefined;

/** The DW catalog-14 JSON Schema, as published (parsed on first use). */
export function dw14Schema(): ReturnType<typeof loadSchema> {
  return (schema ??= loadSchema());
}

/** DW 14 `root_cause` (`durable-workflow.v2.agent-root-cause`; open: unknown properties allowed). */
export interface DwRootCause {
  schema: 'durable-workflow.v2.agent-root-cause';
  version: number;
  category: string;
  reason: string;
  source: { kind: string; id?: string | null; [key: string]: unknown };
  retryable?: boolean | null;
  severity?: 'info' | 'warning' | 'error';
  actionable?: boolean;
  failure_category?: string | null;
  exception_class?: string | null;
  handled?: boolean | null;
  [key: string]: unknown;
}

/** DW 14 next action (in `next_actions` and `remediation.next_actions`). */
export interface DwNextAction {
  code: string;
  label: string;
  tool?: string | null;
  mutation?: boolean;
  allowed?: boolean | null;
  reason?: string | null;
  [key: string]: unknown;
}

/** DW 14 `remediation` (`durable-workflow.v2.agent-remediation`). */
export interface DwRemediation {
  schema: 'durable-workflow.v2.agent-remediation';
  version: number;
  classification: string;
  summary: string;
  automatic_repair: { tool: string; allowed: boolean; reason?: string | null; [key: string]: unknown };
  next_actions?: DwNextAction[];
  [key: string]: unknown;
}

/** DW 14 `mutation` (`durable-workflow.v2.safe-mutation`). */
export interface DwSafeMutation {
  schema: 'durable-workflow.v2.safe-mutation';
  version: number;
  tool: string;
  operation: string;
  safe: boolean;
  applied: boolean;
  reason?: string | null;
  [key: string]: unknown;
}

/** A Durable Workflow catalog-14 document: the founding shape and the four objects 14 adds. */
export interface Dw14ToolResult extends DwToolResult {
  root_cause?: DwRootCause | null;
  remediation?: DwRemediation | null;
  next_actions?: DwNextAction[];
  mutation?: DwSafeMutation | null;
}

/** The catalog version of this revision (`x-durable-workflow-catalog-version`). */
export const DW_CATALOG_VERSION_14 = 14;

/** Fast check: true when `doc` is a valid DW catalog-14 result. */
export function validateDw14(doc: unknown): doc is Dw14ToolResult {
  return fast(doc);
}

/** Every violation of the DW catalog-14 schema, located by JSON pointer. */
export function checkDw14(doc: unknown): Issue[] {
  return checkWith('dw14Full', doc);
}

/**
 * DW 14 document → canonical outcome: as {@link decodeDw}; an error that states no category
 * (and whose `reason` is not one of `DW_REASONS`) has it inferred from its own words, then from
 * the root cause's `reason` and `category`; an error without `reason` or `retryable` takes the
 * root cause's, one without `remediation` the remediation's `summary` (listed in
 * `error.fromRootCause`, which the DW encoders leave out again).
 */
export function decodeDw14(doc: unknown): ToolOutcome {
  if (!validateDw14(doc)) invalidEnvelope('Durable Workflow MCP tool result (catalog 14)', checkDw14(doc));
  const out = decodeDw(doc);
  const error = out.error;
  const cause = out.rootCause;
  const plan = out.remediationPlan;
  if (!error) return out;
  if (error.categoryInferred === true && error.category === 'internal' && isJsonObject(cause)) {
    error.category = inferErrorCategory(out.status, error.code, error.reason, error.detail, cause.reason, cause.category);
  }
  // What the error does not say, the root cause and the remediation may: the canonical error carries it, marked.
  const derived: NonNullable<typeof error.fromRootCause> = [];
  if (isJsonObject(cause)) {
    if (error.reason === undefined && typeof cause.reason === 'string') (error.reason = cause.reason), derived.push('reason');
    if (error.retryable === undefined && typeof cause.retryable === 'boolean') (error.retryable = cause.retryable), derived.push('retryable');
  }
  if (isJsonObject(plan) && error.remediation === undefined && typeof plan.summary === 'string') {
    error.remediation = plan.summary;
    derived.push('remediation');
  }
  if (derived.length > 0) error.fromRootCause = derived;
  return out;
}

/**
 * Canonical outcome → DW 14 document: as {@link encodeDw}; a `rootCause`, `remediationPlan`,
 * `nextActions` or `safeMutation` (or an extension under one of their keys) whose value breaks its
 * catalog-14 schema is left out, with a `not-representable` loss at its canonical pointer.
 */
export function encodeDw14(outcome: ToolOutcome, options?: EncodeOptions): Dw14ToolResult {
  const doc = encodeDw(outcome, options) as Dw14ToolResult;
  if (validateDw14(doc)) return doc;
  const losses: Loss[] | undefined = options?.losses;
  // The founding encoder's output is valid under 13, and 14 only adds these four objects: only they can be at fault.
  const issues = checkDw14(doc);
  for (const [field, key] of DW14_FIELDS) {
    if (!issues.some((i) => i.path === `/${key}` || i.path.startsWith(`/${key}/`))) continue;
    delete doc[key];
    const at = outcome[field] !== undefined ? `/${field}` : `/extensions/${key}`;
    lose(losses, at, 'not-representable', `DW 14 gives ${key} a schema this value breaks; left out`);
  }
  return doc;
}

/** The DW 14 contract object (for the `contracts` registry). */
export const dw14Contract: Contract<Dw14ToolResult> = {
  id: 'dw@14',
  title: 'Durable Workflow MCP tool result (catalog 14)',
  get schema() {
    return dw14Schema();
  },
  validate: validateDw14,
  check: checkDw14,
  decode: decodeDw14,
  encode: encodeDw14,
};
