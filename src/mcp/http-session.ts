/**
 * The server side of one 2025-11-25 Streamable HTTP session, on Node's own `IncomingMessage` and
 * `ServerResponse`: an SDK `Transport` (the interface `Server.connect` takes) that answers each POST
 * with the same SSE stream the SDK's `NodeStreamableHTTPServerTransport` writes (status, headers,
 * one `event: message` per JSON-RPC message related to the request, the end of the stream once every
 * request of the POST is answered), the standalone GET stream and DELETE.
 *
 * A speed trick (bench/README.md): it pays for `seams: hand-written MCP pieces vs their plain
 * references (A/B)` / `NodeSessionTransport: native session transport, gateway CPU per call, 32 in
 * flight` (one run, 8 rounds a side, load 9-13 on 2 cores: 906 vs 1,428 µs, 0.63x; median latency
 * 0.71x), and so for the gateway's row in `gateway (peer proxies, http)`. The SDK's Node transport converts every request into a web `Request` and every answer into a web
 * `Response` over a `ReadableStream` (through `@hono/node-server`), and checks each message with the
 * zod union `JSONRPCMessageSchema` and zod guards: about a quarter of the gateway's main-thread CPU
 * per call (perf, task-clock samples; see docs/mcp.md "Speed"). Here a message is checked once with
 * plain property tests (`asJsonRpcMessage`, as on stdio) and written straight to the response; the
 * `Server`'s own per-method validation runs as before. The reference is the SDK's transport, chosen
 * with `serveHttp({ sessionTransport: 'sdk' })` (or `useReferenceSessionTransport(true)`); the HTTP tests run both.
 *
 * Not carried over: resumability (an event store, `Last-Event-ID`), which the gateway never enabled.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { JSONRPCMessage, RequestId, Transport, TransportSendOptions } from '@modelcontextprotocol/server';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import { jsonRpcError } from './http-guards.js';
import { asJsonRpcMessage } from './stdio.js';

/**
 * What serving a session over HTTP needs of a transport: the SDK's `Transport`, plus the entry an
 * HTTP request of the session goes through (its body already parsed).
 *
 * @example
 * ```ts
 * const t: HttpSessionTransport = new NodeSessionTransport({ sessionIdGenerator: randomUUID });
 * await server.connect(t);
 * await t.handleRequest(req, res, body);
 * ```
 */
export interface HttpSessionTransport extends Transport {
  readonly sessionId?: string | undefined;
  handleRequest(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void>;
}

/**
 * Options of {@link NodeSessionTransport} (the SDK transport's own names).
 *
 * @example
 * ```ts
 * const o: NodeSessionTransportOptions = { sessionIdGenerator: randomUUID, keepAliveMs: 15_000 };
 * ```
 */
export interface NodeSessionTransportOptions {
  /** Makes the session id when the session's `initialize` arrives. */
  sessionIdGenerator: () => string;
  /** Called with the new session id once `initialize` is accepted, before it is handled. */
  onsessioninitialized?: (sessionId: string) => void;
  /** Interval of the `: keepalive` comment on open SSE streams; `0`: none. Default 15 000 ms. */
  keepAliveMs?: number;
}

/** The SDK's limit on the messages of one POST. */
const MAX_BATCH_SIZE = 100;
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' };
const RESOLVED: Promise<void> = Promise.resolve();

/** One POST's answer stream: its response, and the requests of the POST not yet answered. */
interface Answer {
  res: ServerResponse;
  open: number;
}

const isRequest = (m: JSONRPCMessage): boolean => 'method' in m && 'id' in m;
const isResponse = (m: JSONRPCMessage): m is JSONRPCMessage & { id: RequestId } => !('method' in m) && ('result' in m || 'error' in m);
const isInitialize = (m: JSONRPCMessage): boolean => 'method' in m && m.method === 'initialize' && 'id' in m;

function sseEvent(message: JSONRPCMessage): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

/** Writes to a stream still open (a client that went away is not written to). */
function write(res: ServerResponse, text: string): void {
  if (!res.writableEnded && !res.destroyed) res.write(text);
}

/**
 * A Streamable HTTP session transport on Node's `http` objects (see the file's comment; the
 * reference is the SDK's `NodeStreamableHTTPServerTransport`).
 *
 * @example
 * ```ts
 * const transport = new NodeSessionTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (id) => sessions.set(id, transport) });
 * await server.connect(transport);
 * await transport.handleRequest(req, res, JSON.parse(body));
 * ```
 */
export class NodeSessionTransport implements HttpSessionTransport {
  sessionId: string | undefined;
  onmessage?: Transport['onmessage'];
  onclose?: Transport['onclose'];
  onerror?: Transport['onerror'];
  private readonly options: NodeSessionTransportOptions;
  private readonly answers = new Map<RequestId, Answer>();
  private standalone: ServerResponse | undefined;
  private supported: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
  private initialized = false;
  private closed = false;
  private keepAlive: ReturnType<typeof setInterval> | undefined;

