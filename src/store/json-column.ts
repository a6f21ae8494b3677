/**
 * JSON text in and out of a database column: serialised with a `not-json-safe` error naming the
 * field, read back from text (SQLite) or as the driver already parsed it (PostgreSQL JSONB).
 */
import { ToolEnvelopeError } from 'tool-envelope/core';

/** A value as JSON text; throws `not-json-safe` (naming `what`) for a value JSON cannot hold. */
export function jsonColumn(value: unknown, what: string): string {
  try {
    const text = JSON.stringify(value);
    if (typeof text !== 'string') throw new Error('not JSON');
    return text;
  } catch (e) {
    throw new ToolEnvelopeError('not-json-safe', `audit ${what} is not JSON-serialisable: ${(e as Error).message}`, { cause: e });
  }
}

/** A JSON column's value: parsed when it is text, as it is otherwise. */
export function parsedColumn<T>(v: unknown): T {
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}
