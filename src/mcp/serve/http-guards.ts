/**
 * The checks of the gateway's HTTP endpoint that run before any MCP server exists: Origin and
 * Host allow-lists, the bounded body read, JSON-RPC error answers, and the identity key that binds
 * a session to the identity that opened it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Identity } from '../../governance/identity.js';

/** A JSON-RPC error answer: its HTTP status, the error, and what else goes with it. */
export interface RpcErrorAnswer {
  status: number;
  code: number;
  message: string;
  headers?: Record<string, string>;
  data?: unknown;
  /** The id of the request it answers; `null` when none is named. */
  id?: string | number | null;
}

/** Answers a request with a JSON-RPC error and the given HTTP status (`id: null`). */
export function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  answerRpcError(res, { status, code, message });
}

/** Answers a request with a JSON-RPC error, with headers, data or the id of the request it answers. */
export function answerRpcError(res: ServerResponse, a: RpcErrorAnswer): void {
  if (res.headersSent) return;
  res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
  const error = { code: a.code, message: a.message, ...(a.data !== undefined ? { data: a.data } : {}) };
  res.end(JSON.stringify({ jsonrpc: '2.0', error, id: a.id ?? null }));
}

/**
 * The id of a parsed JSON-RPC request, for an error that answers it; `null` when there is none to name
 * (a batch, a notification, not an object).
 */
export function requestIdOf(body: unknown): string | number | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const id = (body as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** Reads a request body up to `limit` bytes: the bytes, or `'too-large'` (the rest is drained). */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large'> {
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
 * Whether a browser `Origin` may call the endpoint: absent (not a browser) always; else one of
 * `allowed` (`*`: any), or by default a loopback origin.
 */
export function originAllowed(origin: string | undefined, allowed: string[] | undefined): boolean {
  if (origin === undefined) return true;
  if (allowed === undefined) return LOOPBACK_ORIGIN.test(origin);
  return allowed.includes('*') || allowed.includes(origin);
}

/** True for an interface address that only this machine can reach (`127.0.0.0/8`, `::1`, `localhost`). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** One identity as a comparable key: a session answers only to the identity that opened it. */
export function identityKey(identity: Identity | undefined): string {
  if (!identity) return '';
  const p = identity.principal;
  return `${p.kind}\u0000${p.id}\u0000${p.tenant_id ?? ''}`;
}

/** The value of one request header as a string (several values joined), or `undefined`. */
export function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return v === undefined ? undefined : Array.isArray(v) ? v.join(', ') : v;
}
