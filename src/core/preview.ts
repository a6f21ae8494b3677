/**
 * Byte-bounded previews of tool results by the Durable Workflow `payload_preview` rules: at most
 * `limitBytes` of UTF-8, never cut inside a character, `truncated` exact. A string's preview is the
 * string, any other value's its compact JSON. The work is proportional to the limit, not the payload:
 * sizes are probed without serialising, and large values go through an incremental serializer that
 * stops when the budget is spent. Lone surrogates in a string become U+FFFD, as `TextEncoder` does.
 */
import { ToolEnvelopeError, pointer } from './errors.js';
import { type JsonValue, isPlainJsonContainer } from './json.js';
import { utf8ByteLength } from './utf8.js';

/** A byte-bounded piece of text and whether anything was cut from it. */
export interface BoundedText {
  /** At most the limit's worth of UTF-8 bytes, never cut inside a character. */
  text: string;
  /** True iff the full text is longer than the limit. */
  truncated: boolean;
}

function checkLimit(limitBytes: number): void {
  if (!Number.isSafeInteger(limitBytes) || limitBytes < 0) {
    throw new ToolEnvelopeError('invalid-option', `limitBytes must be a non-negative integer, got ${String(limitBytes)}`, {
      issues: [{ code: 'invalid-option', path: '', message: 'limitBytes must be a non-negative safe integer', params: { limitBytes } }],
    });
  }
}

const REPLACEMENT = '\uFFFD';
const ENCODER = new TextEncoder();
const ASCII = /^[\x00-\x7f]*$/;
const LONE_SURROGATE_SOURCE = '[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]';
const LONE_SURROGATE = new RegExp(LONE_SURROGATE_SOURCE);
const LONE_SURROGATE_ALL = new RegExp(LONE_SURROGATE_SOURCE, 'g');
const nativeIsWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;
/** `String.prototype.isWellFormed` (ES2024, native and fast) where the engine has it, else a regular expression. */
const isWellFormed = (s: string): boolean => (nativeIsWellFormed ? nativeIsWellFormed.call(s) : !LONE_SURROGATE.test(s));

/**
 * Cuts `text` to at most `limitBytes` bytes of UTF-8 without splitting a
 * character (a surrogate pair is one 4-byte character; a lone surrogate is
 * replaced by U+FFFD, 3 bytes). Reads only the part of `text` it keeps.
 * `options.wellFormed: true` skips the search for lone surrogates in text
 * known to have none, such as the output of `JSON.stringify`.
 */
export function truncateUtf8(text: string, limitBytes: number, options?: { wellFormed?: boolean }): BoundedText {
  checkLimit(limitBytes);
  return cutUtf8(text, limitBytes, options?.wellFormed !== true);
}

let scratch = new Uint8Array(4096);

/** A scratch buffer of exactly `size` bytes for `encodeInto` (the bytes themselves are never used). */
function scratchOf(size: number): Uint8Array {
  if (scratch.length < size) scratch = new Uint8Array(Math.max(size, scratch.length * 2));
  return scratch.length === size ? scratch : scratch.subarray(0, size);
}

/**
 * The longest prefix of `text` within `limitBytes` bytes of UTF-8. The encoder
 * does the cut natively and never splits a character; only the first
 * `limitBytes` code units are looked at (each takes at least one byte).
 * `mayHaveLoneSurrogates` is false for JSON text, which never has any.
 */
function cutUtf8(text: string, limitBytes: number, mayHaveLoneSurrogates: boolean): BoundedText {
  let cut: string;
  let truncated: boolean;
  if (text.length * 3 <= limitBytes || (text.length <= limitBytes && (ASCII.test(text) || utf8ByteLength(text) <= limitBytes))) {
    // It all fits: even at 3 bytes per code unit, or one byte each, or counted (no bytes written).
    cut = text;
    truncated = false;
  } else {
    const head = text.length > limitBytes ? text.slice(0, limitBytes) : text;
    const { read } = ENCODER.encodeInto(head, scratchOf(limitBytes));
    cut = read === text.length ? text : text.slice(0, read);
    truncated = read < text.length;
  }
  // TextEncoder wrote each lone surrogate as U+FFFD; so does the text.
  if (mayHaveLoneSurrogates && !isWellFormed(cut)) cut = cut.replace(LONE_SURROGATE_ALL, REPLACEMENT);
  return { text: cut, truncated };
}

