/**
 * The `fetch` the SDK's HTTP client transport gets for an upstream, over `node:http` instead of
 * undici: a speed trick (bench/README.md). It behaves as its reference, `boundedFetch(max,
 * perRequestSignalFetch())` (`useReferenceUpstreamFetch(true)`; the upstream HTTP tests run both):
 * answers bounded while they stream, aborts end the request, one listener per request. A POST answered
 * by an SSE stream holding only its answer is handed over as JSON, sparing the SDK's SSE parser.
 */
import type * as http from 'node:http';
import type * as https from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import { perRequestSignalFetch } from './fetch.js';
import { boundedEvents, boundedFetch, COUNT_PAST_LIMIT, requestIdOf, tooLargeError } from './http.js';

type Fetch = typeof fetch;
type Incoming = http.IncomingMessage;

let reference = false;

/**
 * Makes {@link upstreamFetch} return the plain reference, `boundedFetch(max, perRequestSignalFetch())`,
 * for transports made from now on (`true`), or this file's `node:http` fetch (`false`, the default).
 */
export function useReferenceUpstreamFetch(on: boolean): void {
  reference = on;
}

/** The `fetch` for a new HTTP upstream transport, no answer over `maxBytes` held whole. */
export function upstreamFetch(maxBytes: number): Fetch {
  return reference ? boundedFetch(maxBytes, perRequestSignalFetch()) : nodeHttpFetch(maxBytes);
}

function headerRecord(headers: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  if (!headers) return out;
  if (headers instanceof Headers)
    headers.forEach((v, k) => {
      out[k] = v;
    });
  else if (Array.isArray(headers)) for (const [k, v] of headers) out[k!.toLowerCase()] = v!;
  else for (const k of Object.keys(headers)) out[k.toLowerCase()] = (headers as Record<string, string>)[k]!;
  return out;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

function headersOf(res: Incoming): Headers {
  const h = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) h.append(raw[i]!, raw[i + 1]!);
  return h;
}

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
      const failed = (err?: unknown): void => {
        try {
          controller.error(signal?.aborted ? abortError(signal) : (err ?? new TypeError('terminated')));
        } catch {
          // Already closed or errored.
        }
      };
      if (res.readableEnded) return controller.close();
      if (res.destroyed) return failed();
      res.on('data', push);
      res.once('end', () => controller.close());
      res.once('error', failed);
      res.once('close', () => {
        if (!res.complete) failed();
      });
      res.resume();
    },
    cancel() {
      res.destroy();
    },
  });
}

/**
 * How far {@link firstSseAnswer} looks for the first event: a bigger answer takes the stream path
 * (the same bytes, through the SDK's SSE parser). Each chunk rescans what came before it, so the
 * lookahead bounds what an upstream trickling small chunks can make that scan cost.
 */
const FIRST_EVENT_LOOKAHEAD_BYTES = 32 * 1024;

/**
 * Reads an SSE answer until its first event with data, at most `limit` bytes. Resolves with that
 * event's JSON text when it answers `id` and nothing was read after it; otherwise with `undefined`
 * (the stream paused, `read` holding the bytes taken so far for the caller to stream on).
 */
function firstSseAnswer(res: Incoming, id: string | number, limit: number, read: Buffer[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    let text = '';
    let size = 0;
    const decoder = new StringDecoder('utf8');
    const decide = (answer: string | undefined): undefined => {
      res.off('data', onData);
      res.off('end', onEnd);
      res.off('error', onEnd);
      res.pause();
      resolve(answer);
    };
    const onEnd = (): void => decide(undefined);
    const onData = (chunk: Buffer): undefined => {
      read.push(chunk);
      size += chunk.length;
      // Past the lookahead the event may be the answer or not: the stream path bounds it either way.
      if (size > Math.min(limit, FIRST_EVENT_LOOKAHEAD_BYTES)) return decide(undefined);
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
        // Priming events (an id, no data) and keep-alives carry no message; an answer handed over
        // whole needs no resuming.
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
 * Reads a whole body, keeping at most `limit` bytes; past it counts up to `countUpTo` bytes, then
 * destroys the answer. `over` is set when more than `limit` bytes came.
 */
function readWhole(res: Incoming, limit: number, countUpTo: number): Promise<{ bytes: Buffer; over?: number }> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let total = 0;
    res.on('data', (c: Buffer) => {
      total += c.length;
      if (total <= limit) parts.push(c);
      else if (parts.length > 0) parts.length = 0;
      if (total > countUpTo) {
        res.destroy();
        resolve({ bytes: Buffer.alloc(0), over: total });
      }
    });
    res.once('end', () => resolve(total > limit ? { bytes: Buffer.alloc(0), over: total } : { bytes: Buffer.concat(parts, total) }));
    res.once('error', reject);
    res.once('close', () => {
      if (!res.complete) reject(new TypeError('terminated'));
    });
  });
}

/** A non-2xx body, kept to its first `limit` bytes (the SDK only reads it as error text). */
function readErrorText(res: Incoming, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let total = 0;
    res.on('data', (c: Buffer) => {
      if (total >= limit) return;
      parts.push(total + c.length > limit ? c.subarray(0, limit - total) : c);
      total = Math.min(limit, total + c.length);
      if (total >= limit) {
        res.destroy();
        resolve(Buffer.concat(parts, total));
      }
    });
    res.once('end', () => resolve(Buffer.concat(parts, total)));
    res.once('error', reject);
  });
}

interface Modules {
  http: typeof http;
  https: typeof https;
}

interface Agents {
  http: http.Agent;
  https: https.Agent;
}

