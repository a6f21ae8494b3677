/**
 * Durable Workflow 14's safe `mutation` as a ContextOS `mutations` reference that reads back to the same
 * object; one a reference cannot say goes to `metadata.mutation` (docs/contracts.md, "Safe mutation →
 * ContextOS mutations").
 */
import { type JsonObject, type JsonValue, isJsonObject } from '../json.js';

/** The `schema` constant of a DW 14 safe mutation. */
const SAFE_MUTATION_SCHEMA = 'durable-workflow.v2.safe-mutation';

/** The prefix of every safe-mutation reference. */
export const SAFE_MUTATION_REFERENCE_PREFIX = 'dw-safe-mutation:';

const KEYS = new Set(['schema', 'version', 'tool', 'operation', 'safe', 'applied', 'reason']);
const REFERENCE = /^dw-safe-mutation:v([1-9][0-9]*)\/([^/?&]*)\/([^/?&]*)\?safe=(true|false)(?:&reason=([^/?&]*))?$/;

/** `encodeURIComponent`, or undefined for a text it cannot encode (a lone surrogate). */
function encode(text: string): string | undefined {
  try {
    return encodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * The ContextOS `mutations` reference of a DW 14 safe mutation, or `undefined` when the value is
 * not one a reference can hold exactly: an applied mutation (`applied: true`) with the schema's
 * constant, an integer `version` >= 1, string `tool` and `operation`, boolean `safe`, a string
 * `reason` or none, and no other property.
 */
export function safeMutationReference(mutation: JsonValue | undefined): string | undefined {
  if (!isJsonObject(mutation)) return undefined;
  for (const key of Object.keys(mutation)) if (!KEYS.has(key)) return undefined;
  const { schema, version, tool, operation, safe, applied, reason } = mutation;
  if (schema !== SAFE_MUTATION_SCHEMA || applied !== true || typeof safe !== 'boolean') return undefined;
  if (!Number.isSafeInteger(version) || (version as number) < 1 || typeof tool !== 'string' || typeof operation !== 'string') return undefined;
  if (reason !== undefined && typeof reason !== 'string') return undefined;
  const t = encode(tool);
  const o = encode(operation);
  const r = reason === undefined ? '' : encode(reason);
  if (t === undefined || o === undefined || r === undefined) return undefined;
  return `${SAFE_MUTATION_REFERENCE_PREFIX}v${version}/${t}/${o}?safe=${safe}${reason === undefined ? '' : `&reason=${r}`}`;
}

/**
 * The DW 14 safe mutation a ContextOS `mutations` entry refers to, or `undefined` when the text is
 * not exactly a reference {@link safeMutationReference} writes (so that any other text stays a
 * plain reference).
 */
export function parseSafeMutationReference(text: string): JsonObject | undefined {
  const m = REFERENCE.exec(text);
  if (!m) return undefined;
  let tool: string;
  let operation: string;
  let reason: string | undefined;
  try {
    tool = decodeURIComponent(m[2]!);
    operation = decodeURIComponent(m[3]!);
    reason = m[5] === undefined ? undefined : decodeURIComponent(m[5]);
  } catch {
    return undefined;
  }
  const mutation: JsonObject = { schema: SAFE_MUTATION_SCHEMA, version: Number(m[1]), tool, operation, safe: m[4] === 'true', applied: true };
  if (reason !== undefined) mutation.reason = reason;
  // Only the one spelling the writer makes is a reference (e.g. `%41` for `A` is not).
  return safeMutationReference(mutation) === text ? mutation : undefined;
}
