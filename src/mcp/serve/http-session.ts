/**
 * The server side of one 2025-11-25 Streamable HTTP session on Node's own request and response: the
 * same JSON-RPC messages as the SDK's `NodeStreamableHTTPServerTransport`, without its web-stream
 * conversion and zod checks per message (a speed trick; figures in bench/README.md, docs/mcp.md "Speed").
 * A POST holding one `tools/call` answered before anything else is sent gets `application/json`, which
 * the transport spec allows; the references (`sessionAnswers: 'sse'`, `sessionTransport: 'sdk'`) run in
 * the HTTP tests too. Resumability (`Last-Event-ID`) is not carried over: the gateway never enabled it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { JSONRPCMessage, RequestId, Transport, TransportSendOptions } from '@modelcontextprotocol/server';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import { answerRpcError, jsonRpcError } from './http-guards.js';
import { isNotification, MAX_UNSENT_NOTIFICATION_BYTES, slowReaderError } from './slow-reader.js';
import { asJsonRpcMessage } from '../wire/message.js';

/**
 * What serving a session over HTTP needs of a transport: the SDK's `Transport`, plus the entry an
 * HTTP request of the session goes through (its body already parsed).
 */
export interface HttpSessionTransport extends Transport {
  readonly sessionId?: string | undefined;
  handleRequest(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void>;
}

/** Options of {@link NodeSessionTransport} (the SDK transport's own names). */
export interface NodeSessionTransportOptions {
  /** Makes the session id when the session's `initialize` arrives. */
  sessionIdGenerator: () => string;
  /** Called with the new session id once `initialize` is accepted, before it is handled. */
  onsessioninitialized?: (sessionId: string) => void;
  /** Interval of the `: keepalive` comment on open SSE streams; `0`: none. Default 15 000 ms. */
  keepAliveMs?: number;
  /**
   * `json` (default): a lone request answered with nothing sent before gets its answer as
   * `application/json`; `sse`: every request is answered on an SSE stream, as the SDK transport
   * does (the reference of that trick; see the file's comment).
   */
  answerAs?: 'json' | 'sse';
}

/** The SDK's limit on the messages of one POST. */
const MAX_BATCH_SIZE = 100;
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' };
const RESOLVED: Promise<void> = Promise.resolve();

/** One POST's answer: its response, the requests of the POST not yet answered, and whether its SSE stream is open. */
interface Answer {
  res: ServerResponse;
  open: number;
  streaming: boolean;
}

const isRequest = (m: JSONRPCMessage): boolean => 'method' in m && 'id' in m;
const isResponse = (m: JSONRPCMessage): m is JSONRPCMessage & { id: RequestId } => !('method' in m) && ('result' in m || 'error' in m);
const isToolCall = (m: JSONRPCMessage): boolean => 'method' in m && m.method === 'tools/call' && 'id' in m;
const isInitialize = (m: JSONRPCMessage): boolean => 'method' in m && m.method === 'initialize' && 'id' in m;

function sseEvent(message: JSONRPCMessage): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

/** Writes to a stream still open (a client that went away is not written to). */
function write(res: ServerResponse, text: string): void {
  if (!res.writableEnded && !res.destroyed) res.write(text);
}

/** Whether the client is so far behind on this stream that notifications to it are dropped (serve/slow-reader.ts). */
function behind(res: ServerResponse): boolean {
  return res.writableLength > MAX_UNSENT_NOTIFICATION_BYTES;
}

/**
 * A Streamable HTTP session transport on Node's `http` objects (see the file's comment; the
 * reference is the SDK's `NodeStreamableHTTPServerTransport`).
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
  /** Notifications dropped for a client that did not read them (serve/slow-reader.ts). */
  droppedNotifications = 0;

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
    answerRpcError(res, { status: 405, code: -32000, message: 'Method not allowed.', headers: { allow: 'GET, POST, DELETE' } });
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
    const answer: Answer = { res, open: 0, streaming: false };
    for (const m of messages) {
      if (!isRequest(m)) continue;
      answer.open++;
      this.answers.set((m as { id: RequestId }).id, answer);
    }
    // The status line and headers wait for the first message (as the SDK's do): it decides between
    // one JSON answer and an SSE stream.
    // JSON only for a lone `tools/call` (the per-call path): every other answer keeps the SDK
    // transport's SSE stream, which the conformance suite's stream checks exercise.
    if (answer.open > 1 || this.options.answerAs === 'sse' || !messages.some(isToolCall)) this.stream(answer);
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

  /** Opens a POST's SSE stream (its status line and headers go out with the first write). */
  private stream(answer: Answer): void {
    if (answer.streaming) return;
    answer.streaming = true;
    if (!answer.res.headersSent) answer.res.writeHead(200, this.sseHeaders());
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

  /** The headers of a JSON answer of `length` bytes (with a length, not chunked: one write, no end chunk). */
  private jsonHeaders(length: number): Record<string, string | number> {
    const id = this.sessionId;
    return id === undefined
      ? { 'content-type': 'application/json', 'content-length': length }
      : { 'content-type': 'application/json', 'content-length': length, 'mcp-session-id': id };
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
      const res = answer.res;
      if (--answer.open > 0) write(res, sseEvent(message));
      else if (res.writableEnded || res.destroyed) return RESOLVED;
      // Nothing was sent on the request before its answer: the answer alone, as JSON.
      else if (!answer.streaming) {
        const body = JSON.stringify(message);
        res.writeHead(200, this.jsonHeaders(Buffer.byteLength(body))).end(body);
      }
      // The last answer ends the stream in the same write: one segment, one wake-up of the client.
      else res.end(sseEvent(message));
      return RESOLVED;
    }
    const related = options?.relatedRequestId;
    if (related !== undefined) {
      const answer = this.answers.get(related);
      if (!answer) return Promise.reject(new Error(`No connection established for request ID: ${String(related)}`));
      this.stream(answer);
      this.deliver(answer.res, message);
      return RESOLVED;
    }
    // Unrelated to any request: the standalone GET stream, when the client opened one.
    if (this.standalone) this.deliver(this.standalone, message);
    return RESOLVED;
  }

  /** Notifications to a client that does not read are dropped past the bound (counted in {@link droppedNotifications}). */
  private deliver(res: ServerResponse, message: JSONRPCMessage): void {
    // Checked before the message is serialised: a dropped one costs nothing.
    if (isNotification(message) && behind(res)) {
      if (this.droppedNotifications++ === 0) this.onerror?.(slowReaderError());
    } else write(res, sseEvent(message));
  }

  private ping(): void {
    const seen = new Set<ServerResponse>();
    for (const answer of this.answers.values()) {
      if (seen.has(answer.res)) continue;
      seen.add(answer.res);
      // A call still running after the interval is answered on a stream: the comment opens it.
      this.stream(answer);
      if (!behind(answer.res)) write(answer.res, ': keepalive\n\n');
    }
    if (this.standalone && !behind(this.standalone)) write(this.standalone, ': keepalive\n\n');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    for (const answer of this.answers.values()) this.stream(answer);
    const open = new Set<ServerResponse>([...this.answers.values()].map((a) => a.res));
    if (this.standalone) open.add(this.standalone);
    this.answers.clear();
    this.standalone = undefined;
    for (const res of open) res.end();
    this.onclose?.();
  }
}
