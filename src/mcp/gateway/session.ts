import type { Request, Result, Server, ServerCapabilities, ServerContext } from '@modelcontextprotocol/server';
import { ProtocolErrorCode } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { forwardByUri, type ListHost, listMerged } from './lists.js';
import { TASK_METHODS } from '../tasks/calls.js';
import type { ResourceSubscriptions } from './subscriptions.js';
import { rpcError } from '../wire/rpc-errors.js';
import type { Upstream } from '../upstream/upstream.js';
import { SessionServer } from './session-server.js';
import type { Callers } from './callers.js';
import type { ToolCalls } from './tool-calls.js';
import { isLogLevel, setSessionLogLevel } from './log-levels.js';
import { withClientEra } from '../upstream/client-era.js';

/** What the session handlers need of the gateway (implemented by `Gateway`). */
export interface SessionHost extends ListHost {
  readonly upstreams: Upstream[];
  /** Marks each request as coming from its session, so what its upstream asks goes back there. */
  readonly callers: Callers;
  /** The `tools/call` path. */
  readonly calls: ToolCalls;
  readonly subscriptions: ResourceSubscriptions;
  listTools(ctx: ServerContext): Promise<Result>;
  forward(up: Upstream, req: Request, ctx: ServerContext): Promise<Result>;
  routeByPrefix(name: string): [Upstream, string];
  /** `tasks/get`, `tasks/update`, `tasks/cancel` through the tasks module (refused without one). */
  taskRequest(method: string, params: Record<string, unknown>, ctx: ServerContext, server: Server): Promise<Result>;
}

type Handler = (req: Request & { params?: Record<string, unknown> }, ctx: ServerContext) => Promise<Result>;

/** A JSON-RPC request as the SDK hands it to a handler, without its envelope (`jsonrpc`, `id`). */
function plain(req: Request & { params?: Record<string, unknown> }): Request {
  return req.params === undefined ? { method: req.method } : { method: req.method, params: req.params };
}

/**
 * Registers the gateway's handlers on a fresh SDK `Server`: tools always; resources, prompts,
 * completions and logging when an upstream has them; on a 2025-era session, everything else
 * forwarded to a single upstream. A modern-era (2026-07-28) server gets no fallback: a method the
 * gateway does not serve is refused by the SDK itself, as the direct server does (`-32601`, HTTP 404).
 */
export function registerSessionHandlers(server: Server, host: SessionHost, caps: ServerCapabilities, era: 'modern' | 'legacy' = 'legacy'): void {
  // What a 2025-era session asks of an upstream that serves both eras goes over a 2025 session (upstream/client-era.ts).
  const inEra = <T>(fn: () => T): T => (era === 'legacy' ? withClientEra('legacy', fn) : fn());
  const on = (method: string, handler: Handler): void => {
    // Each request is tagged with its session, so that what an upstream asks the client while
    // serving it goes back to that session (a WeakMap entry per request: no async context tracking).
    (server.setRequestHandler as (m: string, h: Handler) => void)(method, (req, ctx) => {
      host.callers.tag(ctx, server);
      return inEra(() => handler(req, ctx));
    });
  };
  const session: Registering = { server, host, on, inEra };
  on('tools/list', (_req, ctx) => host.listTools(ctx));
  if (server instanceof SessionServer) {
    // Plain 2025-era calls skip the SDK's zod re-validation of the request and of the gateway's own result (gateway/session-server.ts).
    server.serveToolCalls(host.calls.handlerFor(server), era);
  } else on('tools/call', (req, ctx) => host.calls.callTool(plain(req) as Parameters<ToolCalls['callTool']>[0], ctx, server));
  if (caps.resources) resourceHandlers(session);
  if (caps.prompts) promptHandlers(session);
  // Also when no upstream declares completions: one that answers them anyway is relayed (SessionServer lets the handler be).
  if (caps.completions || (server instanceof SessionServer && (caps.prompts || caps.resources))) completionHandler(session);
  if (caps.logging) loggingHandler(session);
  taskHandlers(session);
  server.fallbackNotificationHandler = async (n) => {
    for (const up of host.upstreams) await up.notify(n as Parameters<Upstream['notify']>[0]);
  };
  // The SDK answers a method without a handler inside its dispatch, which the modern era's HTTP
  // transport maps to 404: forwarded, the upstream's -32601 would come back as a handler's, on 200.
  if (era === 'modern') return;
  fallbackHandler(session);
}

