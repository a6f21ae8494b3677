/**
 * Secrets in query strings: the value of a `name=value` parameter whose name names a secret
 * (secret-names.ts), in a URL with or without a scheme (`/srv/app.conf?password=...`,
 * `https://h/p?Token=...&a=1`), a fragment (`#access_token=...`), a form body or any `&`-list
 * (`a=1&secret=...`), a `;` parameter (`/app;jsessionid=...`, `Server=db;Password=...`). Only the
 * value is replaced; the name and the rest of the string stay.
 *
 * A parameter here: a name of 1 to {@link MAX_NAME} characters `[A-Za-z0-9_.[\]-]`, at the start of
 * the string or after `?`, `&`, `#` or `;`, then `=`, then a value: the characters up to the next
 * `&`, `#`, whitespace, quote (`"`, `'`, backquote), `<` or `>` (a value may hold `?`, `;` and `=`;
 * at least one character). A parameter that starts inside the value of an earlier replaced one is
 * part of that value; one that starts inside the value of a kept one is still looked at, so that
 * `?next=https://h/cb?token=...` loses the token.
 *
 * Found in linear time: the scan goes from `=` to `=`, reading the name backwards (at most
 * {@link MAX_NAME} + 1 characters, and never past the previous `=`, which is no name character),
 * and reads a value only when it replaces it, then goes on after it. Reading each value before
 * asking its name would be quadratic on `?a=?a=?a=...`.
 */
import { REDACTED } from './secret-formats.js';
import { isSecretParameter } from './secret-names.js';

/** The longest parameter name looked at: real ones are short, and a base64 run before its `=` padding is not one. */
export const MAX_NAME = 64;

/** `[A-Za-z0-9_.[\]-]`. */
function isNameChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2e || c === 0x2d || c === 0x5b || c === 0x5d;
}

/** `?`, `&`, `#` or `;`: what a parameter's name follows. */
function isBoundary(c: number): boolean {
  return c === 0x3f || c === 0x26 || c === 0x23 || c === 0x3b;
}

/** A parameter's value, read from just after its `=`: one greedy class, so one pass over the value. */
const VALUE = /[^&#\s"'<>`]+/y;

/**
 * `text` with the value of every secret parameter replaced by `[REDACTED]` (undefined when there is
 * none), in linear time (see the module comment).
 */
export function redactQuerySecrets(text: string): string | undefined {
  let out = '';
  let copied = 0;
  for (let e = text.indexOf('='); e !== -1; e = text.indexOf('=', e + 1)) {
    const floor = Math.max(0, e - MAX_NAME - 1);
    let s = e;
    while (s > floor && isNameChar(text.charCodeAt(s - 1))) s--;
    if (s === e || e - s > MAX_NAME) continue;
    if (s > 0 && !isBoundary(text.charCodeAt(s - 1))) continue;
    if (!isSecretParameter(text.slice(s, e))) continue;
    VALUE.lastIndex = e + 1;
    const m = VALUE.exec(text);
    if (m === null) continue;
    out += `${text.slice(copied, e + 1)}${REDACTED}`;
    copied = e + 1 + m[0].length;
    // On after the value: an `=` inside it belongs to it.
    e = copied - 1;
  }
  return copied === 0 ? undefined : out + text.slice(copied);
}
