/**
 * Serving MCP over Streamable HTTP in both protocol eras, on the SDK v2's own handlers: 2025-11-25
 * sessions on the Node Streamable HTTP transport (one SDK `Server` per session), and 2026-07-28
 * per-request traffic on `createMcpHandler` (stateless: any process can serve any request). Before
 * any server exists: authentication (the identity comes from the credentials), an Origin
 * allow-list, a Host check, a session cap and idle expiry, header and request timeouts.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import { type AuthInfo, classifyInboundRequest, createMcpHandler, isInitializeRequest, type Server } from '@modelcontextprotocol/server';
import { jsonNestsDeeper, ToolEnvelopeError } from 'tool-envelope/core';
import type { Identity } from '../../governance/identity.js';
import { type AuthFailure, isAuthFailure, type Authenticator } from './auth.js';
import { answerRpcError, header, identityKey, jsonRpcError, originAllowed, readBody, requestIdOf } from './http-guards.js';
import { MAX_MESSAGE_DEPTH, TOO_DEEP_MESSAGE } from '../wire/message-depth.js';
import { paramHeaderMismatch, paramHeadersOf } from '../wire/param-headers.js';
import { TopLevelIdScanner } from '../wire/result-size.js';
import { HEADER_MISMATCH } from '../wire/rpc-errors.js';
import { type ListenHooks, listenFilterOf } from '../gateway/subscriptions.js';
import { type HttpSessionTransport, NodeSessionTransport } from './http-session.js';

export { isLoopbackHost } from './http-guards.js';

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
  /**
   * The `inputSchema` of the tool a modern-era `tools/call` names (`gateway.toolInputSchema`), so its
   * `Mcp-Param-*` headers are checked against its `x-mcp-header` properties before any server runs
   * (`-32020`, HTTP 400, as the SDK does for an `McpServer`'s own tools). Without it nothing is checked.
   */
  toolInputSchema?: (name: string) => unknown;
  /** The gateway's hooks for modern-era `subscriptions/listen` streams (`gateway.subscriptions`): their event bus, and where they open. */
  listen?: ListenHooks;
  /**
   * The transport of 2025-era sessions: `native` (default), the gateway's own on Node's `http`
   * objects (`NodeSessionTransport`, the same answers for less CPU per call), or `sdk`, the SDK's
   * `NodeStreamableHTTPServerTransport` (its reference; the HTTP tests run both). Default: as
   * {@link useReferenceSessionTransport} last set it (`native` unless turned on).
   */
  sessionTransport?: 'native' | 'sdk';
  /**
   * How the native session transport answers a POST with one `tools/call` when nothing else was sent on
   * it: `json` (default), one `application/json` body; `sse`, an SSE stream as the SDK's transport
   * writes (the reference). Anything sent before the answer opens a stream either way.
   */
  sessionAnswers?: 'json' | 'sse';
  /**
   * Paths served beside MCP on the same listener (the console, metrics, health), checked before the MCP
   * path; each answers for its own authentication, with {@link HttpRouteContext.authenticate} at hand.
   * The Host allow-list applies to them as to MCP.
   */
  routes?: HttpRoute[];
  /** Diagnostics. */
  log?: (line: string) => void;
}

/** A path served beside MCP on the endpoint's listener. */
export interface HttpRoute {
  /** The path, or with `prefix` every path that starts with it. */
  path: string;
  prefix?: boolean;
  handle(req: IncomingMessage, res: ServerResponse, context: HttpRouteContext): void | Promise<void>;
}

/** What a route beside MCP gets from the endpoint. */
export interface HttpRouteContext {
  /** The request's path, without its query. */
  pathname: string;
  /** Verifies the request's `Authorization` header as the MCP endpoint does; `undefined` when the endpoint has no authentication. */
  authenticate(): Promise<Identity | AuthFailure> | undefined;
}

let defaultSessionTransport: 'native' | 'sdk' = 'native';

/**
 * Makes the SDK's `NodeStreamableHTTPServerTransport` (the reference) serve the 2025-era sessions
 * of every `serveHttp` started from now on without a `sessionTransport` of its own, instead of
 * `NodeSessionTransport`; returns whether it was on. For the A/B row of `bench/seams.bench.mjs`,
 * which turns it on in a gateway process with `--import`.
 */