/** What the registering steps share: the session's server, the gateway, and `on` (a handler tagged with its session, in its era). */
interface Registering {
  server: Server;
  host: SessionHost;
  on(method: string, handler: Handler): void;
  inEra<T>(fn: () => T): T;
}

const uriOf = (req: Request): string => String((req.params as { uri?: unknown } | undefined)?.uri ?? '');

function resourceHandlers({ server, host, on }: Registering): void {
  on('resources/list', (req, ctx) => listMerged(host, plain(req), ctx, 'resources'));
  on('resources/templates/list', (req, ctx) => listMerged(host, plain(req), ctx, 'resourceTemplates'));
  on('resources/read', (req, ctx) => forwardByUri(host, plain(req), ctx, uriOf(req)));
  // Held once per URI on its upstream, in the upstream's era (gateway/subscriptions.ts).
  on('resources/subscribe', (req, ctx) => host.subscriptions.subscribe(server, uriOf(req), ctx));
  on('resources/unsubscribe', (req) => host.subscriptions.unsubscribe(server, uriOf(req)));
}

function promptHandlers({ host, on }: Registering): void {
  on('prompts/list', (req, ctx) => listMerged(host, plain(req), ctx, 'prompts'));
  on('prompts/get', (req, ctx) => {
    const [up, name] = host.routeByPrefix(String(req.params?.name ?? ''));
    return host.forward(up, { method: req.method, params: { ...req.params, name } }, ctx);
  });
}

function completionHandler({ host, on }: Registering): void {
  on('completion/complete', (req, ctx) => {
    const ref = (req.params?.ref ?? {}) as { type?: string; name?: string; uri?: string };
    if (ref.type === 'ref/prompt') {
      const [up, name] = host.routeByPrefix(String(ref.name ?? ''));
      return host.forward(up, { method: req.method, params: { ...req.params, ref: { ...ref, name } } }, ctx);
    }
    return forwardByUri(host, plain(req), ctx, String(ref.uri ?? ''));
  });
}

function loggingHandler({ server, host, on }: Registering): void {
  on('logging/setLevel', async (req, ctx) => {
    if (!isLogLevel(req.params?.level)) throw rpcError(ProtocolErrorCode.InvalidParams, `Unknown logging level ${JSON.stringify(req.params?.level)}`);
    // Told to each upstream this session reaches in the 2025 era, which applies it as it does
    // directly; a 2026-07-28 upstream has no logging/setLevel, so the gateway applies it to what it relays (gateway/log-levels.ts).
    const logging = host.upstreams.filter((u) => u.capabilities?.logging);
    const targets = logging.filter((u) => u.era !== 'modern' || u.legacySessionForClients);
    if (targets.length < logging.length) setSessionLogLevel(server, req.params?.level);
    await Promise.all(targets.map((u) => host.forward(u, plain(req), ctx)));
    return {};
  });
}

/** Tasks only through the module, with caller-bound handles: never forwarded to an upstream. */
function taskHandlers({ server, host }: Registering): void {
  const taskParams = z.looseObject({ taskId: z.unknown() });
  for (const method of TASK_METHODS) {
    (server.setRequestHandler as (m: string, s: { params: typeof taskParams }, h: (p: Record<string, unknown>, ctx: ServerContext) => Promise<Result>) => void)(
      method,
      { params: taskParams },
      (p, ctx) => {
        host.callers.tag(ctx, server);
        return host.taskRequest(method, p, ctx, server);
      },
    );
  }
}

/** Everything else on a 2025-era session (pings with params, methods from newer protocol versions) goes to the upstream. */
function fallbackHandler({ server, host, inEra }: Registering): void {
  server.fallbackRequestHandler = async (req, ctx) => {
    host.callers.tag(ctx, server);
    if (req.method.startsWith('tasks/')) throw rpcError(ProtocolErrorCode.MethodNotFound, `${req.method}: tasks go only through the gateway's task handles`);
    if (host.upstreams.length !== 1) throw rpcError(ProtocolErrorCode.MethodNotFound, 'Method not found');
    return inEra(() => host.forward(host.upstreams[0]!, plain(req as Request & { params?: Record<string, unknown> }), ctx));
  };
}
