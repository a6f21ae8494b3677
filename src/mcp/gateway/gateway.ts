/**
 * The gateway: an MCP server (the SDK's low-level `Server`, one per client session) in front of one or
 * more upstream MCP servers. It forwards every request and notification (tools, resources, prompts,
 * completions, logging, progress, cancellation; tasks only through caller-bound handles) and wraps every
 * tool result in an envelope of the chosen contract without taking anything away: the upstream's
 * content blocks stay as they are and the envelope is added as `structuredContent`.
 */
import {
  ProtocolErrorCode as ErrorCode,
  type Server,
  type Notification,
  type Request,
  type Result,
  type ServerCapabilities,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { ToolEnvelopeError, type JsonObject, type Principal, type ToolOutcome } from 'tool-envelope/core';
import { PACKAGE_VERSION } from '../../version.js';
import { type Dialect, DEFAULT_PREVIEW_LIMIT_BYTES } from '../envelope.js';
import { osIdentity, type Identity } from '../../governance/identity.js';
import type { GatewayExecutor } from './governor.js';
import { DEFAULT_MAX_RESULT_BYTES } from '../wire/result-size.js';
import { UpstreamPool, checkUpstreamNames } from '../upstream/instances.js';
import { mergeCapabilities } from './calls.js';
import type { GatewayOptions } from './options.js';
import { registerSessionHandlers, type SessionHost } from './session.js';
import { notifyRequest, notifySession } from './session-client.js';
import { attachOnState, gatewayTasksFor, taskRequest } from '../tasks/calls.js';
import type { GatewayTasks } from '../tasks/index.js';
import { taskEndRecorder } from '../tasks/ends.js';
import { InputRounds } from '../rounds/input.js';
import { RelayStates } from '../rounds/relay.js';
import { ResourceSubscriptions } from './subscriptions.js';
import { ToolRoutes } from './tool-routes.js';
import { visibleTools } from './hidden-tools.js';
import { SessionServer } from './session-server.js';
import { rpcError } from '../wire/rpc-errors.js';
import { Upstream, type UpstreamSpec } from '../upstream/upstream.js';
import { Callers } from './callers.js';
import { Forwarder } from './forwarder.js';
import { ToolCalls } from './tool-calls.js';

/** The default of `GatewayOptions.maxCallsInFlight`. */
const DEFAULT_MAX_CALLS_IN_FLIGHT = 1024;

type Extra = ServerContext;

/**
 * A running gateway: supervised upstreams plus a factory of SDK v2 servers (one per 2025-era
 * session, one per 2026-07-28 request), which serves both eras through the SDK's entries.
 *
 * @example
 * ```ts
 * const gw = await Gateway.start({ upstreams: [{ name: 'memory', command: 'node', args: ['memory.js'] }] });
 * serveStdio(() => gw.createServer());
 * ```
 */
export class Gateway implements GatewayExecutor, SessionHost {
  readonly dialect: Dialect;
  readonly upstreams: Upstream[];
  private readonly options: GatewayOptions;
  private readonly servers = new Set<Server>();
  private readonly routes: ToolRoutes;
  /** @internal The upstream that owns each resource URI seen (several upstreams). */
  readonly resourceOwners = new Map<string, Upstream>();
  /** @internal Who subscribed to which resource, across eras (gateway/subscriptions.ts); the hooks `serveHttp` takes as `listen`. */
  readonly subscriptions: ResourceSubscriptions = new ResourceSubscriptions(this, (line) => this.log(line));
  /** @internal Who is calling: each session's identity and the session of each request (gateway/callers.ts). */
  readonly callers: Callers;
  /** @internal Requests on their way upstream (gateway/forwarder.ts). */
  readonly forwarder: Forwarder;
  /** @internal The `tools/call` path (gateway/tool-calls.ts). */
  readonly calls: ToolCalls;
  /** Instances of isolated upstreams, by their shared (template) instance. */
  private readonly pools = new Map<Upstream, UpstreamPool>();
  /** Modern-era calls waiting for their client's input (see rounds/input.ts). */
  private readonly inputRounds = new InputRounds();
  private closed = false;
  private capabilities: ServerCapabilities = {};
  /** The tasks extension through caller-bound handles (with `taskHandles`); see tasks/calls.ts. */
  private readonly tasks: GatewayTasks | undefined;

  private constructor(options: GatewayOptions) {
    this.options = options;
    this.dialect = options.dialect ?? 'mcec';
    const deadlineMs = options.deadlineMs ?? 30_000;
    const requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
    const previewLimitBytes = options.previewLimitBytes ?? DEFAULT_PREVIEW_LIMIT_BYTES;
    const operatorChain = options.governance?.options.principalChain;
    const defaultIdentity: Identity =
      options.identity ??
      (operatorChain && operatorChain.length > 0 ? { principal: operatorChain[0]!, chain: operatorChain.slice(1), roles: [], via: 'operator' } : osIdentity());
    this.callers = new Callers(defaultIdentity);
    const relayStates = new RelayStates(options.governance?.pipeline, options.governance?.options.confirmWindowMs);
    const handles = options.taskHandles;
    const ends = options.governance && taskEndRecorder(options.governance.pipeline, options.upstreams);
    const taskOptions = { dialect: this.dialect, previewLimitBytes, version: PACKAGE_VERSION, handleTtlMs: options.taskHandleTtlMs };
    const approvals = options.approvalTasks ? options.governance?.options.store : undefined;
    this.tasks = handles && gatewayTasksFor(handles, { ...taskOptions, onFinal: ends, toolFailureMeta: options.toolFailureMeta, approvals });
    checkUpstreamNames(options.upstreams);
    this.upstreams = options.upstreams.map((spec) => {
      const up = this.makeUpstream(spec);
      if (spec.isolation === 'tenant' || spec.isolation === 'session') {
        this.pools.set(up, new UpstreamPool(() => this.makeUpstream(spec, up), spec.maxInstances ?? 100));
      }
      return up;
    });
    this.routes = new ToolRoutes({
      upstreams: this.upstreams,
      dialect: this.dialect,
      requestTimeoutMs,
      modes: options.modes,
      outputSchema: options.outputSchema,
      log: (line) => this.log(line),
      sync: (tools) => options.governance?.sync(tools),
    });
    const shared = { callers: this.callers, pools: this.pools, inputRounds: this.inputRounds, relayStates, deadlineMs, previewLimitBytes };
    this.forwarder = new Forwarder({
      ...shared,
      requestTimeoutMs,
      maxResultBytes: options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
      waitReadyMs: options.waitReadyMs,
    });
    this.calls = new ToolCalls({
      ...shared,
      options,
      dialect: this.dialect,
      maxCallsInFlight: options.maxCallsInFlight ?? DEFAULT_MAX_CALLS_IN_FLIGHT,
      forwarder: this.forwarder,
      routes: this.routes,
      tasks: this.tasks,
    });
  }

  private makeUpstream(spec: UpstreamSpec, isolatedTemplate?: Upstream): Upstream {
    return new Upstream(
      spec,
      {
        onNotification: (n, up) => this.onUpstreamNotification(n, up),
        onRequest: (req, signal, up) => this.forwarder.askClient(req, signal, up),
        log: (line) => this.log(line),
        onState: (state, up) => {
          if (!isolatedTemplate && state === 'ready') this.routes.stale();
          if (this.tasks) attachOnState(this.tasks, up, state, isolatedTemplate && this.pools.get(isolatedTemplate)?.keyOf(up));
          if (state === 'ready' && up.generation > 1) this.subscriptions.reconnected(up);
        },
      },
      this.options.supervision,
      { maxResultBytes: this.options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES },
    );
  }

  /** Starts every upstream (failing clearly when one cannot start) and returns the gateway. */
  static async start(options: GatewayOptions): Promise<Gateway> {
    const gw = new Gateway(options);
    const results = await Promise.allSettled(gw.upstreams.map((u) => u.start()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await Promise.all(gw.upstreams.map((u) => u.close()));
      const reason: unknown = failed.reason;
      throw new ToolEnvelopeError('invalid-option', reason instanceof Error ? reason.message : String(reason), { cause: reason });
    }
    gw.capabilities = mergeCapabilities(gw.upstreams);
    if (options.governance) {
      // The governance needs the tools registered before it can run calls approved while the gateway was down.
      await gw.routes.refresh().catch(() => undefined);
      options.governance.attach(gw);
    }
    return gw;
  }

  /** The capabilities the gateway announces: the union of the upstreams', plus tools and the tasks extension when routable. */
  getCapabilities(): ServerCapabilities {
    const extensions = this.tasks?.extensions();
    return extensions ? { ...this.capabilities, extensions: { ...this.capabilities.extensions, ...extensions } } : this.capabilities;
  }

  /** Number of connected client sessions. */
  get sessionCount(): number {
    return this.servers.size;
  }

  /**
   * A new SDK v2 `Server` for one client session (2025 era) or one request (2026-07-28 era): the
   * factory to hand to `serveStdio`, `createMcpHandler` or `serveHttp`, with the `era` its context names.
   */
  createServer(session: { identity?: Identity; era?: 'modern' | 'legacy' } = {}): Server {
    if (this.closed) throw new ToolEnvelopeError('closed', 'the gateway is closed');
    const first = this.upstreams[0]!;
    const instructions = this.upstreams.length === 1 ? first.instructions : undefined;
    const server = new SessionServer(
      { name: this.options.name ?? 'tool-envelope-gateway', version: PACKAGE_VERSION },
      { capabilities: this.getCapabilities(), ...(instructions ? { instructions } : {}) },
    );
    registerSessionHandlers(server, this, this.capabilities, session.era);
    server.onclose = () => {
      this.servers.delete(server);
      this.subscriptions.drop(server);
      const key = this.callers.sessionKey(server);
      if (key) for (const pool of this.pools.values()) void pool.release(key).catch(() => {});
    };
    this.servers.add(server);
    if (session.identity) this.callers.bind(server, session.identity);
    return server;
  }

  /**
   * Before the sessions close at shutdown: calls in flight get `graceMs` to answer, then answer
   * cancelled (see ToolCalls.drain); a client is answered, not left to its own timeout.
   */
  drain(graceMs = 200, answerMs = 250): Promise<void> {
    return this.calls.drain(graceMs, answerMs);
  }

  /** Stops serving: closes every session and upstream and flushes the recorder. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Task watches stop first: a task still running keeps its record open (read as interrupted).
    this.tasks?.close();
    await Promise.allSettled([...this.servers].map((s) => s.close()));
    this.inputRounds.close();
    this.subscriptions.close();
    await this.calls.settled();
    await this.options.governance?.close();
    await this.options.recorder?.flush?.();
    await Promise.allSettled([...this.pools.values()].map((p) => p.close()));
    await Promise.allSettled(this.upstreams.map((u) => u.close()));
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  /** @internal Any request but `tools/call`, relayed to an upstream (gateway/forwarder.ts). */
  forward(shared: Upstream, req: Request, extra: Extra | undefined): Promise<Result> {
    return this.forwarder.forward(shared, req, extra);
  }

  /** @internal */
  routeByPrefix(name: string): [Upstream, string] {
    for (const up of this.upstreams) {
      const prefix = up.spec.prefix ?? '';
      if (name.startsWith(prefix)) return [up, name.slice(prefix.length)];
    }
    throw rpcError(ErrorCode.InvalidParams, `No upstream serves '${name}'`);
  }

  private onUpstreamNotification(n: Notification, up: Upstream): void {
    if (n.method === 'notifications/tools/list_changed') this.routes.stale();
    this.subscriptions.relay(n, notifySession);
    if (n.method === 'notifications/resources/updated') {
      if (this.upstreams.length > 1 && typeof n.params?.uri === 'string') this.resourceOwners.set(n.params.uri, up);
      return;
    }
    if (n.method === 'notifications/progress' || n.method === 'notifications/cancelled') return;
    // An isolated instance talks only to the sessions it serves.
    const pool = [...this.pools.entries()].find(([, p]) => p.keyOf(up) !== undefined);
    // A log line while one session alone waits on the upstream goes on that request's stream (gateway/session-client.ts).
    const related = n.method === 'notifications/message' ? this.forwarder.callerOn(up) : undefined;
    if (related) notifyRequest(related, n);
    for (const server of this.servers)
      if (server !== related?.[0] && (!pool || this.callers.instanceKey(pool[0], server) === pool[1].keyOf(up))) notifySession(server, n);
  }

  // ---------------------------------------------------------------- tools

  /** Tells every session to list its tools again (a reloaded policy may hide other tools from a caller). */
  toolsChanged(): void {
    for (const server of this.servers) notifySession(server, { method: 'notifications/tools/list_changed' });
  }

  /** @internal */
  async listTools(extra: Extra): Promise<Result> {
    const tools = await this.routes.refresh(extra.mcpReq.signal);
    const identity = this.callers.identityOf(this.callers.serverOf(extra));
    return { tools: visibleTools(this.options.governance?.pipeline.policy, tools, identity) };
  }

  /**
   * @internal The tools listed at start (by published name, with the upstream and its own name of
   * each), for checking the configured modes; `undefined` when they could not be listed.
   */
  listedTools(): Array<{ name: string; upstream: string; upstreamTool: string }> | undefined {
    return this.routes.listed();
  }

  /** @internal A published tool's `inputSchema` for `serveHttp`'s `toolInputSchema` (at once when the routes are fresh). */
  toolInputSchema(name: string): unknown {
    return this.routes.inputSchema(name);
  }

  /** @internal `tasks/get`, `tasks/update`, `tasks/cancel` for the session's verified identity. */
  taskRequest(method: string, params: JsonObject, ctx: Extra, server: Server): Promise<Result> {
    return taskRequest(this.tasks, method, params, ctx, this.callers.identityOf(server));
  }

  /**
   * Calls a tool with no client waiting for the answer (used by the governance to run a call that
   * was approved after its client got `paused`). Never throws for a tool or upstream fault.
   */
  callDetached(tool: string, args: JsonObject, options: { traceparent?: string; principal?: Principal } = {}): Promise<ToolOutcome> {
    return this.calls.callDetached(tool, args, options);
  }
}
