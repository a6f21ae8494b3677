/**
 * One `abort` listener per AbortSignal, fanning out to the calls in flight on it.
 * Callers often share one signal across many concurrent calls (cancel the whole
 * batch): add/remove stay O(1) and Node's MaxListeners warning never trips.
 */

/** What watches a signal: told once when it aborts. */
export interface AbortWatcher {
  handleEvent(): void;
}

const watchers = new WeakMap<AbortSignal, Set<AbortWatcher>>();

function onCallerAbort(event: Event): void {
  const signal = event.target as AbortSignal;
  const calls = watchers.get(signal);
  watchers.delete(signal);
  signal.removeEventListener('abort', onCallerAbort);
  if (calls !== undefined) for (const call of calls) call.handleEvent();
}

/** Tells `call` when `signal` aborts (until {@link unwatchSignal}). */
export function watchSignal(signal: AbortSignal, call: AbortWatcher): void {
  let calls = watchers.get(signal);
  if (calls === undefined) {
    calls = new Set();
    watchers.set(signal, calls);
    signal.addEventListener('abort', onCallerAbort);
  }
  calls.add(call);
}

/** Stops telling `call` about `signal`; the last watcher gone removes the listener. */
export function unwatchSignal(signal: AbortSignal, call: AbortWatcher): void {
  const calls = watchers.get(signal);
  if (calls === undefined || !calls.delete(call) || calls.size !== 0) return;
  watchers.delete(signal);
  signal.removeEventListener('abort', onCallerAbort);
}
