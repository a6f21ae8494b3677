/**
 * Secret formats whose regular expressions take quadratic time on text anyone can send, found in
 * linear time instead: JSON Web Tokens and the password of a URL. Each keeps its regular expression
 * as the reference the tests hold it to (`JWT_REFERENCE`, `URL_PASSWORD_REFERENCE`). Both
 * expressions backtrack through a run of characters from every place in it where a match could
 * start: 100 000 characters of `eyJ-eyJ-...` took 8.5 s of the thread that serves calls. The
 * scanners look at each run once.
 */

import { replaceUrlParts } from 'tool-envelope/core';

/** The text that replaces a secret. */
export const REDACTED = '[REDACTED]';

/**
 * JSON Web Tokens, as a regular expression: the reference of {@link redactJwts}, which finds the same
 * matches in linear time. This one backtracks through the rest of a run of token characters from
 * every `eyJ` in it: 8.5 s for 100 000 characters of `eyJ-eyJ-...`, in a string any caller or
 * upstream can send.
 */
export const JWT_REFERENCE = /\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;

/** A character of a JWT segment: `[A-Za-z0-9_-]`. */
function isSegmentChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2d;
}

/** The end of the run of segment characters from `i`. */
function segmentEnd(text: string, i: number): number {
  let j = i;
  while (j < text.length && isSegmentChar(text.charCodeAt(j))) j++;
  return j;
}

/**
 * `text` with every JWT replaced, as `text.replace(JWT_REFERENCE, REDACTED)` gives it (undefined
 * when there is none), in linear time: a segment is a whole run of segment characters (the dot
 * after it is not one), so once an `eyJ` fails, every later `eyJ` of the same run fails the same
 * way and is skipped.
 */
export function redactJwts(text: string): string | undefined {
  let out = '';
  let copied = 0;
  let failedBefore = -1;
  for (let i = text.indexOf('eyJ'); i !== -1; i = text.indexOf('eyJ', i + 1)) {
    // \b before `e`: the start of the text or a character that is not [A-Za-z0-9_].
    if (i > 0) {
      const p = text.charCodeAt(i - 1);
      if (p !== 0x2d && isSegmentChar(p)) continue;
    }
    if (i < failedBefore) continue;
    const end1 = segmentEnd(text, i + 3);
    let end2 = -1;
    if (end1 - i - 3 >= 4 && text.charCodeAt(end1) === 0x2e && text.startsWith('eyJ', end1 + 1)) {
      const e = segmentEnd(text, end1 + 4);
      if (e - end1 - 4 >= 4 && text.charCodeAt(e) === 0x2e) end2 = e;
    }
    if (end2 === -1) {
      failedBefore = end1;
      continue;
    }
    const end3 = segmentEnd(text, end2 + 1);
    out += `${text.slice(copied, i)}${REDACTED}`;
    copied = end3;
    i = end3 - 1;
  }
  return copied === 0 ? undefined : out + text.slice(copied);
}

/**
 * Passwords in URLs (`scheme://user:password@`), as a regular expression: the reference of
 * {@link redactUrlPasswords}. It tries every letter after a `-`, `.` or `+` as the start of a scheme
 * and reads the rest of the run before it fails.
 */
export const URL_PASSWORD_REFERENCE = /\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@"]+:([^\s/@"]+)@/gi;

/** What follows `://` in {@link URL_PASSWORD_REFERENCE}: user, `:`, password, `@`. */
const USER_PASSWORD = /[^\s/:@"]+:([^\s/@"]+)@/y;

/**
 * `text` with the password of every URL replaced, as {@link URL_PASSWORD_REFERENCE} finds them
 * (undefined when there is none), in linear time: each `://` is looked at once. The scheme before it
 * starts at the first letter of its run that follows a word boundary; what follows it does not
 * depend on where the scheme starts, so one look decides for every start.
 */
export function redactUrlPasswords(text: string): string | undefined {
  return replaceUrlParts(text, USER_PASSWORD, (scheme, m) => `${scheme}${m[0].replace(`:${m[1]}@`, `:${REDACTED}@`)}`);
}
