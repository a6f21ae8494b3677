/**
 * The nesting bound of the JSON-RPC messages the gateway reads, from its clients and from its
 * upstreams. JSON.parse builds a value of any depth, but serialising it again (`JSON.stringify`,
 * to answer, to relay, to write the audit record) overflows the stack a few thousand levels down:
 * unbounded, a 10 000-deep argument or result left a call without an answer and without an audit
 * record. A message deeper than {@link MAX_MESSAGE_DEPTH} is refused where it is read instead:
 * a client's request is answered with a JSON-RPC error, an upstream's answer becomes the call's
 * `upstream-protocol-error`.
 */
import { DEFAULT_MAX_DEPTH } from 'tool-envelope/core';

/**
 * The deepest nesting of arrays and objects accepted in one message (core's `DEFAULT_MAX_DEPTH`,
 * the bound of `parseJson` and `toJsonSafe`): far beyond any real tool's arguments or result, and
 * well within what `JSON.stringify` serialises.
 */
export const MAX_MESSAGE_DEPTH = DEFAULT_MAX_DEPTH;

/** The text of the refusal: `Invalid Request: the message nests deeper than 1000 levels`. */
export const TOO_DEEP_MESSAGE = `Invalid Request: the message nests deeper than ${MAX_MESSAGE_DEPTH} levels`;

/**
 * Whether a parsed value nests arrays and objects deeper than `maxDepth` (a walk without
 * recursion, stopping at the first level too deep).
 */
export function valueNestsDeeper(value: unknown, maxDepth: number = MAX_MESSAGE_DEPTH): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: unknown[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const v = stack.pop() as object;
    const depth = depths.pop()!;
    if (depth > maxDepth) return true;
    if (Array.isArray(v)) {
      for (const x of v) {
        if (x !== null && typeof x === 'object') {
          stack.push(x);
          depths.push(depth + 1);
        }
      }
    } else {
      // for...in, not Object.values: no array per object on this per-answer path.
      for (const k in v) {
        const x = (v as Record<string, unknown>)[k];
        if (x !== null && typeof x === 'object') {
          stack.push(x);
          depths.push(depth + 1);
        }
      }
    }
  }
  return false;
}
