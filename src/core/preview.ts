/**
 * Byte-bounded, human-readable previews of tool results, by the Durable
 * Workflow `payload_preview` rules: at most `limitBytes` bytes of UTF-8, never
 * cut inside a character, and `truncated` says exactly whether anything was cut.
 *
 * The preview of a string result is the string itself; the preview of any
 * other value is its compact JSON (the text `JSON.stringify(value)` produces).
 * The work is proportional to the limit, not to the payload: the serializer
 * walks the value and stops as soon as the budget is spent, and long strings
 * are sliced before they are escaped, so a 4 KiB preview of a 100 MB result
 * touches about 4 KiB of it.
 *
 * Lone surrogates: JSON text never contains them (`JSON.stringify` writes a
 * lone surrogate as a `\udxxx` escape, and so does the preview of a non-string
 * value). In the preview of a *string* result, and in {@link truncateUtf8}, each
 * lone surrogate becomes U+FFFD (3 bytes of UTF-8), the same replacement
 * `TextEncoder` makes, so the preview is always well-formed UTF-16.
 */
import { ToolEnvelopeError, pointer } from './errors.js';
import type { JsonValue } from './json.js';

/**
 * A byte-bounded piece of text and whether anything was cut from it.
 *
 * @example
 * ```ts
 * const p: BoundedText = { text: '{"rows":[1,2', truncated: true };
 * ```
 */
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

/**
 * Cuts `text` to at most `limitBytes` bytes of UTF-8 without splitting a
 * character (a surrogate pair is one 4-byte character; a lone surrogate is
 * replaced by U+FFFD, 3 bytes). Reads only the part of `text` it keeps.
 *
 * @example
 * ```ts
 * truncateUtf8('héllo', 2); // { text: 'h', truncated: true } ('é' takes 2 bytes and would not fit)
 * truncateUtf8('hi', 10);   // { text: 'hi', truncated: false }
 * ```
 */
export function truncateUtf8(text: string, limitBytes: number): BoundedText {
  checkLimit(limitBytes);
  const n = text.length;
  let bytes = 0;
  let i = 0;
  // Start of the run of code units copied verbatim; lone surrogates break runs.
  let runStart = 0;
  let out = '';
  while (i < n) {
    const c = text.charCodeAt(i);
    let size: number;
    let units = 1;
    let lone = false;
    if (c < 0x80) size = 1;
    else if (c < 0x800) size = 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < n ? text.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) {
        size = 4;
        units = 2;
      } else {
        size = 3;
        lone = true;
      }
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      size = 3;
      lone = true;
    } else size = 3;
    if (bytes + size > limitBytes) {
      return { text: out + text.slice(runStart, i), truncated: true };
    }
    bytes += size;
    if (lone) {
      out += text.slice(runStart, i) + REPLACEMENT;
      runStart = i + 1;
    }
    i += units;
  }
  return { text: runStart === 0 ? text : out + text.slice(runStart), truncated: false };
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

/**
 * The preview of a tool result: the string itself for a string result, else
 * its compact JSON, cut to at most `limitBytes` bytes of UTF-8 without
 * splitting a character. Equal to the longest well-formed prefix of the full
 * text within the limit; `truncated` is true iff the full text is longer.
 * Costs time proportional to `limitBytes`, not to the size of `value`.
 *
 * @throws ToolEnvelopeError `invalid-option` for a negative or non-integer
 *   limit; `not-json-safe` for a BigInt or a circular reference met within the budget.
 * @example
 * ```ts
 * createPreview({ rows: [1, 2, 3] }, 10); // { text: '{"rows":[1', truncated: true }
 * createPreview('日本', 4);               // { text: '日', truncated: true }
 * ```
 */
export function createPreview(value: JsonValue, limitBytes: number): BoundedText {
  checkLimit(limitBytes);
  if (typeof value === 'string') return truncateUtf8(value, limitBytes);
  const w = new BudgetWriter(limitBytes);
  const stack: Frame[] = [];
  const open = new Set<object>();
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
      const key = String(f.i++);
      if (key !== '0') w.write(',');
      writeValue(w, prepare(f.value[Number(key)], key), key, stack, open);
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
    writeValue(w, child, key, stack, open);
  }
  return w.result();
}
