/**
 * The request handlers of one gateway session: the SDK v2 `Server` of a client session (2025-11-25)
 * or of one modern-era (2026-07-28) request gets its handlers here, each routed to the gateway.
 * Registering is a dozen closures in a map (no schema is compiled, no tool registered), which is
 * what keeps the per-request server of the stateless modern era cheap.
 */
import type { Request, Result, Server, ServerCapabilities, ServerContext } from '@modelcontextprotocol/server';
import { ProtocolErrorCode } from '@modelcontextprotocol/server';
import { forwardByUri, type ListHost, listMerged } from './gateway-lists.js';
import { rpcError } from './meta.js';
import type { Upstream } from './upstream.js';

/**
 * What the session handlers need of the gateway (implemented by `Gateway`).
 *
 * @example
 * ```ts
 * registerSessionHandlers(server, gateway, gateway.getCapabilities());
 * ```
 */
export interface SessionHost extends ListHost {
  readonly upstreams: Upstream[];
  /** Marks a request as coming from `server`, so what its upstream asks goes back there. */
  tag(ctx: ServerContext, server: Server): void;
  subscribe(server: Server, uri: string, on: boolean): void;
  listTools(ctx: ServerContext): Promise<Result>;
  callTool(req: { method: 'tools/call'; params: Record<string, unknown> & { name: string } }, ctx: ServerContext, server: Server): Promise<Result>;
  forward(up: Upstream, req: Request, ctx: ServerContext): Promise<Result>;
  routeByPrefix(name: string): [Upstream, string];
}

type Handler = (req: Request & { params?: Record<string, unknown> }, ctx: ServerContext) => Promise<Result>;

/** A JSON-RPC request as the SDK hands it to a handler, without its envelope (`jsonrpc`, `id`). */
function plain(req: Request & { params?: Record<string, unknown> }): Request {
  return req.params === undefined ? { method: req.method } : { method: req.method, params: req.params };
}

/**
 * Registers the gateway's handlers on a fresh SDK `Server`: tools always; resources, prompts,
 * completions and logging when an upstream has them; everything else forwarded to a single upstream.
 *
 * @example
 * ```ts
 * const server = new Server({ name: 'gw', version: '1' }, { capabilities: gateway.getCapabilities() });
 * registerSessionHandlers(server, gateway, gateway.getCapabilities());
 * ```
 */
export function registerSessionHandlers(server: Server, host: SessionHost, caps: ServerCapabilities): void {
  const on = (method: string, handler: Handler): void => {
    // Each request is tagged with its session, so that what an upstream asks the client while
    // serving it goes back to that session (a WeakMap entry per request: no async context tracking).
    (server.setRequestHandler as (m: string, h: Handler) => void)(method, (req, ctx) => {
      host.tag(ctx, server);
      return handler(req, ctx);
    });
  };
  const uriOf = (req: Request): string => String((req.params as { uri?: unknown } | undefined)?.uri ?? '');
  on('tools/list', (_req, ctx) => host.listTools(ctx));
  on('tools/call', (req, ctx) => host.callTool(plain(req) as Parameters<SessionHost['callTool']>[0], ctx, server));
  if (caps.resources) {
    on('resources/list', (req, ctx) => listMerged(host, plain(req), ctx, 'resources'));
    on('resources/templates/list', (req, ctx) => listMerged(host, plain(req), ctx, 'resourceTemplates'));
    on('resources/read', (req, ctx) => forwardByUri(host, plain(req), ctx, uriOf(req)));
    on('resources/subscribe', (req, ctx) => {
      host.subscribe(server, uriOf(req), true);
      return forwardByUri(host, plain(req), ctx, uriOf(req));
    });
    on('resources/unsubscribe', (req, ctx) => {
      host.subscribe(server, uriOf(req), false);
      return forwardByUri(host, plain(req), ctx, uriOf(req));
    });
  }
  if (caps.prompts) {
    on('prompts/list', (req, ctx) => listMerged(host, plain(req), ctx, 'prompts'));
    on('prompts/get', (req, ctx) => {
      const [up, name] = host.routeByPrefix(String(req.params?.name ?? ''));
      return host.forward(up, { method: req.method, params: { ...req.params, name } }, ctx);
    });
  }
  if (caps.completions) {
    on('completion/complete', (req, ctx) => {
      const ref = (req.params?.ref ?? {}) as { type?: string; name?: string; uri?: string };
      if (ref.type === 'ref/prompt') {
        const [up, name] = host.routeByPrefix(String(ref.name ?? ''));
        return host.forward(up, { method: req.method, params: { ...req.params, ref: { ...ref, name } } }, ctx);
      }
      return forwardByUri(host, plain(req), ctx, String(ref.uri ?? ''));
    });
  }
  if (caps.logging) {
    on('logging/setLevel', async (req, ctx) => {
      const targets = host.upstreams.filter((u) => u.capabilities?.logging);
      const answers = await Promise.all(targets.map((u) => host.forward(u, plain(req), ctx)));
      return answers[0] ?? {};
    });
  }
  // Everything else (tasks, pings with params, methods from newer protocol versions) goes to the upstream.
  server.fallbackRequestHandler = async (req, ctx) => {
    host.tag(ctx, server);
    if (host.upstreams.length !== 1) throw rpcError(ProtocolErrorCode.MethodNotFound, 'Method not found');
    return host.forward(host.upstreams[0]!, plain(req as Request & { params?: Record<string, unknown> }), ctx);
  };
  server.fallbackNotificationHandler = async (n) => {
    for (const up of host.upstreams) await up.notify(n as Parameters<Upstream['notify']>[0]);
  };
}
