/**
 * Serving MCP over Streamable HTTP, one SDK `Server` per client session: authentication (the
 * session's identity comes from its credentials), an Origin allow-list, a session cap and idle
 * expiry, header and request timeouts, and no server left behind by a refused request.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { ToolEnvelopeError } from '../core/errors.js';
import type { Identity } from '../governance/identity.js';
import { isAuthFailure, type Authenticator } from './auth.js';

/**
 * Options of {@link serveHttp}.
 *
 * @example
 * ```ts
 * const o: ServeHttpOptions = { port: 0, path: '/mcp' };
 * ```
 */
export interface ServeHttpOptions {
  /** TCP port; 0 picks a free one. Default 3333. */
  port?: number;
  /** Interface; default `127.0.0.1`. */
  host?: string;
  /** Endpoint path; default `/mcp`. */
  path?: string;
  /** Largest accepted request body in bytes; default 16 MiB. */
  maxBodyBytes?: number;
  /** Verifies each request's credentials; the session's identity is the one its `initialize` proved. */
  auth?: Authenticator;
  /** The resource URL tokens must be issued for (OAuth `aud`); default: the endpoint's URL. */
  resourceUrl?: string;
  /**
   * Origins browsers may call from (`*`: any). Default: loopback origins only (`http://localhost:*`,
   * `http://127.0.0.1:*`, `http://[::1]:*`). Requests without an `Origin` header are allowed.
   */
  allowedOrigins?: string[];
  /** `Host` values accepted (DNS-rebinding protection); default: the loopback names of the port, or any when `auth` is set. */
  allowedHosts?: string[];
  /** Most open sessions; an `initialize` beyond it gets `503`. Default 1 000. */
  maxSessions?: number;
  /** A session with no request for this long is closed; default 30 min, `0`: never. */
  sessionIdleMs?: number;
  /** Time to receive a request's headers; default 10 000 ms. */
  headersTimeoutMs?: number;
  /** Time to receive a whole request (not the answer, which may stream); default 30 000 ms. */
  requestTimeoutMs?: number;
  /**
   * Makes each new session's `Mcp-Session-Id` (default: a random UUID). Behind a reverse proxy,
   * {@link replicaSessionId} tags the id with the replica that owns the session, for sticky routing.
   */
  sessionId?: () => string;
  /** Diagnostics. */
  log?: (line: string) => void;
}

/**
 * A session-id generator for one replica of several behind a reverse proxy: `NAME.<random UUID>`,
 * so the proxy can send a session's later requests back to the replica that holds it (see
 * docs/deploy.md). `NAME` is 1-32 letters, digits or `-`.
 *
 * @example
 * ```ts
 * await serveHttp(factory, { port: 4001, sessionId: replicaSessionId('r1') }); // ids like r1.2f1c…
 * ```
 */
export function replicaSessionId(name: string): () => string {
  if (!REPLICA_ID.test(name)) throw new ToolEnvelopeError('invalid-option', `a replica id is 1-32 letters, digits or '-', got ${JSON.stringify(name)}`);
  return () => `${name}.${randomUUID()}`;
}

const REPLICA_ID = /^[A-Za-z0-9][A-Za-z0-9-]{0,31}$/;

/**
 * A running HTTP endpoint.
 *
 * @example
 * ```ts
 * const http = await serveHttp(() => gateway.createServer(), { port: 0 });
 * console.log(http.url); // http://127.0.0.1:54321/mcp
 * await http.close();
 * ```
 */
export interface HttpEndpoint {
  /** The URL clients connect to. */
  url: string;
  port: number;
  /** Number of open sessions. */
  readonly sessions: number;
  /** Closes every session and the listener. */
  close(): Promise<void>;
}

const SSE_KEEP_ALIVE_MS = 15_000;

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/**
 * The parts of a WHATWG `Request` the SDK's web-standard transport reads (method, url, headers),
 * as a view over Node's request: no `Request`, `Headers` or body stream is built per call. The
 * body is never read through it: it is parsed here and handed over as `parsedBody`.
 */
class RequestView {
  readonly method: string;
  readonly url: string;
  readonly headers: HeaderView;

  constructor(req: IncomingMessage, base: string) {
    this.method = req.method ?? 'GET';
    this.url = base + (req.url ?? '/');
    this.headers = new HeaderView(req.headers);
  }
}

class HeaderView {
  constructor(private readonly h: IncomingMessage['headers']) {}

  get(name: string): string | null {
    const v = this.h[name.toLowerCase()];
    return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
  }

  has(name: string): boolean {
    return this.h[name.toLowerCase()] !== undefined;
  }

  *entries(): IterableIterator<[string, string]> {
    for (const k of Object.keys(this.h)) {
      const v = this.h[k];
      if (v !== undefined) yield [k, Array.isArray(v) ? v.join(', ') : v];
    }
  }

