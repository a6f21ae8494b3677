/**
 * Write coalescing for pipes. The SDK's stdio transports write each JSON-RPC message with its own
 * `write()`, and on a pipe each is a `write(2)` that wakes the reader: with many calls in flight the
 * gateway spent most of its CPU in those system calls. Corking the stream for the rest of the tick
 * sends every message produced in that tick with one `writev(2)`; a lone message (a sequential call)
 * still leaves in the same tick, so latency does not grow.
 */

import type { ServerResponse } from 'node:http';

/** A stream whose writes can be held back and released in one batch (`net.Socket`, `fs.WriteStream`, ...). */
interface Corkable {
  write(...args: unknown[]): boolean;
  cork(): void;
  uncork(): void;
}

const COALESCED = Symbol.for('tool-envelope.coalesced');

/**
 * Makes every `write()` to `stream` within one tick leave as a single batch. Does nothing for a
 * stream without `cork`/`uncork`, or one already coalesced.
 *
 * @example
 * ```ts
 * coalesceWrites(process.stdout);
 * new StdioServerTransport(process.stdin, process.stdout);
 * ```
 */
export function coalesceWrites(stream: unknown): void {
  const s = stream as Partial<Corkable> & { [COALESCED]?: true };
  if (!s || typeof s.write !== 'function' || typeof s.cork !== 'function' || typeof s.uncork !== 'function' || s[COALESCED]) return;
  const write = s.write;
  const cork = s.cork;
  const uncork = s.uncork;
  let corked = false;
  const release = (): void => {
    corked = false;
    uncork.call(s);
  };
  Object.defineProperty(s, COALESCED, { value: true });
  s.write = function coalescedWrite(this: unknown, ...args: unknown[]): boolean {
    if (!corked) {
      corked = true;
      cork.call(s);
      process.nextTick(release);
    }
    return write.apply(s, args);
  };
}

/**
 * Makes an HTTP response's answer leave as one batch: the status line and headers wait for the
 * first bytes of the body (a streaming response's explicit `flushHeaders()` is held back; the SDK's
 * SSE keep-alive comment carries them out of a silent call within its interval), and what is
 * written within one turn of the event loop (an SSE event, the end of the stream) leaves together:
 * a tool call's whole answer is one segment, one wake-up of the client. The rows it must pay for:
 * `seams: hand-written MCP pieces vs their plain references (A/B)`, `coalesceResponse: ...`
 * (bench/seams.bench.mjs), against the SDK's own response path ({@link useReferenceResponses}).
 *
 * @example
 * ```ts
 * http.createServer((req, res) => {
 *   coalesceResponse(res);
 *   void transport.handleRequest(req, res);
 * });
 * ```
 */
export function coalesceResponse(res: ServerResponse): void {
  let corked = false;
  const release = (): void => {
    corked = false;
    res.uncork();
  };
  const hold = (): void => {
    if (corked || res.destroyed) return;
    corked = true;
    res.cork();
    setImmediate(release);
  };
  const own = (name: string, value: (...args: unknown[]) => unknown): void => {
    Object.defineProperty(res, name, { value, configurable: true, writable: true });
  };
  own('flushHeaders', () => {});
  for (const name of ['write', 'end'] as const) {
    const original = res[name] as (...args: unknown[]) => unknown;
    own(name, (...args: unknown[]) => {
      hold();
      return original.apply(res, args);
    });
  }
}

let plainResponses = false;

/**
 * Selects how `serveHttp` writes its answers: `true` serves every later response on the SDK's own
 * response path, unmodified (the plain reference of {@link coalesceResponse}, run by the tests and
 * the bench); `false` (the default) coalesces them. Returns the previous setting.
 *
 * @example
 * ```ts
 * const before = useReferenceResponses(true);
 * // ... serve, measure ...
 * useReferenceResponses(before);
 * ```
 */
export function useReferenceResponses(on: boolean): boolean {
  const before = plainResponses;
  plainResponses = on;
  return before;
}

/**
 * Prepares one HTTP response before the SDK writes it: {@link coalesceResponse}, or nothing at all
 * under {@link useReferenceResponses}. The seam `serveHttp` calls for every request.
 *
 * @example
 * ```ts
 * http.createServer((req, res) => {
 *   prepareResponse(res);
 *   void transport.handleRequest(req, res);
 * });
 * ```
 */
export function prepareResponse(res: ServerResponse): void {
  if (!plainResponses) coalesceResponse(res);
}
