/**
 * Write coalescing for pipes. The SDK's stdio transports write each JSON-RPC message with its own
 * `write()`, and on a pipe each is a `write(2)` that wakes the reader: with many calls in flight the
 * gateway spent most of its CPU in those system calls. Corking the stream for the rest of the tick
 * sends every message produced in that tick with one `writev(2)`; a lone message (a sequential call)
 * still leaves in the same tick, so latency does not grow.
 */

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
