// Durable Workflow 14's top-level objects and the canonical fields that carry them: a module of its
// own, so that the DW and ContextOS codecs read it without the dw.ts <-> dw-codec.ts import cycle.
import type { ToolOutcome } from './model.js';
import { isNullableObject, isObjectArray } from './wire.js';

/**
 * Durable Workflow 14's top-level objects (unknown properties under 13) and the canonical fields
 * that carry them, with the shape a value must have to be lifted back (any DW document, and
 * ContextOS `metadata`).
 *
 * @example
 * ```ts
 * DW14_FIELDS.map(([field, key]) => `${field} <-> ${key}`); // ['rootCause <-> root_cause', ...]
 * ```
 */
export const DW14_FIELDS: readonly (readonly [keyof ToolOutcome, string, (v: unknown) => boolean])[] = [
  ['rootCause', 'root_cause', isNullableObject],
  ['remediationPlan', 'remediation', isNullableObject],
  ['nextActions', 'next_actions', isObjectArray],
  ['safeMutation', 'mutation', isNullableObject],
];
