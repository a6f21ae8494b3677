/**
 * Safe JSON in and out: `parseJson` turns untrusted text into a JSON value with
 * typed errors (position, line and column for malformed text; size and depth
 * limits), and `toJsonSafe` turns any JavaScript value a tool handler returns
 * into JSON, listing every value it had to replace.
 *
 * Neither ever pollutes a prototype: a `__proto__` or `constructor` key stays a
 * plain own data property. Both walk values with an explicit stack, so a
 * 100 000-deep value is reported as `too-deep`, never as a stack overflow.
 */
import { ToolEnvelopeError, pointer, type Issue } from './errors.js';
import type { JsonObject, JsonValue } from './json.js';

/**
 * The nesting depth `parseJson` and `toJsonSafe` accept by default.
 *
 * @example
 * ```ts
 * parseJson(text, { maxDepth: DEFAULT_MAX_DEPTH * 2 });
 * ```
 */
export const DEFAULT_MAX_DEPTH = 1000;

/**
 * Options of {@link parseJson}.
 *
 * @example
 * ```ts
 * const o: ParseJsonOptions = { maxBytes: 1 << 20, maxDepth: 64 };
 * ```
 */
export interface ParseJsonOptions {
  /** Largest accepted text, in bytes of UTF-8. Default: no limit. */
  maxBytes?: number;
  /** Deepest accepted nesting of arrays and objects (`[[1]]` is 2 deep). Default {@link DEFAULT_MAX_DEPTH}. */
  maxDepth?: number;
}

function checkCount(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(Number.isSafeInteger(value) || value === Number.POSITIVE_INFINITY) || value < 0) {
    throw new ToolEnvelopeError('invalid-option', `${name} must be a non-negative integer, got ${String(value)}`, {
      issues: [{ code: 'invalid-option', path: '', message: `${name} must be a non-negative integer`, params: { [name]: value } }],
    });
  }
  return value;
}

/** Bytes of UTF-8 in `text`, stopping early once `stopAbove` is exceeded. */
function utf8Length(text: string, stopAbove: number): number {
  let bytes = 0;
  for (let i = 0; i < text.length && bytes <= stopAbove; i++) {
    const c = text.charCodeAt(i);
    // A surrogate pair is 4 bytes (1 + 3); a lone surrogate becomes U+FFFD (3).
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : (c & 0xfc00) === 0xd800 && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 1 : 3;
  }
  return bytes;
}

/**
 * The position where the bracket nesting of JSON text first exceeds `limit`,
 * skipping strings (jumped over with `indexOf`); undefined when it never does.
 */
function nestingExceeds(text: string, limit: number): number | undefined {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip to the closing quote: one not preceded by an odd run of backslashes.
      let j = i + 1;
      for (;;) {
        j = text.indexOf('"', j);
        if (j < 0) return undefined;
        let k = j - 1;
        while (text.charCodeAt(k) === 0x5c) k--;
        if ((j - 1 - k) % 2 === 0) break;
        j++;
      }
      i = j;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return i;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return undefined;
}

function lineColumn(text: string, position: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < position; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: position - lineStart + 1 };
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * Finds where and why `text` is not JSON (RFC 8259), without recursion.
 * Only called after `JSON.parse` failed, to give a position V8's messages do not always carry.
 */