export function useReferenceSessionTransport(on: boolean): boolean {
  const before = defaultSessionTransport === 'sdk';
  defaultSessionTransport = on ? 'sdk' : 'native';
  return before;
}

/**
 * A session-id generator for one replica of several behind a reverse proxy: `NAME.<random UUID>`,
 * so the proxy can send a session's later requests back to the replica that holds it (see
 * docs/deploy.md). `NAME` is 1-32 letters, digits or `-`.
 */
export function replicaSessionId(name: string): () => string {
  if (!REPLICA_ID.test(name)) throw new ToolEnvelopeError('invalid-option', `a replica id is 1-32 letters, digits or '-', got ${JSON.stringify(name)}`);
  return () => `${name}.${randomUUID()}`;
}

const REPLICA_ID = /^[A-Za-z0-9][A-Za-z0-9-]{0,31}$/;

/** A running HTTP endpoint. */
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

interface SessionEntry {
  transport: HttpSessionTransport;
  server: Server;
  identity: string;
  lastSeen: number;
  active: number;
}

/** What the endpoint makes sessions from: a fresh server per session (2025 era) or per request (2026-07-28). */
export type SessionServerFactory = (session: { identity?: Identity; era?: 'modern' | 'legacy' }) => Server;

/** A parsed POST body, or the answer already sent for one that could not be read. */
type Message = { body: unknown } | undefined;

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

/** The verified identity as the SDK's pass-through `authInfo` (no token: it never leaves this process). */
function identityAuthInfo(identity: Identity): AuthInfo {
  return { token: '', clientId: `${identity.principal.kind}:${identity.principal.id}`, scopes: [...identity.roles], extra: { [IDENTITY_KEY]: identity } };
}

type Mismatch = ReturnType<typeof paramHeaderMismatch>;

/** A modern-era `tools/call` whose `Mcp-Param-*` headers disagree with its arguments: why (else undefined; a promise only while the tool's schema is looked up). */
function paramHeadersRefused(schemaOf: (name: string) => unknown, req: IncomingMessage, body: unknown): Mismatch | Promise<Mismatch> {
  const call = body as { method?: unknown; params?: { name?: unknown; arguments?: unknown } } | null;
  if (call?.method !== 'tools/call' || typeof call.params?.name !== 'string') return undefined;
  const check = (schema: unknown): Mismatch => {
    const declared = paramHeadersOf(schema);
    return declared.length === 0 ? undefined : paramHeaderMismatch(declared, call.params!.arguments, (name) => header(req, name.toLowerCase()));
  };
  const schema = schemaOf(call.params.name);
  return schema instanceof Promise ? schema.then(check) : check(schema);
}

/** Where an identity travels to the modern era's per-request factory: the SDK's pass-through `authInfo`. */
const IDENTITY_KEY = 'tool-envelope/identity';

/**
 * Serves MCP over Streamable HTTP: each `initialize` opens a session with a fresh
 * server from `createSessionServer` (given the identity the request's credentials proved);
 * later requests are routed by `mcp-session-id`, and only for that same identity.
 * Rejects with a clear `ToolEnvelopeError` (`invalid-option`) when the port is taken.
 *
 * @example
 * ```ts
 * const endpoint = await serveHttp(({ identity }) => gateway.createServer({ identity }), { port: 3333 });
 * ```
 */
export async function serveHttp(createSessionServer: SessionServerFactory, options: ServeHttpOptions = {}): Promise<HttpEndpoint> {
  const endpoint = new HttpEndpointServer(createSessionServer, options);
  await endpoint.listen();
  return endpoint;
}

/**
 * The endpoint, one method per step of a request: {@link route} it, {@link authenticate} the caller,
 * {@link readMessage} the body, then {@link serveSession} an open 2025-era session, {@link openSession}
 * a new one, or {@link serveModern} a 2026-07-28 request.
 */
