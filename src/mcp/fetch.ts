/**
 * A `fetch` for the SDK's `StreamableHTTPClientTransport` that does not pile listeners onto the
 * transport's long-lived `AbortSignal`.
 *
 * The transport passes the signal of one `AbortController` (aborted only by `close()`) to every
 * request. Node's fetch (undici) adds an `abort` listener to that signal in each `Request` and
 * removes it only when the request is garbage-collected, so between collections thousands of
 * listeners pile up on one signal: every further `addEventListener` walks them all, and past 1 500
 * each request prints a `MaxListenersExceededWarning` with a stack trace. Here each request gets
 * its own signal instead, and one listener per long-lived signal aborts every request still alive.
 */

import { StringDecoder } from 'node:string_decoder';

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
 *
 * @example
 * ```ts
 * const transport = new StreamableHTTPClientTransport(new URL('http://127.0.0.1:3333/mcp'), { fetch: perRequestSignalFetch() });
 * ```
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

/**
 * Options of {@link nodeHttpFetch}.
 *
 * @example
 * ```ts
 * const o: NodeHttpFetchOptions = { maxSockets: 64, sseAnswerAsJson: true };
 * ```
 */
export interface NodeHttpFetchOptions {
  /** Most connections kept open per origin; default 256. */
  maxSockets?: number;
  /**
   * When a POSTed JSON-RPC request is answered with an SSE stream whose first message is the
   * answer to that request, hand the answer over as an `application/json` response (what a server
   * with `enableJsonResponse` sends) instead of a stream the caller parses event by event. Any
   * other first event (a progress notification, a request, a `retry` field, an event without data)
   * keeps the stream, so notifications still arrive as they are sent. Event ids of such an answer
   * are not reported: do not use it with SSE resumption tokens. Default `false`.
   */
  sseAnswerAsJson?: boolean;
}

function headerRecord(headers: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  if (!headers) return out;
  if (headers instanceof Headers) headers.forEach((v, k) => (out[k] = v));
  else if (Array.isArray(headers)) for (const [k, v] of headers) out[k!.toLowerCase()] = v!;
  else for (const k of Object.keys(headers)) out[k.toLowerCase()] = (headers as Record<string, string>)[k]!;
  return out;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * The headers of a buffered answer: the `Headers` methods fetch callers use, over Node's parsed
 * header object (names lowercased, repeated headers joined with `, `), without copying them into
 * a WHATWG `Headers`.
 */
class AnswerHeaders {
  private readonly map = new Map<string, string>();

  constructor(parsed: import('node:http').IncomingHttpHeaders) {
    for (const name of Object.keys(parsed)) {
      const v = parsed[name];
      if (v !== undefined) this.map.set(name, Array.isArray(v) ? v.join(', ') : v);
    }
  }

  get(name: string): string | null {
    return this.map.get(name.toLowerCase()) ?? null;
  }

  has(name: string): boolean {
    return this.map.has(name.toLowerCase());
  }

  set(name: string, value: string): void {
    this.map.set(name.toLowerCase(), value);
  }

  append(name: string, value: string): void {
    const key = name.toLowerCase();
    const had = this.map.get(key);
    this.map.set(key, had === undefined ? value : `${had}, ${value}`);
  }

  delete(name: string): void {
    this.map.delete(name.toLowerCase());
  }

  forEach(fn: (value: string, name: string, headers: AnswerHeaders) => void): void {
    for (const [k, v] of [...this.map].sort(([a], [b]) => (a < b ? -1 : 1))) fn(v, k, this);
  }

  *entries(): IterableIterator<[string, string]> {
    yield* [...this.map].sort(([a], [b]) => (a < b ? -1 : 1));
  }

  *keys(): IterableIterator<string> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): IterableIterator<string> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/**
 * A whole answer read into memory, with the members of `Response` that fetch callers use.
 * Building a WHATWG `Response` (and the stream behind its body) costs more than a small MCP call.
 */
class BufferedResponse {
  readonly ok: boolean;
  readonly redirected = false;
  readonly type = 'basic';
  private used = false;

  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly headers: AnswerHeaders,
    readonly url: string,
    private readonly bytes: Buffer | null,
  ) {
    this.ok = status >= 200 && status < 300;
  }

  get bodyUsed(): boolean {
    return this.used;
  }

  /** Null for an empty answer; otherwise a stream made on demand. */
  get body(): ReadableStream<Uint8Array> | null {
    if (!this.bytes || this.bytes.length === 0) return null;
    const bytes = this.take();
    return new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
        controller.close();
      },
    });
  }

  private take(): Buffer {
    if (this.used) throw new TypeError('Body is unusable: Body has already been read');
    this.used = true;
    return this.bytes ?? Buffer.alloc(0);
  }

  async text(): Promise<string> {
    return this.take().toString('utf8');
  }

  async json(): Promise<unknown> {
    return JSON.parse(this.take().toString('utf8'));
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const b = this.take();
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
  }

  clone(): BufferedResponse {
    if (this.used) throw new TypeError('Response.clone: Body has already been consumed.');
    return new BufferedResponse(this.status, this.statusText, this.headers, this.url, this.bytes);
  }
}

