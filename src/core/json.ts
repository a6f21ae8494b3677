/**
 * JSON value types shared by every module. The canonical model only ever holds
 * values of these types; `toJsonSafe` (see `json-safe.ts`) turns arbitrary
 * JavaScript values into them.
 *
 * @example
 * ```ts
 * import type { JsonObject } from 'tool-envelope';
 * const payload: JsonObject = { rows: [1, 2, 3], next: null };
 * ```
 */
export type JsonPrimitive = string | number | boolean | null;

/**
 * Any JSON value.
 *
 * @example
 * ```ts
 * const v: JsonValue = [1, 'two', { three: true }];
 * ```
 */
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };

/**
 * A JSON object.
 *
 * @example
 * ```ts
 * const o: JsonObject = { a: 1 };
 * ```
 */
export type JsonObject = { [key: string]: JsonValue };

/**
 * True for a plain JSON object (not an array, not null).
 *
 * @example
 * ```ts
 * isJsonObject({ a: 1 }); // true
 * isJsonObject([1]);      // false
 * ```
 */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
