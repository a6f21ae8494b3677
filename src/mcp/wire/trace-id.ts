/** The trace id of a call, read from its W3C `traceparent` (`_meta`). */
import { readTraceparent } from 'tool-envelope/core';
import { newTraceId } from '../../runtime/ids.js';

/** The trace id of a W3C `traceparent`, or a fresh random one when it is absent or malformed. */
export function traceIdFrom(traceparent: string | undefined): string {
  // One reading of the W3C rules for the whole project (core/trace-context.ts): a malformed header is ignored.
  const fields = readTraceparent(traceparent);
  if (fields) return fields.traceId;
  // Cut from the runtime's pooled random hex (ids.ts, a speed trick with its reference): no UUID and no regex per call.
  return newTraceId();
}
