/**
 * Safe JSON out: `toJsonSafe` turns any JavaScript value a tool handler returns
 * into JSON, listing every value it had to replace. It never pollutes a prototype:
 * a `__proto__` or `constructor` key stays a plain own data property. It walks
 * values with an explicit stack, so a 100 000-deep value is reported as
 * `too-deep`, never as a stack overflow. (JSON text in is json-parse.ts; its
 * exports are re-exported here for the modules that import them from this path.)
 */
import { ToolEnvelopeError, pointer } from './errors.js';
import type { JsonObject, JsonValue } from './json.js';
import { DEFAULT_MAX_DEPTH, checkCount } from './json-parse.js';

export { DEFAULT_MAX_DEPTH, jsonNestsDeeper, type ParseJsonOptions, parseJson } from './json-parse.js';

// Base64 in plain ECMAScript: the core runs where there is no `Buffer`, and this is the one encoder every area uses.
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * The base64 text of `bytes` (RFC 4648 §4, standard alphabet, `=` padding), in plain
 * ECMAScript: the one encoder of every area (the core has no `Buffer`).
 */
export function bytesToBase64(bytes: Uint8Array): string {
  // Chunks keep the concatenated string flat: one long `+=` chain builds a deep rope.
  const parts: string[] = [];
  let chunk = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    chunk += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + ALPHABET[n & 63]!;
    if (chunk.length >= 8192) {
      parts.push(chunk);
      chunk = '';
    }
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    chunk += `${ALPHABET[n >> 18]!}${ALPHABET[(n >> 12) & 63]!}==`;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    chunk += `${ALPHABET[n >> 18]!}${ALPHABET[(n >> 12) & 63]!}${ALPHABET[(n >> 6) & 63]!}=`;
  }
  parts.push(chunk);
  return parts.join('');
}

/** One value `toJsonSafe` had to change: where it was, what it was and what it became. */
export interface JsonReplacement {
  /** JSON pointer to the value in the input. */
  path: string;
  /** What the value was: `bigint`, `NaN`, `undefined`, `function`, `Date`, `Map`, a class name, ... */
  from: string;
  /** What it became: `string`, `null`, `omitted`, `object`, `array`, `$binary`, ... */
  to: string;
}

/** The JSON form of a value and the list of replacements made to get it. */
export interface JsonSafeResult {
  value: JsonValue;
  replaced: JsonReplacement[];
}

export interface ToJsonSafeOptions {
  /** Deepest accepted nesting of arrays and objects. Default {@link DEFAULT_MAX_DEPTH}. */
  maxDepth?: number;
}

/** A container being walked. `out` is created only when something in it changes. */
interface Frame {
  src: object;
  array: boolean;
  keys: readonly string[] | undefined;
  /** Values already extracted (Map, Set, class instances); otherwise read from `src`. */
  vals: readonly unknown[] | undefined;
  n: number;
  i: number;
  out: JsonValue[] | JsonObject | undefined;
  /** The key of this container in its parent. */
  at: string;
  /** The value the parent held before conversion; the container changed iff its result is not this. */
  orig: unknown;
}

const SAME = Symbol('same');
const OMIT = Symbol('omit');
type Step = typeof SAME | typeof OMIT | { value: JsonValue } | Frame;

