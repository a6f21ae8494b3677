/**
 * A fast path in front of `toJsonSafe` for the common case: a small result
 * that is already plain JSON. The walk allocates nothing and gives up (false)
 * at the first value that is not plain JSON, past a node budget or depth, or
 * on a throwing getter; then the caller uses `toJsonSafe`, which handles
 * every case. A true answer means `toJsonSafe` would return the value as is.
 */

const NODE_BUDGET = 64;

function plain(v: unknown, depth: number, budget: { n: number }): boolean {
  if (--budget.n < 0 || depth > 16) return false;
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
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!plain(v[i], depth + 1, budget)) return false;
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return false;
  const o = v as Record<string, unknown>;
  if (typeof o.toJSON === 'function') return false;
  for (const k in o) {
    // `for in` also walks inherited enumerable keys; a plain object has none unless Object.prototype was polluted.
    if (!Object.hasOwn(o, k) || !plain(o[k], depth + 1, budget)) return false;
  }
  return true;
}

const budget = { n: 0 };

/**
 * True when `value` is small (at most 64 values, 16 deep) and already plain JSON.
 *
 * @example
 * ```ts
 * isSmallPlainJson({ rows: [1, 2] }); // true
 * isSmallPlainJson({ at: new Date() }); // false: let toJsonSafe convert it
 * ```
 */
export function isSmallPlainJson(value: unknown): boolean {
  budget.n = NODE_BUDGET;
  try {
    return plain(value, 0, budget);
  } catch {
    // A getter or proxy trap threw; toJsonSafe records it.
    return false;
  }
}