  constructor(options: NodeSessionTransportOptions) {
    this.options = options;
  }

  async start(): Promise<void> {
    const every = this.options.keepAliveMs ?? 15_000;
    // One timer per session for every open stream, not one per call.
    if (every > 0) this.keepAlive = setInterval(() => this.ping(), every).unref();
  }

  /** The protocol versions a request's `MCP-Protocol-Version` header may name (set by the `Server`). */
  setSupportedProtocolVersions(versions: string[]): void {
    this.supported = versions;
  }

  async handleRequest(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> {
    if (this.closed) return jsonRpcError(res, 404, -32001, 'Session not found');
    if (req.method === 'POST') return this.post(req, res, body);
    if (req.method === 'GET') return this.get(req, res);
    if (req.method === 'DELETE') {
      if (!this.checkSession(req, res)) return;
      res.writeHead(200).end();
      await this.close();
      return;
    }
    jsonRpcError(res, 405, -32000, 'Method not allowed.', { allow: 'GET, POST, DELETE' });
  }

  /** Resolves once the answer is complete (or its client went away), as the SDK transport's does. */
  private post(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> | void {
    const accept = req.headers.accept;
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
      return jsonRpcError(res, 406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
    }
    const type = req.headers['content-type'];
    if (!type || !/^application\/json\s*(;|$)/i.test(type))
      return jsonRpcError(res, 415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    if (Array.isArray(body) && body.length > MAX_BATCH_SIZE) {
      return jsonRpcError(res, 400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`);
    }
    let messages: JSONRPCMessage[];
    try {
      messages = Array.isArray(body) ? body.map(asJsonRpcMessage) : [asJsonRpcMessage(body)];
    } catch (err) {
      this.onerror?.(err as Error);
      return jsonRpcError(res, 400, -32700, 'Parse error: Invalid JSON-RPC message');
    }
    const initializing = messages.some(isInitialize);
    if (initializing) {
      if (this.initialized) return jsonRpcError(res, 400, -32600, 'Invalid Request: Server already initialized');
      if (messages.length > 1) return jsonRpcError(res, 400, -32600, 'Invalid Request: Only one initialization request is allowed');
      this.sessionId = this.options.sessionIdGenerator();
      this.initialized = true;
      this.options.onsessioninitialized?.(this.sessionId);
    } else if (!this.checkSession(req, res)) return;
    if (!messages.some(isRequest)) {
      for (const m of messages) this.onmessage?.(m);
      res.writeHead(202).end();
      return;
    }
    const answer: Answer = { res, open: 0 };
    for (const m of messages) {
      if (!isRequest(m)) continue;
      answer.open++;
      this.answers.set((m as { id: RequestId }).id, answer);
    }
    // Written with the first event: the status line and headers wait for the answer (as the SDK's do).
    res.writeHead(200, this.sseHeaders());
    const done = new Promise<void>((resolve) => {
      res.once('close', () => {
        resolve();
        // The client went away: later messages for these requests have nowhere to go.
        if (answer.open === 0) return;
        answer.open = 0;
        for (const [id, a] of this.answers) if (a === answer) this.answers.delete(id);
      });
    });
    for (const m of messages) this.onmessage?.(m);
    return done;
  }

  /**
   * The headers of an SSE answer, as one literal: `{ ...SSE_HEADERS, 'mcp-session-id': id }` (a
   * spread then a new key) is V8's slow path, about 1.5 µs, and every POST's answer has them.
   */
  private sseHeaders(): Record<string, string> {
    const id = this.sessionId;
    if (id === undefined) return SSE_HEADERS;
    return {
      'content-type': SSE_HEADERS['content-type'],
      'cache-control': SSE_HEADERS['cache-control'],
      connection: SSE_HEADERS.connection,
      'x-accel-buffering': SSE_HEADERS['x-accel-buffering'],
      'mcp-session-id': id,
    };
  }

  private get(req: IncomingMessage, res: ServerResponse): Promise<void> | void {
    if (!req.headers.accept?.includes('text/event-stream')) return jsonRpcError(res, 406, -32000, 'Not Acceptable: Client must accept text/event-stream');
    if (!this.checkSession(req, res)) return;
    if (this.standalone) return jsonRpcError(res, 409, -32000, 'Conflict: Only one SSE stream is allowed per session');
    this.standalone = res;
    res.writeHead(200, this.sseHeaders());
    return new Promise<void>((resolve) => {
      res.once('close', () => {
        if (this.standalone === res) this.standalone = undefined;
        resolve();
      });
    });
  }

  /** The SDK's session and protocol-version checks for every request but `initialize`. */
  private checkSession(req: IncomingMessage, res: ServerResponse): boolean {
    if (!this.initialized) {
      jsonRpcError(res, 400, -32000, 'Bad Request: Server not initialized');
      return false;
    }
    const id = req.headers['mcp-session-id'];
    if (!id) {
      jsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      return false;
    }
    if (id !== this.sessionId) {
      jsonRpcError(res, 404, -32001, 'Session not found');
      return false;
    }
    const version = req.headers['mcp-protocol-version'];
    if (typeof version === 'string' && !this.supported.includes(version)) {
      jsonRpcError(res, 400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${this.supported.join(', ')})`);
      return false;
    }
    return true;
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (isResponse(message)) {
      const answer = this.answers.get(message.id);
      if (!answer) {
        // Its client went away before the answer (the SDK reports the same and drops it).
        this.onerror?.(new Error(`Response for request ID ${String(message.id)} is undeliverable: its stream is closed`));
        return RESOLVED;
      }
      this.answers.delete(message.id);
      // The last answer ends the stream in the same write (status line and headers too, when
      // nothing was sent before): one segment, one wake-up of the client.
      if (--answer.open > 0) write(answer.res, sseEvent(message));
      else if (!answer.res.writableEnded && !answer.res.destroyed) answer.res.end(sseEvent(message));
      return RESOLVED;
    }
    const related = options?.relatedRequestId;
    if (related !== undefined) {
      const answer = this.answers.get(related);
      if (!answer) return Promise.reject(new Error(`No connection established for request ID: ${String(related)}`));
      write(answer.res, sseEvent(message));
      return RESOLVED;
    }
    // Unrelated to any request: the standalone GET stream, when the client opened one.
    if (this.standalone) write(this.standalone, sseEvent(message));
    return RESOLVED;
  }

  private ping(): void {
    const seen = new Set<ServerResponse>();
    for (const { res } of this.answers.values()) {
      if (seen.has(res)) continue;
      seen.add(res);
      write(res, ': keepalive\n\n');
    }
    if (this.standalone) write(this.standalone, ': keepalive\n\n');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    const open = new Set<ServerResponse>([...this.answers.values()].map((a) => a.res));
    if (this.standalone) open.add(this.standalone);
    this.answers.clear();
    this.standalone = undefined;
    for (const res of open) res.end();
    this.onclose?.();
  }
}