class HttpEndpointServer implements HttpEndpoint {
  url = '';
  port = 0;
  private readonly host: string;
  private readonly path: string;
  private readonly maxBody: number;
  private readonly sessionMap = new Map<string, SessionEntry>();
  private readonly modern: ReturnType<typeof createMcpHandler>;
  private readonly modernNode: ReturnType<typeof toNodeHandler>;
  private readonly http: HttpServer;
  private sweeper: NodeJS.Timeout | undefined;
  private base = '';
  private resource = '';
  private metadataPaths: string[] = [];
  private allowedHosts: string[] | undefined;

  constructor(
    private readonly createSessionServer: SessionServerFactory,
    private readonly options: ServeHttpOptions,
  ) {
    this.host = options.host ?? '127.0.0.1';
    this.path = options.path ?? '/mcp';
    this.maxBody = options.maxBodyBytes ?? 16 * 1024 * 1024;
    // The modern era (2026-07-28): one SDK handler for the endpoint, a fresh gateway server per
    // request from the same factory (registering its handlers is a dozen closures: no tool is
    // registered and no schema compiled per request). 2025-era traffic never reaches it.
    const onerror = (err: Error): void => options.log?.(`http: ${err.message}`);
    this.modern = createMcpHandler(
      ({ authInfo }) => {
        const identity = authInfo?.extra?.[IDENTITY_KEY] as Identity | undefined;
        return createSessionServer(identity ? { identity, era: 'modern' } : { era: 'modern' });
      },
      { legacy: 'reject', keepAliveMs: SSE_KEEP_ALIVE_MS, maxRequestBodySize: this.maxBody, onerror, ...(options.listen && { bus: options.listen.bus }) },
    );
    this.modernNode = toNodeHandler(this.modern, { maxRequestBodySize: this.maxBody, onerror });
    this.http = createServer((req, res) => {
      this.route(req, res).catch((err: unknown) => {
        options.log?.(`http: ${err instanceof Error ? err.message : String(err)}`);
        jsonRpcError(res, 500, -32603, 'Internal error');
      });
    });
    // These bound receiving a request (headers, body), not the answer: SSE streams stay open as long
    // as a call runs; the deadline lives in the gateway.
    this.http.headersTimeout = options.headersTimeoutMs ?? 10_000;
    this.http.requestTimeout = options.requestTimeoutMs ?? 30_000;
    this.http.keepAliveTimeout = 65_000;
  }

  get sessions(): number {
    return this.sessionMap.size;
  }

