/**
 * Checks on the raw text of a CLI input that JSON.parse does not make: bytes that are not UTF-8
 * (TextDecoder would turn them into U+FFFD) and numbers outside the double range (JSON.parse
 * turns `1e400` into Infinity, which prints as `null`, and `1e-400` into 0). Each is an error
 * naming the byte offset, never a silent change.
 */

/**
 * The index of the first byte of `bytes` that does not start a well-formed UTF-8 sequence
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or -1 when all are.
 */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  const n = bytes.length;
  for (let i = 0; i < n; ) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let len: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) len = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      len = 3;
      if (b === 0xe0) lo = 0xa0;
      else if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      len = 4;
      if (b === 0xf0) lo = 0x90;
      else if (b === 0xf4) hi = 0x8f;
    } else return i;
    if (i + len > n) return i;
    const second = bytes[i + 1]!;
    if (second < lo || second > hi) return i;
    for (let k = 2; k < len; k++) {
      const c = bytes[i + k]!;
      if (c < 0x80 || c > 0xbf) return i;
    }
    i += len;
  }
  return -1;
}

// A number can only overflow or underflow with a 3-digit exponent or a run of 309+ digits.
const MAYBE_OUT_OF_RANGE = /[eE][+-]?\d{3}|\d{309}/;
const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * The first number token in JSON `text` (outside strings) whose value is not a finite double, or
 * that is not zero but reads as zero; `undefined` when there is none. Cheap for ordinary text: a
 * regular expression rules most documents out before any scan.
 */
export function outOfRangeNumber(text: string): { index: number; token: string } | undefined {
  if (!MAYBE_OUT_OF_RANGE.test(text)) return undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string, honouring escapes.
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
      continue;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (!m) continue;
      const token = m[0];
      const value = Number(token);
      if (!Number.isFinite(value) || (value === 0 && /[1-9]/.test(token.replace(/[eE].*$/, '')))) return { index: i, token };
      i += token.length - 1;
    }
  }
  return undefined;
}