  forEach(fn: (value: string, name: string) => void): void {
    for (const [k, v] of this.entries()) fn(v, k);
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/**
 * Writes the transport's `Response` to Node's response. The status line and headers leave with the
 * first bytes of the body, and what is written in one tick leaves in one write: a tool call's SSE
 * answer (its event and the end of the stream) is one segment, one wake-up of the client. A long
 * call loses nothing: its first progress event, or the SDK's keep-alive comment (`keepAliveMs`),
 * carries the headers out. When the client goes away, the body stream is cancelled, which the SDK
 * takes as the end of that stream.
 */
async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((v, k) => {
    headers[k] = v;
  });
  res.writeHead(response.status, response.statusText || undefined, headers);
  const body = response.body;
  if (!body) {
    res.end();
    return;
  }
  const reader = body.getReader();
  let finished = false;
  res.once('close', () => {
    if (!finished) reader.cancel().catch(() => {});
  });
  let corked = false;
  const release = (): void => {
    corked = false;
    res.uncork();
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (res.destroyed) continue;
      if (!corked) {
        corked = true;
        res.cork();
        process.nextTick(release);
      }
      res.write(value);
    }
  } catch {
    // The stream was cancelled (the client went away) or failed: nothing more to send.
  } finally {
    finished = true;
    if (!res.destroyed) res.end();
  }
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large'> {
  // Events rather than `for await`: no async iterator and no promise per chunk.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume();
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.once('error', reject);
    req.once('close', () => {
      if (!req.complete) reject(new Error('request aborted'));
    });
  });
}

const LOOPBACK_ORIGIN = /^http:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i;

/**
 * True for an interface address that only this machine can reach (`127.0.0.0/8`, `::1`, `localhost`).
 *
 * @example
 * ```ts
 * isLoopbackHost('127.0.0.1'); // true
 * isLoopbackHost('0.0.0.0'); // false
 * ```
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** One identity as a comparable key: a session answers only to the identity that opened it. */
function identityKey(identity: Identity | undefined): string {
  if (!identity) return '';
  const p = identity.principal;
  return `${p.kind}\u0000${p.id}\u0000${p.tenant_id ?? ''}`;
}

interface SessionEntry {
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  identity: string;
  lastSeen: number;
  active: number;
}

/**
 * Serves MCP over Streamable HTTP: each `initialize` opens a session with a fresh
 * server from `createSessionServer` (given the identity the request's credentials proved);
 * later requests are routed by `mcp-session-id`, and only for that same identity.
 * Rejects with a clear `ToolEnvelopeError` (`invalid-option`) when the port is taken.
 *
 * @example
 * ```ts
 * const endpoint = await serveHttp(({ identity }) => gateway.createServer({ identity }), { port: 3333, auth });
 * ```
 */