function locateSyntaxError(text: string): { position: number; reason: string } | undefined {
  const n = text.length;
  const stack: number[] = []; // 0x5b '[' or 0x7b '{'
  type State = 'value' | 'value-or-close' | 'key' | 'key-or-close' | 'colon' | 'after';
  let state: State = 'value';
  let i = 0;
  const fail = (position: number, reason: string) => ({ position, reason });
  const show = (p: number) => (p >= n ? 'end of input' : `character ${JSON.stringify(text[p])}`);
  for (;;) {
    while (i < n && WS.has(text.charCodeAt(i))) i++;
    if (state === 'after') {
      if (stack.length === 0) return i < n ? fail(i, `unexpected ${show(i)} after the JSON value`) : undefined;
      const open = stack[stack.length - 1]!;
      const close = open === 0x5b ? 0x5d : 0x7d;
      const c = text.charCodeAt(i);
      if (c === 0x2c) {
        i++;
        state = open === 0x5b ? 'value' : 'key';
      } else if (c === close) {
        i++;
        stack.pop();
      } else return fail(i, `expected ',' or '${String.fromCharCode(close)}' but found ${show(i)}`);
      continue;
    }
    if (i >= n) return fail(i, 'unexpected end of input');
    const c = text.charCodeAt(i);
    if (state === 'colon') {
      if (c !== 0x3a) return fail(i, `expected ':' but found ${show(i)}`);
      i++;
      state = 'value';
      continue;
    }
    if (state === 'key' || state === 'key-or-close') {
      if (state === 'key-or-close' && c === 0x7d) {
        i++;
        stack.pop();
        state = 'after';
        continue;
      }
      if (c !== 0x22) return fail(i, `expected a property name in double quotes but found ${show(i)}`);
      const end = scanString(text, i);
      if (typeof end !== 'number') return end;
      i = end;
      state = 'colon';
      continue;
    }
    // state is 'value' or 'value-or-close'
    if (state === 'value-or-close' && c === 0x5d) {
      i++;
      stack.pop();
      state = 'after';
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      stack.push(c);
      i++;
      state = c === 0x7b ? 'key-or-close' : 'value-or-close';
      continue;
    }
    let end: number | { position: number; reason: string };
    if (c === 0x22) end = scanString(text, i);
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) end = scanNumber(text, i);
    else {
      const word = ['true', 'false', 'null'].find((w) => text.startsWith(w, i));
      end = word ? i + word.length : fail(i, `unexpected ${show(i)}`);
    }
    if (typeof end !== 'number') return end;
    i = end;
    state = 'after';
  }
}

function scanString(text: string, start: number): number | { position: number; reason: string } {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) return i + 1;
    if (c < 0x20) return { position: i, reason: 'unescaped control character in a string' };
    if (c === 0x5c) {
      const e = text[i + 1];
      if (e === 'u') {
        if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return { position: i, reason: 'bad \\u escape in a string' };
        i += 5;
      } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
      else return { position: i, reason: 'bad escape in a string' };
    }
  }
  return { position: text.length, reason: 'unterminated string' };
}

function scanNumber(text: string, start: number): number | { position: number; reason: string } {
  const m = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  m.lastIndex = start;
  const found = m.exec(text);
  if (!found || found[0] === '-') return { position: start, reason: 'malformed number' };
  const end = start + found[0].length;
  // A number must not run on into a digit, '.', or exponent it could not consume (e.g. "01", "1.", "1e").
  if (/[0-9.eE]/.test(text[end] ?? '')) return { position: end, reason: 'malformed number' };
  return end;
}

/**
 * Parses untrusted JSON text with typed errors: malformed text gives
 * `invalid-json` (with position, line and column), text over `maxBytes`
 * gives `too-large`, nesting deeper than `maxDepth` gives `too-deep`.
 * `__proto__`/`constructor` keys become plain own data properties.
 *
 * @example
 * ```ts
 * parseJson('{"a":[1,2]}');         // { a: [1, 2] }
 * parseJson('{"a":}');              // throws ToolEnvelopeError 'invalid-json' at line 1, column 6
 * parseJson('[[1]]', { maxDepth: 1 }); // throws 'too-deep'
 * ```
 */
export function parseJson(text: string, options?: ParseJsonOptions): JsonValue {
  const maxBytes = checkCount('maxBytes', options?.maxBytes, Number.POSITIVE_INFINITY);
  const maxDepth = checkCount('maxDepth', options?.maxDepth, DEFAULT_MAX_DEPTH);
  if (text.length > maxBytes || (text.length * 3 > maxBytes && utf8Length(text, maxBytes) > maxBytes)) {
    throw new ToolEnvelopeError('too-large', `JSON text is larger than ${maxBytes} bytes`, {
      issues: [{ code: 'too-large', path: '', message: `larger than ${maxBytes} bytes`, params: { maxBytes } }],
    });
  }
  // Text shorter than the limit cannot nest deeper than it; skip the scan.
  if (text.length > maxDepth) {
    const at = nestingExceeds(text, maxDepth);
    if (at !== undefined) throw tooDeepText(text, at, maxDepth);
  }
  try {
    // JSON.parse defines every key as an own data property (CreateDataProperty),
    // so "__proto__" never reaches a prototype setter.
    return JSON.parse(text) as JsonValue;
  } catch (e) {
    if (e instanceof RangeError) throw tooDeepText(text, 0, maxDepth, e);
    const found = locateSyntaxError(text) ?? { position: 0, reason: e instanceof Error ? e.message : String(e) };
    const { line, column } = lineColumn(text, found.position);
    const message = `invalid JSON at line ${line}, column ${column} (position ${found.position}): ${found.reason}`;
    const issue: Issue = {
      code: 'invalid-json',
      path: '',
      message,
      params: { position: found.position, line, column, reason: found.reason },
    };
    throw new ToolEnvelopeError('invalid-json', message, { issues: [issue], cause: e });
  }
}

