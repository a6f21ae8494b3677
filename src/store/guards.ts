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

/**
 * A table's guard: `check` (throws when the store is closed), then `fn`, whose failure becomes a
 * `store-failure` named `<label> <what> failed`.
 */
export function tableGuard(check: () => void, label: string): <T>(what: string, fn: () => T) => T {
  return (what, fn) => {
    check();
    try {
      return fn();
    } catch (e) {
      throw storeFailure(`${label} ${what} failed`, e);
    }
  };
}
