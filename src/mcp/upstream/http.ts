/**
 * The `fetch` the gateway gives the SDK's `StreamableHTTPClientTransport` for an HTTP upstream:
 * every answer is bounded while it streams. A JSON answer or one SSE event over the result size
 * limit is dropped as it arrives (never held whole) and replaced by a JSON-RPC error for the
 * request, marked with `TOO_LARGE_MARK`, so the call becomes `result-too-large` and the connection
 * stays up, as on a stdio upstream.
 */
import { TOO_LARGE_MARK } from '../wire/result-size.js';

type Fetch = typeof fetch;

const LF = 0x0a;
const CR = 0x0d;
const encoder = new TextEncoder();

/** The id of the JSON-RPC request a POST carried (read only when an answer is too large). */
export function requestIdOf(body: unknown): string | number | undefined {
  if (typeof body !== 'string') return undefined;
  try {
    const m = JSON.parse(body) as { id?: unknown; method?: unknown };
    return typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number') ? m.id : undefined;
  } catch {
    return undefined;
  }
}

/** The JSON-RPC error text that replaces an answer over the limit, marked with `TOO_LARGE_MARK`. */
export function tooLargeError(id: string | number, bytes: number | undefined, limit: number): string {
  const size = bytes === undefined ? `more than ${limit} bytes` : `${bytes} bytes`;
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    error: {
      code: -32603,
      message: `an answer of ${size} is over the limit of ${limit} bytes and was dropped`,
      data: { [TOO_LARGE_MARK]: true, ...(bytes === undefined ? {} : { bytes }), limitBytes: limit },
    },
  });
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Passes an SSE stream on event by event; an event over `limit` bytes is dropped as it arrives and,
 * when the request is known, replaced by the too-large error event. Only event boundaries (a blank
 * line) are looked for: the SDK's transport parses the events.
 */
export function boundedEvents(limit: number, id: () => string | number | undefined): TransformStream<Uint8Array, Uint8Array> {
  let parts: Uint8Array[] = [];
  let size = 0;
  let dropping = false;
  let dropped = 0;
  // The current line so far (since the last LF): its length, and whether it is a lone CR.
  let lineBytes = 0;
  let lineIsCr = false;
  const endEvent = (controller: TransformStreamDefaultController<Uint8Array>): void => {
    if (dropping) {
      const requestId = id();
      if (requestId !== undefined) controller.enqueue(encoder.encode(`event: message\ndata: ${tooLargeError(requestId, dropped, limit)}\n\n`));
      dropping = false;
      dropped = 0;
    } else if (size > 0) controller.enqueue(concat(parts, size));
    parts = [];
    size = 0;
  };
  const keep = (chunk: Uint8Array): void => {
    if (chunk.length === 0) return;
    if (dropping) {
      dropped += chunk.length;
      return;
    }
    if (size + chunk.length > limit) {
      dropping = true;
      dropped = size + chunk.length;
      parts = [];
      size = 0;
      return;
    }
    parts.push(chunk);
    size += chunk.length;
  };
  return new TransformStream({
    transform(chunk, controller) {
      let from = 0;
      let pos = 0;
      for (;;) {
        const lf = chunk.indexOf(LF, pos);
        if (lf === -1) {
          const n = chunk.length - pos;
          if (n > 0) {
            lineIsCr = lineBytes === 0 && n === 1 && chunk[pos] === CR;
            lineBytes += n;
          }
          break;
        }
        const n = lf - pos;
        const blank = lineBytes + n === 0 || (lineBytes + n === 1 && (n === 1 ? chunk[pos] === CR : lineIsCr));
        lineBytes = 0;
        lineIsCr = false;
        pos = lf + 1;
        if (blank) {
          keep(chunk.subarray(from, pos));
          endEvent(controller);
          from = pos;
        }
      }
      keep(chunk.subarray(from));
    },
    flush(controller) {
      endEvent(controller);
    },
  });
}

/** How far past the limit the bytes of a dropped JSON answer are still counted (then the body is cancelled). */
export const COUNT_PAST_LIMIT = 16;

/**
 * Reads a JSON answer whole, up to `limit` bytes. Past it, the rest is read and counted but not
 * kept (so the error can say how big the answer was and the connection stays reusable), up to
 * {@link COUNT_PAST_LIMIT} times the limit.
 */
async function readBounded(body: ReadableStream<Uint8Array>, limit: number): Promise<{ bytes: Uint8Array } | { over: number }> {
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return total > limit ? { over: total } : { bytes: concat(parts, total) };
    total += value.length;
    if (total <= limit) parts.push(value);
    else if (parts.length > 0) parts.length = 0;
    if (total > limit * COUNT_PAST_LIMIT) {
      await reader.cancel().catch(() => {});
      return { over: total };
    }
  }
}

/**
 * Wraps `base` so that no answer larger than `maxBytes` (a JSON body, or one event of an SSE stream)
 * reaches the SDK's transport: it becomes a JSON-RPC error for the request carrying
 * `TOO_LARGE_MARK`, `bytes` (when known) and `limitBytes`.
 */
export function boundedFetch(maxBytes: number, base: Fetch = fetch): Fetch {
  return async (input, init) => {
    const res = await base(input, init);
    if (!res.body || !res.ok) return res;
    const type = res.headers.get('content-type') ?? '';
    let id: string | number | undefined | null = null;
    const idOnce = (): string | number | undefined => {
      if (id === null) id = requestIdOf(init?.body);
      return id;
    };
    const same = { status: res.status, statusText: res.statusText, headers: res.headers };
    if (/^\s*text\/event-stream/i.test(type)) return new Response(res.body.pipeThrough(boundedEvents(maxBytes, idOnce)), same);
    const declared = Number(res.headers.get('content-length') ?? Number.NaN);
    let over: number | undefined;
    if (declared > maxBytes) {
      over = declared;
      await res.body.cancel().catch(() => {});
    } else {
      const read = await readBounded(res.body, maxBytes);
      if ('bytes' in read) return new Response(read.bytes, same);
      over = read.over;
    }
    const requestId = idOnce();
    if (requestId === undefined) return new Response(null, { status: 202, statusText: 'Accepted' });
    const headers = new Headers(res.headers);
    headers.set('content-type', 'application/json');
    headers.delete('content-length');
    return new Response(tooLargeError(requestId, over, maxBytes), { status: res.status, headers });
  };
}
