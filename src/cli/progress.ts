/**
 * Progress of long CLI runs on stderr, shown only when stderr is a terminal
 * (so pipes and logs stay clean): documents processed and documents per second.
 */

/** A progress line: `tick` once per document, `done` when finished. */
export interface Progress {
  tick(): void;
  done(): void;
}

const QUIET: Progress = { tick() {}, done() {} };

/** How often the line is redrawn, at most, by default. */
const REDRAW_MS = 250;

/**
 * A progress line on `stream` when it is a TTY, else a no-op. The line is
 * redrawn every 256 documents, at most every `redrawMs` (default 250 ms).
 */
export function createProgress(stream: NodeJS.WritableStream & { isTTY?: boolean }, label: string, options?: { redrawMs?: number }): Progress {
  if (stream.isTTY !== true) return QUIET;
  const redrawMs = options?.redrawMs ?? REDRAW_MS;
  const start = performance.now();
  let count = 0;
  let last = start;
  let shown = false;
  return {
    tick() {
      count++;
      // Reading the clock every document would cost more than the check itself.
      if ((count & 255) !== 0) return;
      const now = performance.now();
      if (now - last < redrawMs) return;
      last = now;
      const rate = Math.round((count * 1000) / Math.max(1, now - start));
      stream.write(`\r\x1b[2K${label}: ${count} documents, ${rate} documents/s`);
      shown = true;
    },
    done() {
      if (shown) stream.write('\r\x1b[2K');
    },
  };
}
