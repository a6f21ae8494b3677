/** The two errors every store driver raises the same way: use after `close()`, and a driver failure. */
import { ToolEnvelopeError } from 'tool-envelope/core';

/** Throws `closed` when a store is used after `close()`. */
export function assertOpen(closed: boolean, what: string): void {
  if (closed) throw new ToolEnvelopeError('closed', `${what} is closed`);
}

/** Wraps a driver error as `ToolEnvelopeError('store-failure')` (library errors pass through). */
export function storeFailure(message: string, cause: unknown): ToolEnvelopeError {
  if (cause instanceof ToolEnvelopeError) return cause;
  return new ToolEnvelopeError('store-failure', `${message}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
}