/** Collects output pieces until the byte budget is spent. */
class BudgetWriter {
  private readonly parts: string[] = [];
  private bytes = 0;
  /** Set once a character did not fit: the preview is final and truncated. */
  full = false;

  constructor(private readonly limit: number) {}

  /** Remaining budget in bytes. */
  get remaining(): number {
    return this.limit - this.bytes;
  }

  /** Appends `piece` (well-formed JSON text: no lone surrogates), or the part of it that fits. */
  write(piece: string): void {
    if (this.full) return;
    const n = piece.length;
    // Long pieces (natively serialised members): the encoder counts and cuts them natively.
    if (n > 16) {
      const room = this.limit - this.bytes;
      const { read, written } = ENCODER.encodeInto(piece, scratchOf(Math.min(room, n * 3)));
      this.bytes += written;
      if (read === n) this.parts.push(piece);
      else {
        this.parts.push(piece.slice(0, read));
        this.full = true;
      }
      return;
    }
    let bytes = this.bytes;
    // Fast path: even at 3 bytes per code unit the piece fits, so only count.
    if (bytes + n * 3 <= this.limit) {
      for (let i = 0; i < n; i++) {
        const c = piece.charCodeAt(i);
        // A surrogate pair is 4 bytes: 1 for the high half here, 3 for the low half.
        bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : (c & 0xfc00) === 0xd800 ? 1 : 3;
      }
      this.bytes = bytes;
      this.parts.push(piece);
      return;
    }
    for (let i = 0; i < n; ) {
      const c = piece.charCodeAt(i);
      let size = 3;
      let units = 1;
      if (c < 0x80) size = 1;
      else if (c < 0x800) size = 2;
      else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
        size = 4;
        units = 2;
      }
      if (bytes + size > this.limit) {
        this.parts.push(piece.slice(0, i));
        this.bytes = bytes;
        this.full = true;
        return;
      }
      bytes += size;
      i += units;
    }
    this.bytes = bytes;
    this.parts.push(piece);
  }

  result(): BoundedText {
    return { text: this.parts.join(''), truncated: this.full };
  }
}

/**
 * Writes the JSON string literal of `s`, escaping only the prefix that can
 * still fit: every source code unit costs at least one output byte, so
 * `remaining + 1` units are enough to overflow the budget.
 */
function writeJsonString(w: BudgetWriter, s: string): void {
  let k = w.remaining + 1;
  if (k >= s.length) {
    w.write(JSON.stringify(s));
    return;
  }
  const last = s.charCodeAt(k - 1);
  // Never split a surrogate pair: JSON.stringify would escape the half as a lone surrogate.
  if (last >= 0xd800 && last <= 0xdbff) {
    const next = s.charCodeAt(k);
    if (next >= 0xdc00 && next <= 0xdfff) k++;
  }
  const quoted = JSON.stringify(s.slice(0, k));
  // Drop the closing quote: the full literal goes on past the slice.
  w.write(quoted.slice(0, -1));
}

type Frame =
  | { array: true; value: readonly unknown[]; i: number; at: string }
  | { array: false; value: Record<string, unknown>; keys: string[]; i: number; wrote: boolean; at: string };

/** Applies `toJSON` and unwraps boxed primitives, as `JSON.stringify` does. */
function prepare(value: unknown, key: string): unknown {
  if (typeof value === 'object' && value !== null) {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = toJSON.call(value, key);
    if (value instanceof Number) return Number(value);
    if (value instanceof String) return String(value);
    if (value instanceof Boolean) return value.valueOf();
  }
  return value;
}

