/**
 * The helpers a policy's `when` expressions may call (`policy-cel.ts` registers them): plain
 * functions over strings, safe on hostile input. `within` answers false rather than guess: a path
 * that hides anything (NUL, percent-encoding that still decodes after one pass, malformed encoding,
 * a relative path) is not within any prefix, so a rule that allows inside a prefix never allows it
 * and a rule that denies outside one denies it.
 */

/** Longest glob pattern accepted: matching costs O(text × pattern). */
export const GLOB_MAX_PATTERN = 1024;

const PERCENT = /%[0-9a-fA-F]{2}/;

/** The segments of an absolute POSIX path, `.` and `..` resolved; `undefined` for what is not one. */
function segments(path: string): string[] | undefined {
  if (path.includes('\0')) return undefined;
  // A backslash is a separator to a Windows upstream: read it as one, so that `\..\` resolves too.
  const p = path.replaceAll('\\', '/');
  if (!p.startsWith('/')) return undefined;
  const out: string[] = [];
  for (const s of p.split('/')) {
    if (s === '' || s === '.') continue;
    if (s === '..') out.pop();
    else out.push(s);
  }
  return out;
}

/** `path` with its percent-encoding decoded once; `undefined` when it is malformed or still decodes (double encoding). */
function decodedOnce(path: string): string | undefined {
  if (!path.includes('%')) return path;
  let d: string;
  try {
    d = decodeURIComponent(path);
  } catch {
    return undefined;
  }
  return PERCENT.test(d) ? undefined : d;
}

// A policy's prefixes are the literals of its conditions: their segments are kept, not split per call.
let lastPrefix: string | undefined;
let lastBase: readonly string[] | undefined;
function prefixSegments(prefix: string): readonly string[] | undefined {
  if (prefix !== lastPrefix) {
    lastBase = segments(prefix);
    lastPrefix = prefix;
  }
  return lastBase;
}

/**
 * True when `path`, normalised, is `prefix` or lies under it. Percent-encoding is decoded once
 * (a `%XX` left after that is refused: double encoding); `.`, `..` and repeated separators are
 * resolved POSIX-style, a backslash read as a separator; NUL, malformed encoding and relative
 * paths are never within.
 */
export function within(path: string, prefix: string): boolean {
  const decoded = decodedOnce(path);
  if (decoded === undefined) return false;
  const p = segments(decoded);
  const base = prefixSegments(prefix);
  if (p === undefined || base === undefined || p.length < base.length) return false;
  for (let i = 0; i < base.length; i++) if (p[i] !== base[i]) return false;
  return true;
}

/** The host of a URL, lower-cased, without a trailing dot; `''` when the text is not a URL with a host. */
export function host(url: string): string {
  // A condition often asks twice for the host of one URL (`host(u) == 'a' || host(u).endsWith('.a')`): parsed once.
  if (url === lastUrl) return lastHost;
  let h: string;
  try {
    h = new URL(url).hostname;
    h = (h.endsWith('.') ? h.slice(0, -1) : h).toLowerCase();
  } catch {
    h = '';
  }
  lastUrl = url;
  lastHost = h;
  return h;
}
let lastUrl: string | undefined;
let lastHost = '';

type Token = { kind: 'char'; c: string } | { kind: '?' } | { kind: '*' } | { kind: '**' };

function tokens(pattern: string): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        while (pattern[i + 1] === '*') i++;
        out.push({ kind: '**' });
      } else out.push({ kind: '*' });
    } else if (c === '?') out.push({ kind: '?' });
    else out.push({ kind: 'char', c });
  }
  return out;
}

/**
 * True when `text` matches `pattern`: `*` any run of characters but `/`, `**` any run at all, `?`
 * one character but `/`; nothing else is special. Runs in O(text × pattern) whatever the input
 * (a set of pattern positions advanced per character, no backtracking); a pattern longer than
 * {@link GLOB_MAX_PATTERN} throws.
 */
export function glob(text: string, pattern: string): boolean {
  if (pattern.length > GLOB_MAX_PATTERN) throw new RangeError(`glob pattern longer than ${GLOB_MAX_PATTERN} characters`);
  const t = tokens(pattern);
  const k = t.length;
  let cur = new Uint8Array(k + 1);
  let next = new Uint8Array(k + 1);
  // A star may match nothing: reaching its position reaches the one after it too.
  const close = (set: Uint8Array): void => {
    for (let i = 0; i < k; i++) if (set[i] === 1 && (t[i] as Token).kind !== 'char' && (t[i] as Token).kind !== '?') set[i + 1] = 1;
  };
  cur[0] = 1;
  close(cur);
  for (const c of text) {
    next.fill(0);
    let any = false;
    for (let i = 0; i < k; i++) {
      if (cur[i] !== 1) continue;
      const tok = t[i] as Token;
      if (tok.kind === 'char') {
        if (tok.c === c) next[i + 1] = 1;
      } else if (tok.kind === '?') {
        if (c !== '/') next[i + 1] = 1;
      } else if (tok.kind === '**' || c !== '/') next[i] = 1;
      any = true;
    }
    if (!any) return false;
    close(next);
    [cur, next] = [next, cur];
  }
  return cur[k] === 1;
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/**
 * A decimal number written as text (surrounding spaces allowed), or a number as itself; throws for
 * anything else (a policy expression that calls it on such a value errs, and so denies).
 */
export function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string') {
    const s = value.trim();
    if (s.length <= 400 && NUMBER.test(s)) {
      const n = Number(s);
      if (Number.isFinite(n)) return n;
    }
  }
  throw new TypeError(`toNumber: ${typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : typeof value} is not a number`);
}
