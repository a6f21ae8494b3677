/**
 * Error classification: turns anything a tool throws into a canonical
 * {@link ToolError}. The typed failure a tool throws on purpose is in
 * `tool-failure.ts`.
 *
 * The mapping table (Node system error codes, DOMException names, Error
 * subclasses, non-Error throws) is documented in `docs/runtime.md`. The
 * `detail` never carries a stack trace, a file path or a secret-looking
 * value: messages are cut to their first line, paths become `<path>`,
 * credentials become `<redacted>`, and the text is capped in length.
 */
import type { JsonObject } from './json.js';
import type { ToolError } from './model.js';
import { ToolEnvelopeError } from './errors.js';
import { type ErrorCategory, defaultRetryable } from './taxonomy.js';
import { isToolErrorShape, isToolFailure } from './tool-failure.js';
import { replaceUrlParts } from './url-scheme.js';

// Kept here too: the runtime and the MCP layer import the typed failure from this module.
export { ToolFailure, isToolFailure, type ToolFailureInit } from './tool-failure.js';

/** Options for {@link classifyThrown}. */
export interface ClassifyOptions {
  /** Put the (unsanitised) stack of an Error into `details.stack`. Off by default. */
  includeStack?: boolean;
  /** Maximum length of `detail`, in characters (default 500). */
  maxDetailLength?: number;
}

interface Rule {
  category: ErrorCategory;
  code: string;
  /** Overrides the category default when set. */
  retryable?: boolean;
}

/**
 * Node system and library error codes (`err.code`) and what they mean for an agent.
 * Keep in step with the table in docs/runtime.md.
 */
const CODE_RULES: Readonly<Record<string, Rule>> = {
  ENOENT: { category: 'no-target', code: 'not-found' },
  ENOTDIR: { category: 'no-target', code: 'not-a-directory' },
  ENOTFOUND: { category: 'no-target', code: 'host-not-found' },
  EAI_AGAIN: { category: 'no-target', code: 'host-lookup-failed' },
  EACCES: { category: 'elevation', code: 'permission-denied' },
  EPERM: { category: 'elevation', code: 'operation-not-permitted' },
  EROFS: { category: 'elevation', code: 'read-only-file-system' },
  ETIMEDOUT: { category: 'timeout', code: 'connection-timeout' },
  ESOCKETTIMEDOUT: { category: 'timeout', code: 'socket-timeout' },
  UND_ERR_CONNECT_TIMEOUT: { category: 'timeout', code: 'connect-timeout' },
  UND_ERR_HEADERS_TIMEOUT: { category: 'timeout', code: 'headers-timeout' },
  UND_ERR_BODY_TIMEOUT: { category: 'timeout', code: 'body-timeout' },
  ABORT_ERR: { category: 'timeout', code: 'aborted' },
  ECONNREFUSED: { category: 'internal', code: 'connection-refused', retryable: true },
  ECONNRESET: { category: 'internal', code: 'connection-reset', retryable: true },
  EPIPE: { category: 'internal', code: 'broken-pipe', retryable: true },
  EHOSTUNREACH: { category: 'internal', code: 'host-unreachable', retryable: true },
  ENETUNREACH: { category: 'internal', code: 'network-unreachable', retryable: true },
  EADDRINUSE: { category: 'internal', code: 'address-in-use', retryable: true },
  EBUSY: { category: 'internal', code: 'resource-busy', retryable: true },
  EMFILE: { category: 'internal', code: 'too-many-open-files', retryable: true },
  EAGAIN: { category: 'internal', code: 'resource-unavailable', retryable: true },
  ENOSPC: { category: 'internal', code: 'no-space-left' },
  EEXIST: { category: 'invalid-argument', code: 'already-exists' },
  EISDIR: { category: 'invalid-argument', code: 'is-a-directory' },
  ENOTEMPTY: { category: 'invalid-argument', code: 'directory-not-empty' },
  ENAMETOOLONG: { category: 'invalid-argument', code: 'name-too-long' },
  ERR_INVALID_ARG_TYPE: { category: 'invalid-argument', code: 'invalid-arg-type' },
  ERR_INVALID_ARG_VALUE: { category: 'invalid-argument', code: 'invalid-arg-value' },
  ERR_OUT_OF_RANGE: { category: 'invalid-argument', code: 'out-of-range' },
  ERR_MISSING_ARGS: { category: 'invalid-argument', code: 'missing-args' },
  ERR_INVALID_URL: { category: 'invalid-argument', code: 'invalid-url' },
};