type Incoming = import('node:http').IncomingMessage;

/** A streamed body: `prefix` (bytes already read) and then the rest of `res`. */
function streamOf(res: Incoming, prefix: Buffer[], signal: AbortSignal | undefined): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const push = (c: Buffer): void => {
        try {
          controller.enqueue(new Uint8Array(c.buffer, c.byteOffset, c.byteLength));
        } catch {
          // The reader cancelled or the stream errored: the rest is not wanted.
          res.destroy();
        }
      };
      for (const c of prefix) push(c);
      if (res.destroyed && !res.readableEnded) {
        controller.error(signal?.aborted ? abortError(signal) : new TypeError('terminated'));
        return;
      }
      if (res.readableEnded) {
        controller.close();
        return;
      }
      res.on('data', push);
      res.once('end', () => controller.close());
      res.once('error', (err) => controller.error(signal?.aborted ? abortError(signal) : err));
      res.once('close', () => {
        if (!res.complete) controller.error(signal?.aborted ? abortError(signal) : new TypeError('terminated'));
      });
    },
    cancel() {
      res.destroy();
    },
  });
}

/** How the SDK's `Protocol` serialises a request: `{...request, jsonrpc: '2.0', id}`, so the id comes last. */
const SDK_REQUEST_TAIL = /,"jsonrpc":"2\.0","id":(-?\d+)\}$/;

/** The id of a POSTed JSON-RPC request (`undefined` for anything else, a batch, a notification, a response). */
function requestIdOf(body: string): string | number | undefined {
  if (!body.startsWith('{"method":')) {
    if (!body.startsWith('{')) return undefined;
  } else {
    // The common case, without parsing the whole body again: a top-level `"id":N}` closes the text.
    const tail = SDK_REQUEST_TAIL.exec(body);
    if (tail) return Number(tail[1]);
  }
  try {
    const m = JSON.parse(body) as { id?: unknown; method?: unknown };
    return typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number') ? m.id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads an SSE answer until its first event with data. Resolves with the answer's JSON text when that
 * event is the answer to `id` (the rest of the stream is drained unread), otherwise with `undefined`
 * after pausing the stream, and `read` holds the bytes taken so far for the caller to stream on.
 */
function firstSseAnswer(res: Incoming, id: string | number, read: Buffer[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const decoder = new StringDecoder('utf8');
    const decide = (answer: string | undefined): void => {
      res.off('data', onData);
      res.off('end', onEnd);
      res.off('error', onEnd);
      if (answer === undefined) res.pause();
      else res.resume();
      resolve(answer);
    };
    const onEnd = (): void => decide(undefined);
    const onData = (chunk: Buffer): void => {
      read.push(chunk);
      text += decoder.write(chunk);
      const normalised = text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
      let start = 0;
      for (let end = normalised.indexOf('\n\n'); end !== -1; end = normalised.indexOf('\n\n', start)) {
        const block = normalised.slice(start, end);
        start = end + 2;
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line === '' || line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon === -1 ? line : line.slice(0, colon);
          const value = colon === -1 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
          if (field === 'event') event = value;
          else if (field === 'data') data.push(value);
          else if (field === 'retry') return decide(undefined);
        }
        // Priming events (an id, no data) and keep-alives carry no message: only the stream's resumption needs them,
        // and an answer handed over whole needs no resuming.
        const json = data.join('\n');
        if (json === '') continue;
        if (event !== 'message') return decide(undefined);
        let message: { id?: unknown; result?: unknown; error?: unknown };
        try {
          message = JSON.parse(json) as typeof message;
        } catch {
          return decide(undefined);
        }
        const answers = message !== null && typeof message === 'object' && message.id === id && ('result' in message || 'error' in message);
        // Anything already read after the answer would be lost: then the stream is kept.
        return decide(answers && normalised.slice(start).trim() === '' ? json : undefined);
      }
    };
    res.on('data', onData);
    res.once('end', onEnd);
    res.once('error', onEnd);
  });
}

