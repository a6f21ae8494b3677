/**
 * The gateway's tool table: which upstream serves each published tool name, under which approval
 * mode, and the tool as published (prefixed name, envelope `outputSchema`). Filled from the
 * upstreams' `tools/list` and marked stale when an upstream says its list changed or restarts.
 */
import type { Result, Tool } from '@modelcontextprotocol/server';
import { ProtocolErrorCode as ErrorCode } from '@modelcontextprotocol/server';
import type { ApprovalMode } from 'tool-envelope/core';
import { type Dialect, modeFromAnnotations } from '../envelope.js';
import { publishTool, type ToolRoute } from './calls.js';
import type { OutputSchemaStyle } from './output-schema.js';
import { rpcError } from '../wire/rpc-errors.js';
import type { Upstream } from '../upstream/upstream.js';

/** How often an unknown tool name may make a fresh table ask the upstreams again. */
const MISS_REFRESH_MS = 1_000;

/** What the table needs from its gateway. */
export interface ToolRoutesHost {
  readonly upstreams: readonly Upstream[];
  readonly dialect: Dialect;
  readonly requestTimeoutMs: number;
  /** Per published name, over the upstream's own modes and the tool's annotations. */
  readonly modes?: Record<string, ApprovalMode> | undefined;
  readonly outputSchema?: OutputSchemaStyle | undefined;
  log(line: string): void;
  /** Told the published tools and their modes after each refresh (the governance). */
  sync?(tools: Array<{ name: string; mode: ApprovalMode }>): void;
}

/** The tool table of one gateway. */
export class ToolRoutes {
  private routes = new Map<string, ToolRoute>();
  private fresh = false;
  /** The refresh in flight, shared by every lookup that needs one. */
  private refreshing: Promise<unknown> | undefined;
  /** When an unknown name last made a fresh table ask again. */
  private missedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly host: ToolRoutesHost) {}

  /** The next lookup asks the upstreams again (a list change, a restart). */
  stale(): void {
    this.fresh = false;
  }

  /** The route of `name` when the table is fresh, without a promise (the per-call fast path). */
  cached(name: string): ToolRoute | undefined {
    return this.fresh ? this.routes.get(name) : undefined;
  }

  /** The published names with their upstream and its own name of the tool; `undefined` until a refresh has filled the table. */
  listed(): Array<{ name: string; upstream: string; upstreamTool: string }> | undefined {
    if (!this.fresh) return undefined;
    return [...this.routes].map(([name, r]) => ({ name, upstream: r.upstream.name, upstreamTool: r.upstreamTool }));
  }

  /** Lists every upstream's tools (all pages) and returns them as published. */
  async refresh(signal?: AbortSignal): Promise<Tool[]> {
    const routes = new Map<string, ToolRoute>();
    for (const up of this.host.upstreams) {
      if (up.state !== 'ready' && up.generation === 0) continue;
      let cursor: string | undefined;
      do {
        let page: Result;
        try {
          page = await up.request(
            { method: 'tools/list', params: cursor ? { cursor } : {} },
            { timeoutMs: this.host.requestTimeoutMs, ...(signal ? { signal } : {}) },
          );
        } catch (err) {
          // A down upstream contributes its last known tools, so calls still answer with envelopes.
          this.host.log(`tools/list of '${up.name}' failed: ${err instanceof Error ? err.message : String(err)}`);
          for (const [name, r] of this.routes) if (r.upstream === up) routes.set(name, r);
          break;
        }
        for (const tool of (page.tools as Tool[] | undefined) ?? []) {
          const name = (up.spec.prefix ?? '') + tool.name;
          const mode = this.host.modes?.[name] ?? up.spec.modes?.[tool.name] ?? modeFromAnnotations(tool.annotations);
          routes.set(name, { upstream: up, upstreamTool: tool.name, tool, mode });
        }
        cursor = typeof page.nextCursor === 'string' ? page.nextCursor : undefined;
      } while (cursor);
    }
    const tools: Tool[] = [];
    for (const [name, r] of routes) tools.push(publishTool(name, r, this.host.dialect, this.host.outputSchema));
    this.routes = routes;
    this.fresh = true;
    this.host.sync?.([...routes].map(([name, r]) => ({ name, mode: r.mode })));
    return tools;
  }

  /**
   * The route of `name`, refreshing a stale table first; an unknown tool is a JSON-RPC invalid-params
   * error. An unknown name asks the upstreams again at most once a second (one may have added the
   * tool without saying so), and concurrent lookups share one refresh: a client sending unknown names
   * cannot make every call a `tools/list` on every upstream.
   */
  async routeOf(name: string, signal?: AbortSignal, unknown?: () => void): Promise<ToolRoute> {
    let route = this.fresh ? this.routes.get(name) : undefined;
    if (!route && (!this.fresh || performance.now() - this.missedAt >= MISS_REFRESH_MS)) {
      if (this.fresh) this.missedAt = performance.now();
      await this.sharedRefresh(signal);
      route = this.routes.get(name);
    }
    if (!route) {
      unknown?.();
      throw rpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    }
    return route;
  }

  /** One refresh for every lookup waiting on it (its failure leaves the table as it was); a lookup's own signal ends only its wait. */
  private sharedRefresh(signal: AbortSignal | undefined): Promise<unknown> {
    this.refreshing ??= this.refresh()
      .catch(() => undefined)
      .finally(() => {
        this.refreshing = undefined;
      });
    if (!signal) return this.refreshing;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        resolve(undefined);
      };
      signal.addEventListener('abort', done, { once: true });
      this.refreshing?.then(done, done);
    });
  }

  /** A published tool's `inputSchema` (at once when the table is fresh; `undefined` for an unknown tool). */
  inputSchema(name: string): unknown {
    const cached = this.cached(name);
    if (cached) return cached.tool.inputSchema;
    return this.routeOf(name).then(
      (r) => r.tool.inputSchema,
      () => undefined,
    );
  }
}
