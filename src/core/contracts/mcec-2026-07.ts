/**
 * MCEC agent tool result, revision 2026-07 (dialect `mcec@2026-07`): the founding 3.0 shape with
 * the schema moved to the repository root (a new `$id`) and two more categories in the closed set,
 * `ocr-blank` and `ocr-no-text` (twelve in all). Decoding and encoding are the founding MCEC
 * codec's; only the schema and the category set differ. Mapping: docs/contracts.md, "Revisions".
 */
import type { Issue } from '../errors.js';
import type { ToolOutcome } from '../model.js';
import { mcec202607Schema as loadSchema, mcec202607Fast } from '../generated/core.js';
import type { AjvValidator, Contract, EncodeOptions } from './types.js';
import { checkWith, invalidEnvelope } from './wire.js';
import { type McecToolResult, decodeValidMcec, encodeMcecAs, relocateErrorNot } from './mcec.js';

const fast = mcec202607Fast as unknown as AjvValidator;
let schema: ReturnType<typeof loadSchema> | undefined;

/** The MCEC 2026-07 JSON Schema, as published (parsed on first use). */
export function mcec202607Schema(): ReturnType<typeof loadSchema> {
  return (schema ??= loadSchema());
}

/** The `$id` of the 2026-07 revision. */
export const MCEC_2026_07_SCHEMA_ID = 'https://github.com/tig/mcec/blob/develop/agent-tool-result.schema.json';

/** Fast check: true when `doc` is a valid MCEC 2026-07 result. */
export function validateMcec202607(doc: unknown): doc is McecToolResult {
  return fast(doc);
}

/** Every violation of the MCEC 2026-07 schema, located by JSON pointer (as {@link checkMcec}). */
export function checkMcec202607(doc: unknown): Issue[] {
  return relocateErrorNot(doc, checkWith('mcec202607Full', doc));
}

/** MCEC 2026-07 document → canonical outcome (as {@link decodeMcec}). */
export function decodeMcec202607(doc: unknown): ToolOutcome {
  if (!validateMcec202607(doc)) invalidEnvelope('MCEC 2026-07 agent tool result', checkMcec202607(doc));
  return decodeValidMcec(doc as McecToolResult);
}

/** Canonical outcome → MCEC 2026-07 document (as {@link encodeMcec}, all twelve categories kept). */
export function encodeMcec202607(outcome: ToolOutcome, options?: EncodeOptions): McecToolResult {
  return encodeMcecAs(outcome, options, false);
}

/** The MCEC 2026-07 contract object (for the `contracts` registry). */
export const mcec202607Contract: Contract<McecToolResult> = {
  id: 'mcec@2026-07',
  title: 'MCEC agent tool result (2026-07)',
  get schema() {
    return mcec202607Schema();
  },
  validate: validateMcec202607,
  check: checkMcec202607,
  decode: decodeMcec202607,
  encode: encodeMcec202607,
};
