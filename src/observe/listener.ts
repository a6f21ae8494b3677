/**
 * Where the metrics are served: `/metrics` as a route of the MCP listener (its authentication:
 * open on loopback, a valid token otherwise), or a listener of its own (`--metrics HOST:PORT`,
 * also for a stdio gateway) serving `/metrics`, `/healthz` and `/readyz`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Authenticator } from '../mcp/serve/auth.js';
import type { HttpRoute, HttpRouteContext } from '../mcp/serve/http.js';

/** What the route serves: the exposition and its content type. */
export interface Exposition {
  exposition(): Promise<string>;
  readonly contentType: string;
}

/**
 * The `/metrics` route: with authentication on the listener, only a request whose credentials it
 * accepts is answered (401 otherwise).
 */
export function metricsRoute(metrics: Exposition): HttpRoute {
  return {
    path: '/metrics',
    async handle(req: IncomingMessage, res: ServerResponse, context: HttpRouteContext) {
      req.resume();
      if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
      const who = await context.authenticate();
      if (who !== undefined && 'error' in who)
        return void res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'text/plain' }).end('unauthorized\n');
      const text = await metrics.exposition();
      res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text);
    },
  };
}

/** A listener of its own for `routes`. */
export interface RoutesListener {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Serves `routes` (metrics, health) on HOST:PORT, with `auth` when given. */
export async function listenRoutes(routes: HttpRoute[], options: { host: string; port: number; auth?: Authenticator | undefined }): Promise<RoutesListener> {
  const server = createServer((req, res) => {
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const pathname = q === -1 ? target : target.slice(0, q);
    const route = routes.find((r) => (r.prefix ? pathname.startsWith(r.path) : pathname === r.path));
    if (!route) {
      req.resume();
      return void res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found\n');
    }
    const context: HttpRouteContext = { pathname, authenticate: () => options.auth?.authenticate(req.headers.authorization) };
    Promise.resolve(route.handle(req, res, context)).catch(() => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end();
    });
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
