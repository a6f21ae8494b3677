/**
 * Untrusted JSON text in: `parseJson` turns text into a JSON value with typed errors
 * (position, line and column for malformed text; size and depth limits). A
 * `__proto__` or `constructor` key stays a plain own data property, and a
 * 100 000-deep text is reported as `too-deep`, never as a stack overflow.
 */
import { type Issue, ToolEnvelopeError } from './errors.js';
import type { JsonValue } from './json.js';

/** The nesting depth `parseJson` and `toJsonSafe` accept by default. */
export const DEFAULT_MAX_DEPTH = 1000;

export interface ParseJsonOptions {
  /** Largest accepted text, in bytes of UTF-8. Default: no limit. */
  maxBytes?: number;
  /** Deepest accepted nesting of arrays and objects (`[[1]]` is 2 deep). Default {@link DEFAULT_MAX_DEPTH}. */
  maxDepth?: number;
}

/**
 * `value`, or `fallback` when it is undefined; an `invalid-option` error unless it is a
 * non-negative integer or Infinity.
 */
export function checkCount(name: string, value: number | undefined, fallback: number): number {
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

/**
 * Whether JSON text nests arrays and objects deeper than `maxDepth` (`[[1]]` is 2 deep), found
 * without parsing it: how a reader refuses a message before it builds (or a recursive walk
 * meets) a value that deep. Brackets inside strings do not count; malformed text is not
 * reported here (the parse that follows does that).
 */
export function jsonNestsDeeper(text: string, maxDepth: number): boolean {
  // Text no longer than the limit cannot nest deeper than it.
  return text.length > maxDepth && nestingExceeds(text, maxDepth) !== undefined;
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

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * Texts longer than this (in UTF-16 units) are held to the grammar before JSON.parse sees them.
 * JSON.parse builds the value as it reads, so on a long text that is not JSON what it built before
 * the error is waste: 60 MB of an array of zeros never closed took 700 MB of memory and 20 s.
 * The check takes the place of the scan for too-deep nesting, at about its cost. Its stack of open
 * brackets is bounded by the depth limit; a limit over 100 000 keeps the scan, then JSON.parse.
 */
const CHECK_GRAMMAR_FIRST = 1 << 20;

/**
 * Finds where and why `text` is not JSON (RFC 8259), without recursion: after `JSON.parse`
 * failed, to give a position V8's messages do not always carry, or before it, on a long text.
 * With `maxDepth`, stops where the text first nests deeper (`deeper: true`), if it is JSON so far.
 */
function locateSyntaxError(text: string, maxDepth = Number.POSITIVE_INFINITY): { position: number; reason: string; deeper?: true } | undefined {
  const n = text.length;
  const stack: number[] = []; // 0x5b '[' or 0x7b '{'
  type State = 'value' | 'value-or-close' | 'key' | 'key-or-close' | 'colon' | 'after';
  let state: State = 'value';
  let i = 0;
  const fail = (position: number, reason: string) => ({ position, reason });
  const show = (p: number) => (p >= n ? 'end of input' : `character ${JSON.stringify(text[p])}`);
  for (;;) {
    while (i < n && isSpace(text.charCodeAt(i))) i++;
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
      if (stack.push(c) > maxDepth) return { position: i, reason: 'nested too deep', deeper: true };
      i++;
      state = c === 0x7b ? 'key-or-close' : 'value-or-close';
      continue;
    }
    let end: number | { position: number; reason: string };
    if (c === 0x22) end = scanString(text, i);
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) end = scanNumber(text, i);
    else {
      const word = c === 0x74 ? 'true' : c === 0x66 ? 'false' : c === 0x6e ? 'null' : undefined;
      end = word !== undefined && text.startsWith(word, i) ? i + word.length : fail(i, `unexpected ${show(i)}`);
    }
    if (typeof end !== 'number') return end;
    i = end;
    state = 'after';
  }
}

