/**
 * Secrets in query strings: the value of a `name=value` parameter whose name names a secret
 * (secret-names.ts), after `?`, `&`, `#` or `;` (URLs, fragments, form bodies, connection strings).
 * Only the value is replaced. A parameter inside a kept value is still looked at
 * (`?next=https://h/cb?token=...`). Linear time: the scan goes `=` to `=`, reading names backwards;
 * reading each value before its name would be quadratic on `?a=?a=?a=...`.
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