/** DOMException / Error `name`s with a meaning of their own. */
const NAME_RULES: Readonly<Record<string, Rule>> = {
  AbortError: { category: 'timeout', code: 'aborted' },
  TimeoutError: { category: 'timeout', code: 'operation-timeout' },
  NotFoundError: { category: 'no-target', code: 'not-found' },
  NotAllowedError: { category: 'elevation', code: 'not-allowed' },
  SecurityError: { category: 'elevation', code: 'security-error' },
  DataCloneError: { category: 'internal', code: 'data-clone-error' },
};

const DEFAULT_MAX_DETAIL = 500;

/**
 * Turns any thrown value into a canonical {@link ToolError}. A
 * {@link ToolFailure} (or a thrown object shaped like a ToolError) is returned
 * as given; Node system errors are mapped by `code`, DOMExceptions by `name`,
 * `SyntaxError` to `invalid-argument`, everything else to `internal`. The
 * `detail` is sanitised: first line only, paths and secrets removed, capped.
 *
 * @example
 * ```ts
 * const error = classifyThrown(Object.assign(new Error("ENOENT: no such file, open '/home/me/a.txt'"), { code: 'ENOENT' }));
 * error.category; // 'no-target'
 * error.detail; // "ENOENT: no such file, open '<path>'"
 * ```
 */
export function classifyThrown(value: unknown, options?: ClassifyOptions): ToolError {
  const max = options?.maxDetailLength ?? DEFAULT_MAX_DETAIL;
  if (isToolFailure(value)) return { ...value.toolError };
  if (isToolErrorShape(value) && !(value instanceof Error)) {
    const given = value as ToolError;
    return { ...given, retryable: given.retryable ?? defaultRetryable(given.category) };
  }
  if (value instanceof Error || isErrorLike(value)) return classifyError(value as Error, max, options?.includeStack === true);
  return classifyNonError(value, max);
}

function isErrorLike(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { message?: unknown }).message === 'string' &&
    typeof (value as { name?: unknown }).name === 'string'
  );
}

function ruleFor(err: Error): Rule | undefined {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && Object.hasOwn(CODE_RULES, code)) return CODE_RULES[code];
  if (Object.hasOwn(NAME_RULES, err.name)) return NAME_RULES[err.name];
  if (err instanceof SyntaxError || err.name === 'SyntaxError') {
    return { category: 'invalid-argument', code: /JSON/.test(err.message) ? 'invalid-json' : 'invalid-syntax' };
  }
  return undefined;
}

function classifyError(err: Error, max: number, includeStack: boolean): ToolError {
  if (err instanceof ToolEnvelopeError) {
    return build({ category: 'internal', code: err.code }, `${err.name}: ${err.message}`, max, err, includeStack);
  }
  let rule = ruleFor(err);
  // fetch() and friends wrap the system error: `TypeError('fetch failed', { cause: ECONNREFUSED })`.
  let cause: unknown = err.cause;
  for (let depth = 0; rule === undefined && depth < 3 && cause instanceof Error; depth++) {
    rule = ruleFor(cause);
    if (rule !== undefined) {
      const outer = sanitizeMessage(err.message, max);
      const inner = sanitizeMessage(cause.message, max);
      return build(rule, cap(`${outer}: ${inner}`, max), max, err, includeStack, cause);
    }
    cause = cause.cause;
  }
  const fallback: Rule = rule ?? { category: 'internal', code: 'unhandled-exception' };
  const name = typeof err.name === 'string' && err.name !== '' ? err.name : 'Error';
  const message = typeof err.message === 'string' ? err.message : '';
  const text = rule === undefined ? `Unhandled ${name}${message === '' ? '' : ': ' + message}` : message || name;
  return build(fallback, text, max, err, includeStack);
}

function build(rule: Rule, text: string, max: number, err: Error, includeStack: boolean, source: Error = err): ToolError {
  const details: JsonObject = { errorName: safeName(err.name) };
  const code = (source as { code?: unknown }).code;
  if (typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code)) details.errorCode = code;
  const syscall = (source as { syscall?: unknown }).syscall;
  if (typeof syscall === 'string' && /^[a-z_]{1,32}$/.test(syscall)) details.syscall = syscall;
  if (err instanceof AggregateError) details.errorCount = err.errors.length;
  if (includeStack && typeof err.stack === 'string') details.stack = err.stack.slice(0, 16_384);
  return {
    category: rule.category,
    code: rule.code,
    detail: sanitizeMessage(text, max) || rule.code,
    retryable: rule.retryable ?? defaultRetryable(rule.category),
    details,
  };
}

function safeName(name: unknown): string {
  return typeof name === 'string' && /^[A-Za-z_$][\w$]{0,63}$/.test(name) ? name : 'Error';
}