/**
 * A `fetch` over `node:http`/`node:https` with keep-alive connections, for the SDK's
 * `StreamableHTTPClientTransport` (its `fetch` option). It covers what that transport asks of
 * `fetch`: string bodies, `Headers` or record headers, an `AbortSignal` that also ends a body still
 * streaming (one listener per request, removed when the request ends), and redirects returned
 * unfollowed (the SDK follows them itself, within the origin). An answer that is not an SSE stream
 * is read whole and handed over as a buffered response object with the members of `Response` that
 * callers use (`ok`, `status`, `statusText`, `headers`, `url`, `text()`, `json()`, `arrayBuffer()`,
 * `body`, `clone()`); an SSE stream is a real `Response` with a streamed body. Anything else (a
 * `Request` object, a `FormData` or stream body, a scheme other than http/https) goes to the global
 * `fetch`. Node's own `fetch` (undici) and the web streams behind each `Response` spend most of a
 * gateway's CPU on a small tool call over HTTP; this spends a fraction.
 *
 * @example
 * ```ts
 * const transport = new StreamableHTTPClientTransport(new URL('http://127.0.0.1:3333/mcp'), { fetch: nodeHttpFetch() });
 * ```
 */
export function nodeHttpFetch(options: NodeHttpFetchOptions = {}): Fetch {
  const maxSockets = options.maxSockets ?? 256;
  let agents: { http: import('node:http').Agent; https: import('node:https').Agent } | undefined;
  let mods: { http: typeof import('node:http'); https: typeof import('node:https') } | undefined;
  return async (input, init) => {
    const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : undefined;
    const body = init?.body;
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || (body != null && typeof body !== 'string')) {
      return fetch(input, init);
    }
    if (!mods) {
      const [http, https] = await Promise.all([import('node:http'), import('node:https')]);
      mods = { http, https };
      agents = { http: new http.Agent({ keepAlive: true, maxSockets }), https: new https.Agent({ keepAlive: true, maxSockets }) };
    }
    const signal = init?.signal ?? undefined;
    if (signal?.aborted) throw abortError(signal);
    const secure = url.protocol === 'https:';
    const method = init?.method ?? 'GET';
    const headers = headerRecord(init?.headers);
    const payload = typeof body === 'string' ? Buffer.from(body, 'utf8') : undefined;
    if (payload) headers['content-length'] = String(payload.length);
    const id = options.sseAnswerAsJson && method === 'POST' && typeof body === 'string' ? requestIdOf(body) : undefined;
    const mod = secure ? mods.https : mods.http;
    const href = url.href;
    return new Promise<Response>((resolve, reject) => {
      const req = mod.request(url, { method, headers, agent: secure ? agents!.https : agents!.http });
      const onAbort = (): void => {
        req.destroy(abortError(signal!) as Error);
      };
      const done = (): void => signal?.removeEventListener('abort', onAbort);
      const fail = (err: unknown): void => {
        done();
        reject(signal?.aborted ? abortError(signal) : new TypeError('fetch failed', { cause: err }));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      req.once('error', fail);
      req.once('response', (res) => {
        const status = res.statusCode ?? 0;
        const statusText = res.statusMessage ?? '';
        const webHeaders = (): Headers => {
          const h = new Headers();
          const raw = res.rawHeaders;
          for (let i = 0; i + 1 < raw.length; i += 2) h.append(raw[i]!, raw[i + 1]!);
          return h;
        };
        const nullBody = status === 204 || status === 205 || status === 304 || method === 'HEAD';
        const sse = !nullBody && /^\s*text\/event-stream/i.test(res.headers['content-type'] ?? '');
        if (!sse) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.once('end', () => {
            done();
            resolve(
              new BufferedResponse(status, statusText, new AnswerHeaders(res.headers), href, nullBody ? null : Buffer.concat(chunks)) as unknown as Response,
            );
          });
          res.once('error', fail);
          return;
        }
        res.once('close', done);
        const streamed = (read: Buffer[]): void => resolve(new Response(streamOf(res, read, signal), { status, statusText, headers: webHeaders() }));
        if (id === undefined || status !== 200) return streamed([]);
        const read: Buffer[] = [];
        void firstSseAnswer(res, id, read).then((answer) => {
          if (answer === undefined) {
            streamed(read);
            res.resume();
            return;
          }
          const answerHeaders = new AnswerHeaders(res.headers);
          answerHeaders.set('content-type', 'application/json');
          answerHeaders.delete('content-length');
          resolve(new BufferedResponse(status, statusText, answerHeaders, href, Buffer.from(answer, 'utf8')) as unknown as Response);
        });
      });
      req.end(payload);
    });
  };
}
