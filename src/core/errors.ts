/**
 * Library errors: thrown when the library itself is given bad input (a document
 * that is not an envelope, a value that cannot become JSON, a bad tool
 * definition). A *tool* failure is never thrown; it is an outcome.
 *
 * Codes are stable strings: new codes may be added, none is ever renamed.
 */
export const LIBRARY_ERROR_CODES = [
  /** Text that is not JSON. */
  'invalid-json',
  /** A JSON document that breaks its contract's schema. */
  'invalid-envelope',
  /** The contract of a document could not be detected, or a contract name is unknown. */
  'unknown-contract',
  /** A strict conversion would lose information. */
  'lossy-conversion',
  /** A value cannot be represented as JSON (circular, BigInt, function, ...). */
  'not-json-safe',
  /** A value nests deeper than the configured limit. */
  'too-deep',
  /** A value or text is larger than the configured limit. */
  'too-large',
  /** Invalid options or arguments given to a library function. */
  'invalid-option',
  /** A tool definition is invalid (bad name, bad schema, bad mode). */
  'invalid-tool-definition',
  /** No tool by that name is registered. */
  'unknown-tool',
  /** A store failed (I/O, database, migration). */
  'store-failure',
  /** The object was used after being closed. */
  'closed',
  /** No approval request has that id. */
  'unknown-approval',
  /** The approval request was already decided (approved, rejected or expired). */
  'approval-not-pending',
  /** A key file that group or others may read (an operator key must be private). */
  'insecure-key-file',
  /** An optional peer dependency (a driver such as better-sqlite3, pg, the MCP SDK) is not installed. */
  'missing-dependency',
  /** The approver may not approve this request (a principal of the call's own chain, or not an approver). */
  'approval-forbidden',
  /** A credential was missing, malformed, expired or not valid for this server. */
  'unauthenticated',
] as const;

/** A stable library error code. */
export type LibraryErrorCode = (typeof LIBRARY_ERROR_CODES)[number];

/** One problem found in a document, located by a JSON pointer (RFC 6901). */
export interface Issue {
  /** The rule broken, e.g. `required`, `type`, `enum`, `const`, `additionalProperties`, `not`. */
  code: string;
  /** JSON pointer to the offending value; `''` is the document itself. */
  path: string;
  /** Human-readable explanation. */
  message: string;
  /** Extra facts about the rule (expected type, allowed values, missing property, ...). */
  params?: Record<string, unknown>;
}

/** The error class thrown by the library for bad input to the library itself. */
export class ToolEnvelopeError extends Error {
  /** Stable machine code. */
  readonly code: LibraryErrorCode;
  /** Located problems, when the error is about a document. */
  readonly issues: Issue[];

  constructor(code: LibraryErrorCode, message: string, options?: { issues?: Issue[]; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ToolEnvelopeError';
    this.code = code;
    this.issues = options?.issues ?? [];
  }
}

/** True when `value` is a {@link ToolEnvelopeError}, optionally with the given code. */
export function isToolEnvelopeError(value: unknown, code?: LibraryErrorCode): value is ToolEnvelopeError {
  return value instanceof ToolEnvelopeError && (code === undefined || value.code === code);
}

/** Escapes one JSON pointer reference token (RFC 6901: `~` becomes `~0`, `/` becomes `~1`). */
export function pointer(segments: readonly (string | number)[]): string {
  let out = '';
  for (const s of segments) out += '/' + String(s).replace(/~/g, '~0').replace(/\//g, '~1');
  return out;
}
