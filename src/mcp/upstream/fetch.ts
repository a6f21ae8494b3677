/**
 * A `fetch` for the SDK's HTTP client transport that gives each request its own signal: undici keeps
 * an `abort` listener per request on the transport's one long-lived signal until garbage collection,
 * so listeners pile up (each add walks them all; past 1 500, a warning per request).
 */

type Fetch = typeof fetch;

interface Requests {
  /** The per-request signals, weakly: a finished request is collected and drops out. */
  live: Set<WeakRef<AbortSignal>>;
  added: number;
}

const PRUNE_EVERY = 1024;
const byOuter = new WeakMap<AbortSignal, Requests>();
// Keyed by the per-request signal (which undici holds while the request or its body lives), so a
// request's controller lives exactly as long as something can still be aborted through it.
const controllers = new WeakMap<AbortSignal, AbortController>();

function requestsOf(outer: AbortSignal): Requests {
  let requests = byOuter.get(outer);
  if (!requests) {
    const created: Requests = { live: new Set(), added: 0 };
    outer.addEventListener(
      'abort',
      () => {
        for (const ref of created.live) {
          const signal = ref.deref();
          if (signal) controllers.get(signal)?.abort(outer.reason);
        }
        created.live.clear();
      },
      { once: true },
    );
    byOuter.set(outer, (requests = created));
  }
  return requests;
}

/**
 * Wraps `base` (default: the global `fetch`) so that each request gets its own `AbortSignal`,
 * aborted when the signal the caller passed is. Pass it as the `fetch` option of
 * `StreamableHTTPClientTransport`.
 */
export function perRequestSignalFetch(base: Fetch = fetch): Fetch {
  return (input, init) => {
    const outer = init?.signal;
    if (!outer) return base(input, init);
    const controller = new AbortController();
    if (outer.aborted) controller.abort(outer.reason);
    else {
      const requests = requestsOf(outer);
      requests.live.add(new WeakRef(controller.signal));
      controllers.set(controller.signal, controller);
      if (++requests.added % PRUNE_EVERY === 0) {
        for (const ref of requests.live) if (!ref.deref()) requests.live.delete(ref);
      }
    }
    return base(input, { ...init, signal: controller.signal });
  };
}
