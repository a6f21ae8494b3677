/**
 * W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header):
 * the one parser of its rules. Portable (no OpenTelemetry, no Node): otel/traceparent.ts
 * builds a span context from it, and the MCP layer reads the caller's trace id with it.
 */

// version "-" trace-id "-" parent-id "-" trace-flags, then (future versions only) more "-"-separated fields.
// One optional whitespace character around the header is tolerated, as the reference propagator does.
const TRACEPARENT = /^\s?([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?\s?$/;
const ALL_ZEROS = /^0+$/;

/** The fields of a valid `traceparent`. */
export interface TraceparentFields {
  /** Two lowercase hex digits, never `ff`. */
  version: string;
  /** 32 lowercase hex digits, not all zeros. */
  traceId: string;
  /** The caller's span id: 16 lowercase hex digits, not all zeros. */
  parentId: string;
  /** The trace-flags byte (bit 0: sampled). */
  traceFlags: number;
}

/**
 * Reads a `traceparent` header by the W3C rules, or `undefined` when it is malformed and
 * must be ignored: version `ff`, uppercase or non-hex digits, wrong lengths, an all-zero
 * trace or parent id, data after the flags in version 00, over 512 characters.
 */
export function readTraceparent(header: unknown): TraceparentFields | undefined {
  if (typeof header !== 'string' || header.length > 512) return undefined;
  const m = TRACEPARENT.exec(header);
  if (!m) return undefined;
  const [, version, traceId, parentId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff') return undefined;
  if (version === '00' && rest !== undefined) return undefined;
  if (ALL_ZEROS.test(traceId) || ALL_ZEROS.test(parentId)) return undefined;
  return { version, traceId, parentId, traceFlags: Number.parseInt(flags, 16) & 0xff };
}
