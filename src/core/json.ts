/**
 * JSON value types shared by every module, and the one answer to "is this already
 * plain JSON?". The canonical model only ever holds values of these types;
 * `toJsonSafe` (see `json-safe.ts`) turns arbitrary JavaScript values into them.
 * A plain JSON container is what `JSON.stringify` serialises by walking its own
 * members as they are (an array, or an object whose prototype is `Object.prototype`
 * or null), with no `toJSON` method to ask first.
 */
export type JsonPrimitive = string | number | boolean | null;

/** Any JSON value. */
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** True for a plain JSON object (not an array, not null). */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * True when `v` is an array or a plain object without a `toJSON` method: JSON
 * serialises it member by member, as it is (members are not looked at).
 */
export function isPlainJsonContainer(v: unknown): v is Record<string, unknown> | unknown[] {
  if (typeof v !== 'object' || v === null) return false;
  if (!Array.isArray(v)) {
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return false;
  }
  return typeof (v as { toJSON?: unknown }).toJSON !== 'function';
}

const NODE_BUDGET = 64;
const hasOwn = Object.prototype.hasOwnProperty;
const MAX_DEPTH = 16;

function plain(v: unknown, depth: number, budget: { n: number }): boolean {
  if (--budget.n < 0 || depth > MAX_DEPTH) return false;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v);
    case 'object':
      break;
    default:
      return false;
  }
  if (v === null) return true;
  if (!isPlainJsonContainer(v)) return false;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!plain(v[i], depth + 1, budget)) return false;
    return true;
  }
  for (const k in v) {
    // `for in` also walks inherited enumerable keys; a plain object has none unless Object.prototype was polluted.
    // (`hasOwnProperty.call` inside `for in` is a map check in optimised code; `Object.hasOwn` is a builtin call.)
    if (!hasOwn.call(v, k) || !plain(v[k], depth + 1, budget)) return false;
  }
  return true;
}

const budget = { n: 0 };

/**
 * True when `value` is small (at most 64 values, 16 deep) and already plain JSON:
 * `toJsonSafe` would return it as it is. The walk allocates nothing and gives up
 * (false) at the first value that is not plain JSON, past the budget, or on a
 * throwing getter; the caller then uses `toJsonSafe`, which handles every case.
 * It pays for the `runtime.invoke added cost per call` row of bench/runtime.bench.mjs
 * (a result that needs no copy); `toJsonSafe` is its reference.
 */
export function isSmallPlainJson(value: unknown): value is JsonValue {
  budget.n = NODE_BUDGET;
  try {
    return plain(value, 0, budget);
  } catch {
    // A getter or proxy trap threw; toJsonSafe records it.
    return false;
  }
}