function tooDeepText(text: string, position: number, maxDepth: number, cause?: unknown): ToolEnvelopeError {
  const { line, column } = lineColumn(text, position);
  const message = `JSON nests deeper than ${maxDepth} at line ${line}, column ${column}`;
  return new ToolEnvelopeError('too-deep', message, {
    issues: [{ code: 'too-deep', path: '', message, params: { maxDepth, position, line, column } }],
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * One value `toJsonSafe` had to change: where it was, what it was and what it became.
 *
 * @example
 * ```ts
 * const r: JsonReplacement = { path: '/at', from: 'Date', to: 'string' };
 * ```
 */
export interface JsonReplacement {
  /** JSON pointer to the value in the input. */
  path: string;
  /** What the value was: `bigint`, `NaN`, `undefined`, `function`, `Date`, `Map`, a class name, ... */
  from: string;
  /** What it became: `string`, `null`, `omitted`, `object`, `array`, `$binary`, ... */
  to: string;
}

/**
 * The JSON form of a value and the list of replacements made to get it.
 *
 * @example
 * ```ts
 * const r: JsonSafeResult = toJsonSafe({ n: 1n }); // { value: { n: '1' }, replaced: [{ path: '/n', from: 'bigint', to: 'string' }] }
 * ```
 */
export interface JsonSafeResult {
  value: JsonValue;
  replaced: JsonReplacement[];
}

/**
 * Options of {@link toJsonSafe}.
 *
 * @example
 * ```ts
 * const o: ToJsonSafeOptions = { maxDepth: 64 };
 * ```
 */
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

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

function base64(bytes: Uint8Array): string {
  const parts: string[] = [];
  let chunk = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    chunk += BASE64[n >> 18]! + BASE64[(n >> 12) & 63]! + BASE64[(n >> 6) & 63]! + BASE64[n & 63]!;
    if (chunk.length >= 8192) {
      parts.push(chunk);
      chunk = '';
    }
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    chunk += BASE64[n >> 18]! + BASE64[(n >> 12) & 63]! + '==';
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    chunk += BASE64[n >> 18]! + BASE64[(n >> 12) & 63]! + BASE64[(n >> 6) & 63]! + '=';
  }
  parts.push(chunk);
  return parts.join('');
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
 * @example
 * ```ts
 * const { value, replaced } = toJsonSafe({ at: new Date(0), n: 10n, f() {} });
 * // value: { at: '1970-01-01T00:00:00.000Z', n: '10' }
 * // replaced: [{ path: '/at', from: 'Date', to: 'string' }, { path: '/n', from: 'bigint', to: 'string' },
 * //            { path: '/f', from: 'function', to: 'omitted' }]
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
      return { value: { $binary: base64(new Uint8Array(obj)), type: className(obj) } };
    }
    if (ArrayBuffer.isView(obj)) {
      note(key, className(obj), '$binary');
      return { value: { $binary: base64(new Uint8Array(obj.buffer, obj.byteOffset, obj.byteLength)), type: className(obj) } };
    }
    if (obj instanceof Map) {
      const ks: unknown[] = [];
      const vs: unknown[] = [];
      for (const [k, val] of obj) {
        ks.push(k);
        vs.push(val);
      }
      if (ks.every((k) => typeof k === 'string')) return entriesFrame(obj, key, ks as string[], vs, 'Map');
      return listFrame(obj, key, ks.map((k, i) => [k, vs[i]]), 'Map');
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
/**
 * True when `value` is already plain JSON: `toJsonSafe` would return it unchanged.
 *
 * @example
 * ```ts
 * isJsonSafe({ a: [1, 'x', null] }); // true
 * isJsonSafe({ a: undefined });      // false
 * isJsonSafe(new Date());            // false
 * ```
 */
export function isJsonSafe(value: unknown): boolean {
  try {
    return toJsonSafe(value).replaced.length === 0;
  } catch {
    return false;
  }
}
