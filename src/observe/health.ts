/**
 * `/healthz` (the process serves) and `/readyz` (every upstream connected and the store writable,
 * by a write probe: a read-only store still answers reads), for a load balancer or a Kubernetes
 * probe. Unauthenticated, so they say nothing but the verdict and a generic reason: no tool,
 * upstream or version names.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpRoute } from '../mcp/serve/http.js';
import type { Upstream } from '../mcp/upstream/upstream.js';

/** What readiness looks at. */
export interface ReadinessSources {
  upstreams: () => readonly Pick<Upstream, 'state'>[];
  /** Resolves when the store can take a write; rejects (or hangs past the limit) when it cannot. Absent: no store. */
  storeWritable?: () => Promise<unknown>;
  /** True while the audit log's last commit failed. */
  auditFailing?: () => boolean;
}

/** How long the store may take to answer a readiness probe (a write probe; a lost PostgreSQL server may not answer at all). */
const STORE_PROBE_MS = 2_000;

/** Why the gateway is not ready, or `undefined` when it is. */
export async function notReadyReason(sources: ReadinessSources): Promise<string | undefined> {
  const upstreams = sources.upstreams();
  const down = upstreams.filter((u) => u.state !== 'ready').length;
  if (down > 0) return `${down} of ${upstreams.length} upstreams not connected`;
  if (sources.auditFailing?.()) return 'the audit log cannot be written';
  if (sources.storeWritable) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => {
      timer = setTimeout(() => r('late'), STORE_PROBE_MS);
    });
    try {
      const answer = await Promise.race([sources.storeWritable().then(() => 'ok' as const), late]);
      if (answer === 'late') return 'the store does not answer';
    } catch {
      // The store's error stays in the process: the probe is unauthenticated.
      return 'the store cannot be written';
    } finally {
      clearTimeout(timer);
    }
  }
  return undefined;
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }).end(`${text}\n`);
}

/** The two routes, for `serveHttp`'s `routes` or a listener of their own. */
export function healthRoutes(sources: ReadinessSources): HttpRoute[] {
  return [
    { path: '/healthz', handle: (_req: IncomingMessage, res: ServerResponse) => plain(res, 200, 'ok') },
    {
      path: '/readyz',
      async handle(_req: IncomingMessage, res: ServerResponse) {
        const reason = await notReadyReason(sources);
        plain(res, reason === undefined ? 200 : 503, reason === undefined ? 'ready' : `not ready: ${reason}`);
      },
    },
  ];
}