export async function serveHttp(createSessionServer: (session: { identity?: Identity }) => Server, options: ServeHttpOptions = {}): Promise<HttpEndpoint> {
  const host = options.host ?? '127.0.0.1';
  const path = options.path ?? '/mcp';
  const maxBody = options.maxBodyBytes ?? 16 * 1024 * 1024;
  const maxSessions = options.maxSessions ?? 1_000;
  const idleMs = options.sessionIdleMs ?? 30 * 60_000;
  const auth = options.auth;
  const newSessionId = options.sessionId ?? randomUUID;
  const origins = options.allowedOrigins;
  const sessions = new Map<string, SessionEntry>();
  let base = '';
  let resource = '';
  let metadataPaths: string[] = [];
  let allowedHosts: string[] | undefined;

  const originAllowed = (origin: string | undefined): boolean => {
    if (origin === undefined) return true;
    if (origins === undefined) return LOOPBACK_ORIGIN.test(origin);
    return origins.includes('*') || origins.includes(origin);
  };

  const serve = async (transport: WebStandardStreamableHTTPServerTransport, req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> => {
    const response = await transport.handleRequest(new RequestView(req, base) as unknown as Request, body === undefined ? {} : { parsedBody: body });
    await writeResponse(response, res);
  };

  const serveSession = async (entry: SessionEntry, req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> => {
    // Only requests keep a session alive: an open listening stream (GET) alone does not, or idle
    // sessions holding one would never expire.
    const counted = req.method === 'POST';
    if (counted) entry.active++;
    entry.lastSeen = Date.now();
    try {
      await serve(entry.transport, req, res, body);
    } finally {
      if (counted) entry.active--;
      entry.lastSeen = Date.now();
    }
  };

  const unauthorized = (res: ServerResponse, challenge: string, message: string): void =>
    jsonRpcError(res, 401, -32001, message, { 'www-authenticate': challenge });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const target = req.url ?? '/';
    const query = target.indexOf('?');
    const pathname = query === -1 ? target : target.slice(0, query);
    if (req.method === 'GET' && auth?.resourceMetadata && metadataPaths.includes(pathname)) {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' }).end(JSON.stringify(auth.resourceMetadata(resource)));
      return;
    }
    if (pathname !== path && new URL(target, 'http://localhost').pathname !== path) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`Not found. The MCP endpoint is ${path}\n`);
      return;
    }
    // The MCP transport requires servers to validate Origin: a web page may not drive the gateway.
    const origin = req.headers.origin;
    if (!originAllowed(origin)) return jsonRpcError(res, 403, -32000, `Origin ${JSON.stringify(origin)} is not allowed`);
    if (allowedHosts && !allowedHosts.includes(String(req.headers.host ?? '').toLowerCase())) {
      return jsonRpcError(res, 403, -32000, `Host ${JSON.stringify(req.headers.host ?? '')} is not allowed`);
    }
    let identity: Identity | undefined;
    if (auth) {
      const who = await auth.authenticate(req.headers.authorization);
      if (isAuthFailure(who)) {
        req.resume();
        return unauthorized(res, auth.challenge(who, auth.resourceMetadata ? `${base}${metadataPaths[0]}` : undefined), who.description);
      }
      identity = who;
    }
    const sessionId = req.headers['mcp-session-id'];
    let existing = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    // Another identity's session id is no session at all, for this caller.
    if (existing && existing.identity !== identityKey(identity)) existing = undefined;
    if (req.method !== 'POST') {
      if (!existing) return jsonRpcError(res, typeof sessionId === 'string' ? 404 : 400, -32000, 'Unknown or missing session');
      await serveSession(existing, req, res);
      return;
    }
    const raw = await readBody(req, maxBody);
    if (raw === 'too-large') return jsonRpcError(res, 413, -32600, `Request body larger than ${maxBody} bytes`);
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return jsonRpcError(res, 400, -32700, 'Parse error');
    }
    if (existing) {
      await serveSession(existing, req, res, body);
      return;
    }
    if (typeof sessionId === 'string') return jsonRpcError(res, 404, -32001, 'Session not found');
    const initializing = Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
    if (!initializing) return jsonRpcError(res, 400, -32000, 'Bad Request: no valid session id');
    if (sessions.size >= maxSessions) return jsonRpcError(res, 503, -32000, `Too many sessions (${maxSessions}); try again later`, { 'retry-after': '5' });
    const server = createSessionServer(identity ? { identity } : {});
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => newSessionId(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server, identity: identityKey(identity), lastSeen: Date.now(), active: 0 });
      },
      // Bounds how long the headers of a silent call wait (see writeResponse); the SDK's default, stated here.
      keepAliveMs: SSE_KEEP_ALIVE_MS,
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    try {
      await serve(transport, req, res, body);
    } finally {
      // An initialize the transport refused opened no session: its server must not outlive the request.
      if (!transport.sessionId || !sessions.has(transport.sessionId)) await server.close().catch(() => {});
    }
  };

  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      options.log?.(`http: ${err instanceof Error ? err.message : String(err)}`);
      jsonRpcError(res, 500, -32603, 'Internal error');
    });
  });
  // These bound receiving a request (headers, body), not the answer: SSE streams stay open as long
  // as a call runs; the deadline lives in the gateway.
  http.headersTimeout = options.headersTimeoutMs ?? 10_000;
  http.requestTimeout = options.requestTimeoutMs ?? 30_000;
  http.keepAliveTimeout = 65_000;
  const sweeper =
    idleMs > 0
      ? setInterval(
          () => {
            const now = Date.now();
            for (const [id, e] of sessions) {
              if (e.active > 0 || now - e.lastSeen < idleMs) continue;
              sessions.delete(id);
              void e.server.close().catch(() => {});
            }
          },
          Math.min(60_000, Math.max(10, Math.floor(idleMs / 4))),
        ).unref()
      : undefined;

  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      http.off('listening', onListening);
      if (err.code === 'EADDRINUSE') {
        reject(
          new ToolEnvelopeError(
            'invalid-option',
            `port ${options.port ?? 3333} on ${host} is already in use; stop the other process, choose another port, or pass --http 0 for a free one`,
            { cause: err },
          ),
        );
      } else reject(new ToolEnvelopeError('invalid-option', `cannot listen on ${host}:${options.port ?? 3333}: ${err.message}`, { cause: err }));
    };
    const onListening = (): void => {
      http.off('error', onError);
      resolve();
    };
    http.once('error', onError);
    http.once('listening', onListening);
    http.listen(options.port ?? 3333, host);
  });
  http.on('error', (err) => options.log?.(`http: ${err.message}`));
  const port = (http.address() as AddressInfo).port;
  allowedHosts =
    options.allowedHosts?.map((h) => h.toLowerCase()) ?? (auth ? undefined : [`${host}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]);
  base = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  resource = options.resourceUrl ?? `${base}${path}`;
  // RFC 9728: the metadata of a resource with a path lives at the well-known path plus that path.
  metadataPaths = ['/.well-known/oauth-protected-resource' + new URL(resource).pathname.replace(/\/$/, ''), '/.well-known/oauth-protected-resource'];

  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}${path}`,
    port,
    get sessions() {
      return sessions.size;
    },
    async close() {
      if (sweeper) clearInterval(sweeper);
      await Promise.allSettled([...sessions.values()].map(({ transport, server }) => server.close().then(() => transport.close())));
      sessions.clear();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}