function classifyNonError(value: unknown, max: number): ToolError {
  let what: string;
  switch (typeof value) {
    case 'string':
      what = value === '' ? 'an empty string' : `a string: ${value}`;
      break;
    case 'number':
    case 'bigint':
    case 'boolean':
      what = `a ${typeof value}: ${String(value)}`;
      break;
    case 'symbol':
      what = `a symbol: ${value.description ?? ''}`;
      break;
    case 'undefined':
      what = 'undefined';
      break;
    case 'function':
      what = 'a function';
      break;
    default:
      what = value === null ? 'null' : describeObject(value as object);
  }
  return {
    category: 'internal',
    code: 'non-error-thrown',
    detail: sanitizeMessage(`The tool threw ${what}`, max),
    retryable: false,
    details: { thrownType: value === null ? 'null' : typeof value },
  };
}

function describeObject(value: object): string {
  const message = (value as { message?: unknown }).message;
  if (typeof message === 'string') return `an object: ${message}`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  const ctor = Object.getPrototypeOf(value)?.constructor?.name;
  return typeof ctor === 'string' && ctor !== 'Object' && /^[\w$]{1,64}$/.test(ctor) ? `an object (${ctor})` : 'an object';
}

const SECRET_ENV_NAME = /KEY|TOKEN|SECRET|PASSW|PWD|AUTH|CREDENTIAL|PRIVATE|COOKIE|SESSION|DSN|DATABASE_URL/i;

function secretEnvValues(): string[] {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  if (env === undefined) return [];
  const out: string[] = [];
  for (const name of Object.keys(env)) {
    const v = env[name];
    if (v !== undefined && v.length >= 8 && SECRET_ENV_NAME.test(name)) out.push(v);
  }
  return out;
}

function cap(text: string, max: number): string {
  if (text.length <= max) return text;
  // Never cut a surrogate pair in half.
  let end = Math.max(0, max - 1);
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end -= 1;
  return text.slice(0, end) + '…';
}

/**
 * Makes an error message safe to show an agent: the first line only (no
 * stack frames), file paths and `file:` URLs as `<path>`, credentials in URLs,
 * `Bearer` tokens, `key=value` secrets and the values of secret-looking
 * environment variables as `<redacted>`, control characters removed, and at
 * most `max` characters.
 */
export function sanitizeMessage(message: string, max = DEFAULT_MAX_DETAIL): string {
  let text = firstLine(String(message));
  for (const secret of secretEnvValues()) {
    if (text.includes(secret)) text = text.split(secret).join('<redacted>');
  }
  text = replaceUrlParts(text, USERINFO, (scheme) => `${scheme}<redacted>@`) ?? text;
  for (const [pattern, replacement] of MESSAGE_PASSES) text = text.replace(pattern, replacement);
  return cap(text.trim(), max);
}

/**
 * The replacements of {@link sanitizeMessage} after URL userinfo, in order (each linear in the
 * text): bearer tokens, `key=value` secrets, paths, control characters.
 * @internal Shared with the tests' reference of sanitizeMessage; not part of the package's API.
 */
export const MESSAGE_PASSES: readonly (readonly [RegExp, string])[] = [
  [/\bBearer\s+[\w.~+/=-]+/gi, 'Bearer <redacted>'],
  [/\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth)(\s*[=:]\s*)[^\s&'",;]+/gi, '$1$2<redacted>'],
  [/\bfile:\/\/[^\s'"`)]*/gi, '<path>'],
  // Not the pattern of V8's `Invalid regular expression: /(/: ...` (one with an escaped `\/` in it may quote a path: redacted).
  [/(?<![\w.:/\\-])(?!(?<=Invalid regular expression: )\/[^\s/]*\/[dgimsuvy]*:)(?:~|\.{1,2})?\/(?:[^\s/'"`:)]+\/)+[^\s/'"`:),]*/g, '<path>'],
  [/(?<![\w])[A-Za-z]:\\[^\s'"`)]*/g, '<path>'],
  [/\\\\[^\s\\'"`]+\\[^\s'"`)]*/g, '<path>'],
  [/[\u0000-\u0008\u000b-\u001f\u007f]/g, ''],
];

/** A line break: CR, LF (so CRLF too), VT, FF, NEL and the Unicode line and paragraph separators. */
const LINE_BREAK = /[\n\r\v\f\u0085\u2028\u2029]/;

/**
 * The first line of `text` that is not blank, from its first non-space character: what follows
 * (stack frames, a query, a dump) never reaches the agent. Two searches, linear in the text.
 */
function firstLine(text: string): string {
  const start = text.search(/[^\s\u0085]/);
  if (start < 0) return '';
  const rest = text.slice(start);
  const end = rest.search(LINE_BREAK);
  return end < 0 ? rest : rest.slice(0, end);
}

/** What follows `://` up to the `@` of a URL's userinfo. */
const USERINFO = /[^\s/@'"]+@/y;
