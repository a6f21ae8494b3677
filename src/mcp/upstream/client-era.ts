/**
 * The era of the client session a request to an upstream is made for, carried in async context
 * from the session's handler (gateway/session.ts) to `Upstream.request`: a 2025-era client's
 * requests to an upstream that serves both eras go over a 2025 session with it (upstream/twin.ts),
 * a 2026-07-28 client's over the modern wire. Async context rather than a parameter: the request
 * reaches the upstream through the governance pipeline, which has no reason to know about eras.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const clientEra = new AsyncLocalStorage<'legacy' | 'modern'>();

/**
 * Whether any upstream in this process may serve both eras (HTTP, era `auto`): the only reader of
 * the era. Until one does, it is not carried: the first `run` turns on Node's promise hooks for
 * every promise of the process, which cost the gateway ~40 µs per call over HTTP with nothing
 * reading it (`gateway: before and after the redesign (#36, A/B)`, `HTTP, no store`).
 */
let carried = false;

/** Called for an upstream that may serve both eras, before it serves a call: from then on the era is carried. */
export function carryClientEra(): void {
  carried = true;
}

/** Runs `fn(...args)` as serving a client session of `era` (called directly: no closure between). */
export function withClientEra<A extends unknown[], T>(era: 'legacy' | 'modern', fn: (...args: A) => T, ...args: A): T {
  return carried ? clientEra.run(era, fn, ...args) : fn(...args);
}

/** The era of the client session being served, if any. */
export function currentClientEra(): 'legacy' | 'modern' | undefined {
  return clientEra.getStore();
}