/** True for the values `JSON.stringify` leaves out of objects (and writes as null in arrays). */
function isSkipped(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

function pathOf(stack: readonly Frame[], key: string): string {
  return stack.length === 0 ? '' : pointer([...stack.slice(1).map((f) => f.at), key]);
}

function notJsonSafe(message: string, path: string): ToolEnvelopeError {
  return new ToolEnvelopeError('not-json-safe', `${message} at ${path || 'the root'}`, {
    issues: [{ code: 'not-json-safe', path, message }],
  });
}

/** Writes a primitive, or opens a container and pushes its frame. `key` names the value in its parent. */
function writeValue(w: BudgetWriter, value: unknown, key: string, stack: Frame[], open: Set<object>): void {
  switch (typeof value) {
    case 'string':
      writeJsonString(w, value);
      return;
    case 'number':
      w.write(Number.isFinite(value) ? String(value) : 'null');
      return;
    case 'boolean':
      w.write(value ? 'true' : 'false');
      return;
    case 'bigint':
      throw notJsonSafe('a BigInt cannot be previewed as JSON', pathOf(stack, key));
    case 'object':
      if (value === null) {
        w.write('null');
        return;
      }
      if (open.has(value)) throw notJsonSafe('circular reference', pathOf(stack, key));
      open.add(value);
      if (Array.isArray(value)) {
        w.write('[');
        stack.push({ array: true, value, i: 0, at: key });
      } else {
        w.write('{');
        const obj = value as Record<string, unknown>;
        stack.push({ array: false, value: obj, keys: Object.keys(obj), i: 0, wrote: false, at: key });
      }
      return;
    default:
      // undefined, a function or a symbol at the top level or in an array.
      w.write('null');
  }
}

/** How much larger than the limit a value may be and still be serialised natively. */
const NATIVE_FACTOR = 1;
/** Deeper values take the incremental path (the probe recurses). */
const PROBE_DEPTH = 64;

/** {@link probe}, treating a value whose reading throws (a getter, a proxy) as one for the careful path. */
function probeSafely(v: unknown, budget: number): number {
  try {
    return probe(v, budget, 0);
  } catch {
    return -1;
  }
}

/**
 * Containers a probe gave up on during the current preview (the path down to
 * where the budget ran out): a later probe with no larger budget would give up
 * on them again, so they are walked without probing.
 */
let gaveUp: Set<object> | undefined;

function tooBig(v: object): -1 {
  gaveUp?.add(v);
  return -1;
}

/**
 * Subtracts a lower bound of the JSON text length of `v` from `budget` and
 * returns what is left, or -1 as soon as the budget is spent or `v` holds
 * something only the careful path handles (`toJSON`, class instances, BigInt,
 * deep nesting). Visits at most about `budget` nodes: each costs at least one unit.
 */
function probe(v: unknown, budget: number, depth: number): number {
  switch (typeof v) {
    case 'string':
      return budget - v.length - 2;
    case 'number':
    case 'boolean':
      return budget - 1;
    case 'object': {
      if (v === null) return budget - 4;
      if (depth >= PROBE_DEPTH) return tooBig(v);
      if (Array.isArray(v)) {
        // Brackets and commas; each element then takes at least one more character.
        budget -= 1 + v.length;
        if (budget < v.length) return tooBig(v);
        for (let i = 0; i < v.length && budget >= 0; i++) budget = probe(v[i], budget, depth + 1);
        return budget < 0 ? tooBig(v) : budget;
      }
      if (!isPlainJsonContainer(v)) return tooBig(v);
      // Braces; per member its quoted key, a colon and a comma, then the value.
      // (for-in allocates nothing; an inherited enumerable key only raises the bound.)
      const obj = v as Record<string, unknown>;
      budget -= 1;
      for (const k in obj) {
        budget = probe(obj[k], budget - k.length - 4, depth + 1);
        if (budget < 0) return tooBig(v);
      }
      return budget;
    }
    case 'bigint':
      return -1;
    default:
      return budget;
  }
}

/**
 * Writes an object or array member with the native serializer when a probe
 * shows it is small next to the remaining budget (rows of a large result,
 * typically); returns false when it must be walked instead. Probing is charged
 * to `allowance`, so it never costs more than a multiple of the limit in total.
 */
function writeSmall(w: BudgetWriter, child: unknown, allowance: { left: number }): boolean {
  if (typeof child !== 'object' || child === null || allowance.left <= 0 || gaveUp?.has(child)) return false;
  const given = Math.min(w.remaining * NATIVE_FACTOR + 64, allowance.left);
  const left = probeSafely(child, given);
  allowance.left -= left >= 0 ? given - left : given;
  if (left < 0) return false;
  let text: string | undefined;
  try {
    text = JSON.stringify(child) as string | undefined;
  } catch {
    return false;
  }
  if (text === undefined) return false;
  w.write(text);
  return true;
}

/**
 * Writes a run of array elements from `start` with one native serialisation,
 * as many as a probe shows fit next to the remaining budget (the rows of a
 * large result, typically), and reports where the run ended through `moveTo`.
 * Returns false when not even the first element qualifies.
 */
function writeRun(w: BudgetWriter, array: readonly unknown[], start: number, allowance: { left: number }, moveTo: (next: number) => void): boolean {
  const given = Math.min(w.remaining * NATIVE_FACTOR + 64, allowance.left);
  let budget = given;
  let end = start;
  while (end < array.length) {
    const el = array[end];
    if (typeof el === 'object' && el !== null && gaveUp?.has(el)) break;
    const left = probeSafely(el, budget - 1);
    if (left < 0) break;
    budget = left;
    end++;
  }
  allowance.left -= given - budget;
  if (end === start) return false;
  let text: string | undefined;
  try {
    text = JSON.stringify(start === 0 && end === array.length ? array : array.slice(start, end));
  } catch {
    return false;
  }
  if (start > 0) w.write(',');
  // The elements without the brackets of the slice: JSON.stringify writes them exactly as in the whole array.
  w.write(text.slice(1, -1));
  moveTo(end);
  return true;
}

/**
 * The preview of a tool result: the string itself for a string result, else
 * its compact JSON, cut to at most `limitBytes` bytes of UTF-8 without
 * splitting a character. Equal to the longest well-formed prefix of the full
 * text within the limit; `truncated` is true iff the full text is longer.
 * Costs time proportional to `limitBytes`, not to the size of `value`.
 *
 * @throws ToolEnvelopeError `invalid-option` for a negative or non-integer
 *   limit; `not-json-safe` for a BigInt or a circular reference met within the budget.
 *
 * @example
 * ```ts
 * createPreview({ rows: [1, 2, 3] }, 10); // { text: '{"rows":[1', truncated: true }
 * createPreview('日本', 4); // { text: '日', truncated: true }
 * ```
 */
export function createPreview(value: JsonValue, limitBytes: number): BoundedText {
  checkLimit(limitBytes);
  if (typeof value === 'string') return cutUtf8(value, limitBytes, true);
  // A toJSON met on the way may preview something itself: keep the outer set.
  const outer = gaveUp;
  gaveUp = new Set();
  try {
    return previewOf(value, limitBytes);
  } finally {
    gaveUp = outer;
  }
}

function previewOf(value: JsonValue, limitBytes: number): BoundedText {
  // Small values: the native serializer is several times faster than walking in
  // JavaScript, and the probe guarantees its work is bounded by a multiple of the limit.
  if (probeSafely(value, limitBytes * NATIVE_FACTOR + 64) >= 0) {
    let text: string | undefined;
    try {
      text = JSON.stringify(value) as string | undefined;
    } catch {
      // A BigInt or a cycle: the incremental path below reports it as not-json-safe.
    }
    if (text !== undefined) return cutUtf8(text, limitBytes, false);
  }
  const w = new BudgetWriter(limitBytes);
  const stack: Frame[] = [];
  const open = new Set<object>();
  // Total probing work allowed on members, so that the whole preview stays proportional to the limit.
  const allowance = { left: limitBytes * 16 + 1024 };
  const root = prepare(value, '');
  writeValue(w, isSkipped(root) ? undefined : root, '', stack, open);
  while (stack.length > 0 && !w.full) {
    const f = stack[stack.length - 1]!;
    if (f.array) {
      if (f.i >= f.value.length) {
        w.write(']');
        open.delete(f.value);
        stack.pop();
        continue;
      }
      if (writeRun(w, f.value, f.i, allowance, (next) => (f.i = next))) continue;
      const key = String(f.i++);
      if (key !== '0') w.write(',');
      const child = prepare(f.value[Number(key)], key);
      if (!writeSmall(w, child, allowance)) writeValue(w, child, key, stack, open);
      continue;
    }
    if (f.i >= f.keys.length) {
      w.write('}');
      open.delete(f.value);
      stack.pop();
      continue;
    }
    const key = f.keys[f.i++]!;
    const child = prepare(f.value[key], key);
    if (isSkipped(child)) continue;
    if (f.wrote) w.write(',');
    f.wrote = true;
    writeJsonString(w, key);
    w.write(':');
    if (!writeSmall(w, child, allowance)) writeValue(w, child, key, stack, open);
  }
  return w.result();
}
