/**
 * Where the scheme of a URL starts, found without a regular expression: `\b[a-z][a-z0-9+.-]*://`
 * (either case) tries every letter after a `-`, `.` or `+` as a start and reads the rest of the
 * run from each, which is quadratic on text such as `a-a-a-...` (64 000 characters: 2.6 s).
 * Redaction of credentials in URLs (`sanitizeMessage`, the audit log's redactor) looks at each
 * `://` once instead ({@link replaceUrlParts}).
 */

function isLetter(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
}

/** `[a-z0-9+.-]`, either case. */
function isSchemeChar(c: number): boolean {
  return isLetter(c) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2e || c === 0x2d;
}

/** `\w` without the `u` flag: `[A-Za-z0-9_]`. */
function isWordChar(c: number): boolean {
  return isLetter(c) || (c >= 0x30 && c <= 0x39) || c === 0x5f;
}

/**
 * The start of the scheme that ends at `colon` (the index of the `:` of a `://`) as
 * `/\b[a-z][a-z0-9+.-]*:\/\//gi` matches it: the first letter of the run of scheme characters
 * before `colon` that follows a word boundary; -1 when there is none. Linear in the run.
 */
export function urlSchemeStart(text: string, colon: number): number {
  let r = colon;
  while (r > 0 && isSchemeChar(text.charCodeAt(r - 1))) r--;
  for (let s = r; s < colon; s++) {
    if (isLetter(text.charCodeAt(s)) && (s === 0 || !isWordChar(text.charCodeAt(s - 1)))) return s;
  }
  return -1;
}

/**
 * `text` with every `scheme://` followed by a match of `tail` (a sticky expression, read from just
 * after the `://`) replaced by `replace(scheme, match)`, where `scheme` includes the `://`: what a
 * global replace of `\b[a-z][a-z0-9+.-]*:\/\/` followed by the tail gives, in time linear in the
 * text as long as the tail's own matching is (it starts once per `://`). Undefined when nothing
 * was replaced.
 */
export function replaceUrlParts(text: string, tail: RegExp, replace: (scheme: string, match: RegExpExecArray) => string): string | undefined {
  let out = '';
  let copied = 0;
  for (let p = text.indexOf('://'); p !== -1; p = text.indexOf('://', p + 1)) {
    // Never inside the previous match: the tails used end with `@`, which no scheme holds.
    const start = urlSchemeStart(text, p);
    if (start === -1) continue;
    tail.lastIndex = p + 3;
    const m = tail.exec(text);
    if (m === null) continue;
    out += `${text.slice(copied, start)}${replace(text.slice(start, p + 3), m)}`;
    copied = p + 3 + m[0].length;
    p = copied - 1;
  }
  return copied === 0 ? undefined : out + text.slice(copied);
}