let modules: Promise<Modules> | undefined;
/** Keep-alive agents per socket bound: fetches asking for different bounds do not share a pool. */
const agentsBySockets = new Map<number, Agents>();

function loadModules(): Promise<Modules> {
  modules ??= Promise.all([import('node:http'), import('node:https')]).then(([h, s]) => ({ http: h, https: s }));
  return modules;
}

/**
 * How long an idle kept-alive connection stays open at most. Node's agent honours a server's
 * `Keep-Alive: timeout=N` (closing its idle socket a second before the server would) only when it
 * has a timeout of its own to shorten: without one, a request reusing a connection the server is
 * closing fails ("fetch failed"), as with Node's own servers after their 5 s.
 */
const IDLE_SOCKET_MS = 60_000;

function agentsFor(mods: Modules, maxSockets: number): Agents {
  let agents = agentsBySockets.get(maxSockets);
  if (!agents) {
    const options = { keepAlive: true, maxSockets, timeout: IDLE_SOCKET_MS };
    agents = { http: new mods.http.Agent(options), https: new mods.https.Agent(options) };
    agentsBySockets.set(maxSockets, agents);
  }
  return agents;
}

/**
 * A `fetch` over `node:http`/`node:https` with keep-alive connections for the SDK's
 * `StreamableHTTPClientTransport`, every answer bounded to `maxBytes` as in `boundedFetch`. Answers
 * are real `Response` objects. What it does not cover (a `Request` object, a body that is not a
 * string, a scheme other than http/https) goes to the reference.
 */
export function nodeHttpFetch(maxBytes: number, maxSockets = 256): Fetch {
  let fallback: Fetch | undefined;
  let agents: Agents | undefined;
  const nodeFetch: Fetch = async (input, init) => {
    const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : undefined;
    const body = init?.body;
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || (body != null && typeof body !== 'string')) {
      fallback ??= boundedFetch(maxBytes, perRequestSignalFetch());
      return fallback(input, init);
    }
    const mods = await loadModules();
    const pool = (agents ??= agentsFor(mods, maxSockets));
    const signal = init?.signal ?? undefined;
    if (signal?.aborted) throw abortError(signal);
    const secure = url.protocol === 'https:';
    const method = init?.method ?? 'GET';
    const headers = headerRecord(init?.headers);
    const payload = typeof body === 'string' ? Buffer.from(body, 'utf8') : undefined;
    if (payload) headers['content-length'] = String(payload.length);
    let id: string | number | undefined | null = null;
    const idOnce = (): string | number | undefined => {
      if (id === null) id = method === 'POST' ? requestIdOf(body) : undefined;
      return id;
    };
    const mod = secure ? mods.https : mods.http;
    return new Promise<Response>((resolve, reject) => {
      const req = mod.request(url, { method, headers, agent: secure ? pool.https : pool.http });
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
      // A header the WHATWG objects refuse (Node's parser is laxer), or a body that broke off: the
      // call fails, the gateway does not.
      let current: Incoming | undefined;
      const broken = (err: unknown): void => {
        current?.destroy();
        fail(err);
      };
      req.once('response', (res) => {
        current = res;
        try {
          respond(res);
        } catch (err) {
          broken(err);
        }
      });
      const respond = (res: Incoming): void => {
        res.once('close', done);
        const status = res.statusCode ?? 0;
        const statusText = res.statusMessage ?? '';
        const nullBody = status === 204 || status === 205 || status === 304 || method === 'HEAD';
        const answer = (text: string | Buffer | null, h: Headers = headersOf(res)): void =>
          resolve(new Response(nullBody ? null : text, { status, statusText, headers: h }));
        if (nullBody || status < 200 || status >= 300) {
          readErrorText(res, maxBytes)
            .then((b) => answer(b.length === 0 ? null : b))
            .catch(broken);
          return;
        }
        if (/^\s*text\/event-stream/i.test(res.headers['content-type'] ?? '')) {
          const streamed = (read: Buffer[]): void =>
            resolve(new Response(streamOf(res, read, signal).pipeThrough(boundedEvents(maxBytes, idOnce)), { status, statusText, headers: headersOf(res) }));
          const requestId = idOnce();
          if (requestId === undefined || status !== 200) {
            streamed([]);
            return;
          }
          const read: Buffer[] = [];
          void firstSseAnswer(res, requestId, maxBytes, read)
            .then((json) => {
              if (json === undefined) return streamed(read);
              // The rest of the stream (its end) is read and dropped, so the connection is reused.
              res.resume();
              const h = headersOf(res);
              h.set('content-type', 'application/json');
              h.delete('content-length');
              answer(json, h);
            })
            .catch(broken);
          return;
        }
        const declared = Number(res.headers['content-length'] ?? Number.NaN);
        const read: Promise<{ bytes: Buffer; over?: number }> =
          declared > maxBytes
            ? (res.destroy(), Promise.resolve({ bytes: Buffer.alloc(0), over: declared }))
            : readWhole(res, maxBytes, maxBytes * COUNT_PAST_LIMIT);
        read
          .then(({ bytes, over }) => {
            if (over === undefined) return answer(bytes.length === 0 ? null : bytes);
            const requestId = idOnce();
            if (requestId === undefined) return resolve(new Response(null, { status: 202, statusText: 'Accepted' }));
            const h = headersOf(res);
            h.set('content-type', 'application/json');
            h.delete('content-length');
            answer(tooLargeError(requestId, over, maxBytes), h);
          })
          .catch(broken);
      };
      req.end(payload);
    });
  };
  return nodeFetch;
}