/** Sets an own data property even for `__proto__`, whose plain assignment would change the prototype. */
function setOwn(obj: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

function className(v: object): string {
  try {
    const ctor = (Object.getPrototypeOf(v) as { constructor?: { name?: unknown } } | null)?.constructor;
    return typeof ctor?.name === 'string' && ctor.name !== '' ? ctor.name : 'object';
  } catch {
    return 'object';
  }
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Turns any JavaScript value into JSON, the way a tool result must travel.
 * Every change is listed in `replaced` with the JSON pointer of the value:
 * - BigInt → decimal string; NaN, ±Infinity → null;
 * - `undefined`, functions, symbols → omitted in objects, null in arrays (and at the root);
 * - Date → ISO string (an invalid Date → null); boxed primitives → the primitive; RegExp → its source text;
 * - Map → an object when every key is a string, else an array of `[key, value]` pairs; Set → an array;
 * - ArrayBuffer, typed arrays, DataView, Buffer → `{ "$binary": "<base64 of the bytes>", "type": "<class>" }`
 *   (the bytes of the view in platform byte order);
 * - Error → `{ name, message, ...own enumerable properties }`;
 * - an object with `toJSON` → what `toJSON(key)` returns (a throwing `toJSON` is recorded and the value omitted/null);
 * - any other class instance → its own enumerable properties;
 * - a getter (or proxy trap) that throws → recorded, the property omitted.
 *
 * Strings are kept as they are, lone surrogates included (`JSON.stringify`
 * writes them as `\udxxx` escapes, which is valid JSON). `__proto__` keys stay
 * own data properties. A value that is already plain JSON is returned as the
 * same reference, with `replaced` empty and nothing copied.
 *
 * @throws ToolEnvelopeError `not-json-safe` for a circular reference (naming
 *   its path); `too-deep` beyond `maxDepth`; `invalid-option` for a bad option.
 *
 * @example
 * ```ts
 * const { value, replaced } = toJsonSafe({ at: new Date(0), n: 10n, f() {} });
 * // value: { at: '1970-01-01T00:00:00.000Z', n: '10' }
 * // replaced: /at Date -> string, /n bigint -> string, /f function -> omitted
 * ```
 */
export function toJsonSafe(value: unknown, options?: ToJsonSafeOptions): JsonSafeResult {
  const maxDepth = checkCount('maxDepth', options?.maxDepth, DEFAULT_MAX_DEPTH);
  const replaced: JsonReplacement[] = [];
  const stack: Frame[] = [];
  const open = new Set<object>();

  const pathTo = (key: string | undefined): string => {
    const segs: string[] = [];
    for (let i = 1; i < stack.length; i++) segs.push(stack[i]!.at);
    if (key !== undefined) segs.push(key);
    return pointer(segs);
  };
  const note = (key: string | undefined, from: string, to: string): void => {
    replaced.push({ path: pathTo(key), from, to });
  };
  const swap = (key: string | undefined, from: string, v: JsonValue): Step => {
    note(key, from, v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
    return { value: v };
  };
  const drop = (key: string | undefined, inArray: boolean, from: string): Step => {
    note(key, from, inArray ? 'null' : 'omitted');
    return inArray ? { value: null } : OMIT;
  };
  const frame = (src: object, key: string | undefined, init: Pick<Frame, 'array' | 'keys' | 'vals' | 'n' | 'out'>): Frame => {
    if (stack.length + 1 > maxDepth) {
      const path = pathTo(key);
      throw new ToolEnvelopeError('too-deep', `value nests deeper than ${maxDepth} at ${path}`, {
        issues: [{ code: 'too-deep', path, message: `deeper than ${maxDepth}`, params: { maxDepth } }],
      });
    }
    return { src, i: 0, at: key ?? '', orig: src, ...init };
  };
  /** Converts one value; `key` is undefined at the root. */
  const convert = (v: unknown, key: string | undefined, inArray: boolean, viaToJSON = false): Step => {
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return SAME;
      case 'number':
        // -0 stays: JSON.parse('-0') gives it too, and JSON.stringify writes it as 0.
        return Number.isFinite(v) ? SAME : swap(key, String(v), null);
      case 'bigint':
        return swap(key, 'bigint', v.toString());
      case 'undefined':
      case 'function':
      case 'symbol':
        return drop(key, inArray, typeof v);
    }
    if (v === null) return SAME;
    const obj = v as object;
    if (open.has(obj)) {
      const path = pathTo(key);
      throw new ToolEnvelopeError('not-json-safe', `circular reference at ${path || 'the root'}`, {
        issues: [{ code: 'not-json-safe', path, message: 'circular reference' }],
      });
    }
    try {
      if (Array.isArray(obj)) return frame(obj, key, { array: true, keys: undefined, vals: undefined, n: obj.length, out: undefined });
      const proto: unknown = Object.getPrototypeOf(obj);
      if (proto === Object.prototype || proto === null) {
        if (!viaToJSON && typeof (obj as { toJSON?: unknown }).toJSON === 'function') return fromToJSON(obj, key, inArray);
        const keys = Object.keys(obj);
        return frame(obj, key, { array: false, keys, vals: undefined, n: keys.length, out: undefined });
      }
      return special(obj, key, inArray, viaToJSON);
    } catch (e) {
      if (e instanceof ToolEnvelopeError) throw e;
      return drop(key, inArray, `unreadable ${className(obj)} (${describe(e)})`);
    }
  };
  const fromToJSON = (obj: object, key: string | undefined, inArray: boolean): Step => {
    let result: unknown;
    try {
      result = (obj as { toJSON: (k: string) => unknown }).toJSON(key ?? '');
    } catch (e) {
      return drop(key, inArray, `${className(obj)}.toJSON threw (${describe(e)})`);
    }
    if (result === undefined || typeof result === 'function' || typeof result === 'symbol') {
      return drop(key, inArray, `${className(obj)}.toJSON gave ${typeof result}`);
    }
    note(key, `${className(obj)}.toJSON`, result === null ? 'null' : Array.isArray(result) ? 'array' : typeof result);
    // JSON.stringify calls toJSON once per value: its result is converted without calling it again.
    const step = convert(result, key, inArray, true);
    return step === SAME ? { value: result as JsonValue } : step;
  };
  const entriesFrame = (src: object, key: string | undefined, keys: string[], vals: unknown[], from: string): Frame => {
    note(key, from, 'object');
    return frame(src, key, { array: false, keys, vals, n: keys.length, out: {} });
  };
  const listFrame = (src: object, key: string | undefined, vals: unknown[], from: string): Frame => {
    note(key, from, 'array');
    return frame(src, key, { array: true, keys: undefined, vals, n: vals.length, out: [] });
  };
  const special = (obj: object, key: string | undefined, inArray: boolean, viaToJSON: boolean): Step => {
    if (obj instanceof Date) {
      const t = obj.getTime();
      return swap(key, 'Date', Number.isNaN(t) ? null : obj.toISOString());
    }
    if (obj instanceof Number || obj instanceof String || obj instanceof Boolean || obj instanceof BigInt) {
      const prim: unknown = obj.valueOf();
      const step = convert(prim, key, inArray);
      if (step === SAME) return swap(key, className(obj), prim as JsonValue);
      return step;
    }
    if (obj instanceof RegExp) return swap(key, 'RegExp', String(obj));
    if (obj instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && obj instanceof SharedArrayBuffer)) {
      note(key, className(obj), '$binary');
      return { value: { $binary: bytesToBase64(new Uint8Array(obj)), type: className(obj) } };
    }
    if (ArrayBuffer.isView(obj)) {
      note(key, className(obj), '$binary');
      return { value: { $binary: bytesToBase64(new Uint8Array(obj.buffer, obj.byteOffset, obj.byteLength)), type: className(obj) } };
    }
    if (obj instanceof Map) {
      const ks: unknown[] = [];
      const vs: unknown[] = [];
      for (const [k, val] of obj) {
        ks.push(k);
        vs.push(val);
      }
      if (ks.every((k) => typeof k === 'string')) return entriesFrame(obj, key, ks as string[], vs, 'Map');
      return listFrame(
        obj,
        key,
        ks.map((k, i) => [k, vs[i]]),
        'Map',
      );
    }
    if (obj instanceof Set) return listFrame(obj, key, [...obj], 'Set');
    if (!viaToJSON && typeof (obj as { toJSON?: unknown }).toJSON === 'function') return fromToJSON(obj, key, inArray);
    const keys: string[] = [];
    const vals: unknown[] = [];
    if (obj instanceof Error) {
      keys.push('name', 'message');
      vals.push(obj.name, obj.message);
    }
    const failed: JsonReplacement[] = [];
    for (const k of Object.keys(obj)) {
      if (obj instanceof Error && (k === 'name' || k === 'message')) continue;
      try {
        vals.push((obj as Record<string, unknown>)[k]);
        keys.push(k);
      } catch (e) {
        failed.push({ path: pathTo(key) + pointer([k]), from: `getter threw (${describe(e)})`, to: 'omitted' });
      }
    }
    const f = entriesFrame(obj, key, keys, vals, className(obj));
    replaced.push(...failed);
    return f;
  };

  /** Puts a converted child into its parent, copying the parent on the first change. */
  const place = (f: Frame, index: number, changed: boolean, result: JsonValue | typeof OMIT): void => {
    if (!changed && f.out === undefined) return;
    if (f.out === undefined) {
      // The first change: copy what came before (all of it unchanged, so the source values).
      if (f.array) f.out = (f.src as unknown[]).slice(0, index) as JsonValue[];
      else {
        const out: JsonObject = {};
        const src = f.src as Record<string, unknown>;
        for (let j = 0; j < index; j++) {
          const k = f.keys![j]!;
          setOwn(out, k, src[k] as JsonValue);
        }
        f.out = out;
      }
    }
    if (result === OMIT) return;
    if (f.array) (f.out as JsonValue[]).push(result);
    else setOwn(f.out as JsonObject, f.keys![index]!, result);
  };

  const isFrame = (step: Step): step is Frame => typeof step === 'object' && !('value' in step);
  const rootStep = convert(value, undefined, true);
  if (rootStep === SAME) return { value: value as JsonValue, replaced };
  if (rootStep === OMIT) return { value: null, replaced };
  if (!isFrame(rootStep)) return { value: rootStep.value, replaced };
  rootStep.orig = value;
  stack.push(rootStep);
  open.add(rootStep.src);
  for (;;) {
    const f = stack[stack.length - 1]!;
    if (f.i >= f.n) {
      stack.pop();
      open.delete(f.src);
      const result = (f.out ?? f.src) as JsonValue;
      const parent = stack[stack.length - 1];
      if (parent === undefined) return { value: result, replaced };
      place(parent, parent.i, result !== f.orig, result);
      parent.i++;
      continue;
    }
    const index = f.i;
    const key = f.array ? String(index) : f.keys![index]!;
    let child: unknown;
    if (f.vals !== undefined) child = f.vals[index];
    else {
      try {
        child = f.array ? (f.src as unknown[])[index] : (f.src as Record<string, unknown>)[key];
      } catch (e) {
        const step = drop(key, f.array, `getter threw (${describe(e)})`);
        place(f, index, true, step === OMIT ? OMIT : null);
        f.i++;
        continue;
      }
    }
    const step = convert(child, key, f.array);
    if (isFrame(step)) {
      step.orig = child;
      stack.push(step);
      open.add(step.src);
      continue;
    }
    place(f, index, step !== SAME, step === SAME ? (child as JsonValue) : step === OMIT ? OMIT : step.value);
    f.i++;
  }
}
/** True when `value` is already plain JSON: `toJsonSafe` would return it unchanged. */
export function isJsonSafe(value: unknown): boolean {
  try {
    return toJsonSafe(value).replaced.length === 0;
  } catch {
    return false;
  }
}