/** What ends a run of plain characters in a string: a quote, a backslash or a control character. */
const STRING_STOP = /["\\\u0000-\u001f]/g;

/** Where the string at `start` ends; runs of plain characters are skipped natively, as long strings are common. */
function scanString(text: string, start: number): number | { position: number; reason: string } {
  let i = start + 1;
  for (;;) {
    STRING_STOP.lastIndex = i;
    if (!STRING_STOP.test(text)) return { position: text.length, reason: 'unterminated string' };
    i = STRING_STOP.lastIndex - 1;
    const c = text.charCodeAt(i);
    if (c === 0x22) return i + 1;
    if (c < 0x20) return { position: i, reason: 'unescaped control character in a string' };
    const e = text[i + 1];
    if (e === 'u') {
      if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return { position: i, reason: 'bad \\u escape in a string' };
      i += 6;
    } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
    else return { position: i, reason: 'bad escape in a string' };
  }
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** Where the number at `start` ends; by hand, as the grammar check runs over every number of a long text. */
function scanNumber(text: string, start: number): number | { position: number; reason: string } {
  let i = start;
  if (text.charCodeAt(i) === 0x2d) i++;
  const first = text.charCodeAt(i);
  if (first === 0x30) i++;
  else if (first >= 0x31 && first <= 0x39) while (isDigit(text.charCodeAt(++i)));
  else return { position: start, reason: 'malformed number' };
  if (text.charCodeAt(i) === 0x2e && isDigit(text.charCodeAt(i + 1))) while (isDigit(text.charCodeAt(++i)));
  if ((text.charCodeAt(i) | 0x20) === 0x65) {
    let j = i + 1;
    const sign = text.charCodeAt(j);
    if (sign === 0x2b || sign === 0x2d) j++;
    if (isDigit(text.charCodeAt(j))) {
      while (isDigit(text.charCodeAt(++j)));
      i = j;
    }
  }
  // A number must not run on into a digit, '.', or exponent it could not consume (e.g. "01", "1.", "1e").
  const next = text.charCodeAt(i);
  if (isDigit(next) || next === 0x2e || (next | 0x20) === 0x65) return { position: i, reason: 'malformed number' };
  return i;
}

/**
 * Parses untrusted JSON text with typed errors: malformed text gives
 * `invalid-json` (with position, line and column), text over `maxBytes`
 * gives `too-large`, nesting deeper than `maxDepth` gives `too-deep`.
 * `__proto__`/`constructor` keys become plain own data properties.
 */
export function parseJson(text: string, options?: ParseJsonOptions): JsonValue {
  const maxBytes = checkCount('maxBytes', options?.maxBytes, Number.POSITIVE_INFINITY);
  const maxDepth = checkCount('maxDepth', options?.maxDepth, DEFAULT_MAX_DEPTH);
  if (text.length > maxBytes || (text.length * 3 > maxBytes && utf8Length(text, maxBytes) > maxBytes)) {
    throw new ToolEnvelopeError('too-large', `JSON text is larger than ${maxBytes} bytes`, {
      issues: [{ code: 'too-large', path: '', message: `larger than ${maxBytes} bytes`, params: { maxBytes } }],
    });
  }
  if (text.length > CHECK_GRAMMAR_FIRST && maxDepth <= DEFAULT_MAX_DEPTH * 100) {
    // One pass finds where the text first nests too deep or stops being JSON. Until it stops, it
    // nests as the bracket count says, so too-deep is found where the count finds it; after, the
    // count goes on, as too-deep is reported before invalid-json.
    const found = locateSyntaxError(text, maxDepth);
    if (found?.deeper === true) throw tooDeepText(text, found.position, maxDepth);
    if (found !== undefined) {
      const at = nestingExceeds(text, maxDepth);
      throw at === undefined ? invalidJson(text, found) : tooDeepText(text, at, maxDepth);
    }
  } else if (text.length > maxDepth) {
    // Text shorter than the limit cannot nest deeper than it; skip the scan.
    const at = nestingExceeds(text, maxDepth);
    if (at !== undefined) throw tooDeepText(text, at, maxDepth);
  }
  try {
    // JSON.parse defines every key as an own data property (CreateDataProperty),
    // so "__proto__" never reaches a prototype setter.
    return JSON.parse(text) as JsonValue;
  } catch (e) {
    if (e instanceof RangeError) throw tooDeepText(text, 0, maxDepth, e);
    throw invalidJson(text, locateSyntaxError(text) ?? { position: 0, reason: e instanceof Error ? e.message : String(e) }, e);
  }
}

function invalidJson(text: string, found: { position: number; reason: string }, cause?: unknown): ToolEnvelopeError {
  const { line, column } = lineColumn(text, found.position);
  const message = `invalid JSON at line ${line}, column ${column} (position ${found.position}): ${found.reason}`;
  const issue: Issue = {
    code: 'invalid-json',
    path: '',
    message,
    params: { position: found.position, line, column, reason: found.reason },
  };
  return new ToolEnvelopeError('invalid-json', message, { issues: [issue], ...(cause === undefined ? {} : { cause }) });
}

function tooDeepText(text: string, position: number, maxDepth: number, cause?: unknown): ToolEnvelopeError {
  const { line, column } = lineColumn(text, position);
  const message = `JSON nests deeper than ${maxDepth} at line ${line}, column ${column}`;
  return new ToolEnvelopeError('too-deep', message, {
    issues: [{ code: 'too-deep', path: '', message, params: { maxDepth, position, line, column } }],
    ...(cause === undefined ? {} : { cause }),
  });
}