  /** Step 1: which part serves the request: OAuth metadata, a route beside MCP, or the MCP endpoint. */
  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = req.url ?? '/';
    const query = target.indexOf('?');
    const pathname = query === -1 ? target : target.slice(0, query);
    if (req.method === 'GET' && this.options.auth?.resourceMetadata && this.metadataPaths.includes(pathname)) {
      res
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' })
        .end(JSON.stringify(this.options.auth.resourceMetadata(this.resource)));
      return;
    }
    const beside = this.options.routes?.find((r) => (r.prefix ? pathname.startsWith(r.path) : pathname === r.path));
    if (beside) {
      if (!this.hostAllowed(req)) return void res.writeHead(403, { 'content-type': 'text/plain' }).end('Host not allowed\n');
      await beside.handle(req, res, { pathname, authenticate: () => this.options.auth?.authenticate(req.headers.authorization) });
      return;
    }
    if (pathname !== this.path && new URL(target, 'http://localhost').pathname !== this.path) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`Not found. The MCP endpoint is ${this.path}\n`);
      return;
    }
    // The MCP transport requires servers to validate Origin: a web page may not drive the gateway.
    const origin = req.headers.origin;
    if (!originAllowed(origin, this.options.allowedOrigins)) return jsonRpcError(res, 403, -32000, `Origin ${JSON.stringify(origin)} is not allowed`);
    if (!this.hostAllowed(req)) return jsonRpcError(res, 403, -32000, `Host ${JSON.stringify(req.headers.host ?? '')} is not allowed`);
    const identity = await this.authenticate(req, res);
    if (identity === null) return;
    await this.serveMcp(identity, req, res);
  }

  private hostAllowed(req: IncomingMessage): boolean {
    return !this.allowedHosts || this.allowedHosts.includes(String(req.headers.host ?? '').toLowerCase());
  }

  /** Step 2: the identity the request's credentials prove (`undefined` without auth), or `null` once refused. */
  private async authenticate(req: IncomingMessage, res: ServerResponse): Promise<Identity | undefined | null> {
    const auth = this.options.auth;
    if (!auth) return undefined;
    const who = await auth.authenticate(req.headers.authorization);
    if (!isAuthFailure(who)) return who;
    req.resume();
    const challenge = auth.challenge(who, auth.resourceMetadata ? `${this.base}${this.metadataPaths[0]}` : undefined);
    answerRpcError(res, { status: 401, code: -32001, message: who.description, headers: { 'www-authenticate': challenge } });
    return null;
  }

  /** The MCP endpoint: an open session's request, a new session, or a modern-era request. */
  private async serveMcp(identity: Identity | undefined, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sessionId = req.headers['mcp-session-id'];
    let existing = typeof sessionId === 'string' ? this.sessionMap.get(sessionId) : undefined;
    // Another identity's session id is no session at all, for this caller.
    if (existing && existing.identity !== identityKey(identity)) existing = undefined;
    if (req.method !== 'POST') {
      if (!existing) return jsonRpcError(res, typeof sessionId === 'string' ? 404 : 400, -32000, 'Unknown or missing session');
      return this.serveSession(existing, req, res);
    }
    const message = await this.readMessage(req, res);
    if (!message) return;
    if (existing) return this.serveSession(existing, req, res, message.body);
    if (typeof sessionId === 'string') return jsonRpcError(res, 404, -32001, 'Session not found');
    const body = message.body;
    // The SDK's own era decision (the same code createMcpHandler runs), from the headers and the parsed body.
    const route = classifyInboundRequest({
      httpMethod: 'POST',
      body,
      ...optional('protocolVersionHeader', header(req, 'mcp-protocol-version')),
      ...optional('mcpMethodHeader', header(req, 'mcp-method')),
      ...optional('mcpNameHeader', header(req, 'mcp-name')),
    });
    if (route.kind === 'reject')
      return answerRpcError(res, { status: route.httpStatus, code: route.code, message: route.message, data: route.data, id: requestIdOf(body) });
    if (route.kind === 'modern') return this.serveModern(identity, req, res, body);
    const initializing = Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
    if (!initializing) return jsonRpcError(res, 400, -32000, 'Bad Request: no valid session id');
    await this.openSession(identity, req, res, body);
  }

  /** Step 3: the POST body, bounded in size and nesting, parsed once; `undefined` once refused. */
  private async readMessage(req: IncomingMessage, res: ServerResponse): Promise<Message> {
    const raw = await readBody(req, this.maxBody);
    if (raw === 'too-large') return void jsonRpcError(res, 413, -32600, `Request body larger than ${this.maxBody} bytes`);
    const text = raw.toString('utf8');
    if (jsonNestsDeeper(text, MAX_MESSAGE_DEPTH)) {
      const scanner = new TopLevelIdScanner();
      scanner.feed(raw);
      return void answerRpcError(res, { status: 400, code: -32600, message: TOO_DEEP_MESSAGE, id: scanner.id() ?? null });
    }
    try {
      return { body: JSON.parse(text) };
    } catch {
      return void jsonRpcError(res, 400, -32700, 'Parse error');
    }
  }

  /** Step 4a: a request on an open 2025-era session. */
  private async serveSession(entry: SessionEntry, req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> {
    // Only requests keep a session alive: an open listening stream (GET) alone does not, or idle
    // sessions holding one would never expire.
    const counted = req.method === 'POST';
    if (counted) entry.active++;
    entry.lastSeen = Date.now();
    try {
      await entry.transport.handleRequest(req, res, body);
    } finally {
      if (counted) entry.active--;
      entry.lastSeen = Date.now();
    }
  }

  /** Step 4b: an `initialize` opens a 2025-era session with a fresh server for the identity. */
  private async openSession(identity: Identity | undefined, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const maxSessions = this.options.maxSessions ?? 1_000;
    if (this.sessionMap.size >= maxSessions)
      return answerRpcError(res, {
        status: 503,
        code: -32000,
        message: `Too many sessions (${maxSessions}); try again later`,
        headers: { 'retry-after': '5' },
      });
    const server = this.createSessionServer(identity ? { identity } : {});
    const newSessionId = this.options.sessionId ?? randomUUID;
    const transportOptions = {
      sessionIdGenerator: () => newSessionId(),
      onsessioninitialized: (id: string) => {
        this.sessionMap.set(id, { transport, server, identity: identityKey(identity), lastSeen: Date.now(), active: 0 });
      },
      // Bounds how long the headers of a silent call wait; the SDK's default, stated here.
      keepAliveMs: SSE_KEEP_ALIVE_MS,
      answerAs: this.options.sessionAnswers ?? 'json',
    };
    const transport: HttpSessionTransport =
      (this.options.sessionTransport ?? defaultSessionTransport) === 'sdk'
        ? new NodeStreamableHTTPServerTransport(transportOptions)
        : new NodeSessionTransport(transportOptions);
    transport.onclose = () => {
      if (transport.sessionId) this.sessionMap.delete(transport.sessionId);
    };
    await server.connect(transport);
    try {
      await transport.handleRequest(req, res, body);
    } finally {
      // An initialize the transport refused opened no session: its server must not outlive the request.
      if (!transport.sessionId || !this.sessionMap.has(transport.sessionId)) await server.close().catch(() => {});
    }
  }

  /** Step 4c: a 2026-07-28 request, after its `Mcp-Param-*` headers are checked against the tool's schema. */
  private async serveModern(identity: Identity | undefined, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const refused = this.options.toolInputSchema && paramHeadersRefused(this.options.toolInputSchema, req, body);
    const mismatch = refused instanceof Promise ? await refused : refused;
    if (mismatch) return answerRpcError(res, { status: 400, code: HEADER_MISMATCH, message: mismatch.message, data: mismatch.data, id: requestIdOf(body) });
    if (identity) (req as IncomingMessage & { auth?: AuthInfo }).auth = identityAuthInfo(identity);
    // A listen stream's resources are held on their upstreams before the SDK acknowledges it, until it ends.
    const listen = this.options.listen;
    const filter = listen && listenFilterOf(body);
    if (filter) res.once('close', await listen.opened(filter));
    await this.modernNode(req, res, body);
  }

  /** Idle sessions (no request for `sessionIdleMs`) are closed. */
  private sweep(idleMs: number): void {
    const now = Date.now();
    for (const [id, e] of this.sessionMap) {
      if (e.active > 0 || now - e.lastSeen < idleMs) continue;
      this.sessionMap.delete(id);
      void e.server.close().catch(() => {});
    }
  }

  async listen(): Promise<void> {
    const { host, options, http } = this;
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        http.off('listening', onListening);
        reject(listenError(err, host, options.port ?? 3333));
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
    const idleMs = options.sessionIdleMs ?? 30 * 60_000;
    if (idleMs > 0) this.sweeper = setInterval(() => this.sweep(idleMs), Math.min(60_000, Math.max(10, Math.floor(idleMs / 4)))).unref();
    const port = (http.address() as AddressInfo).port;
    this.port = port;
    this.allowedHosts =
      options.allowedHosts?.map((h) => h.toLowerCase()) ??
      (options.auth ? undefined : [`${host}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]);
    this.base = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    this.url = `${this.base}${this.path}`;
    this.resource = options.resourceUrl ?? this.url;
    // RFC 9728: the metadata of a resource with a path lives at the well-known path plus that path.
    this.metadataPaths = [
      '/.well-known/oauth-protected-resource' + new URL(this.resource).pathname.replace(/\/$/, ''),
      '/.well-known/oauth-protected-resource',
    ];
  }

  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.allSettled([...this.sessionMap.values()].map(({ transport, server }) => server.close().then(() => transport.close())));
    this.sessionMap.clear();
    await this.modern.close().catch(() => {});
    await new Promise<void>((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
  }
}

function listenError(err: NodeJS.ErrnoException, host: string, port: number): ToolEnvelopeError {
  if (err.code === 'EADDRINUSE') {
    return new ToolEnvelopeError(
      'invalid-option',
      `port ${port} on ${host} is already in use; stop the other process, choose another port, or pass --http 0 for a free one`,
      { cause: err },
    );
  }
  return new ToolEnvelopeError('invalid-option', `cannot listen on ${host}:${port}: ${err.message}`, { cause: err });
}
