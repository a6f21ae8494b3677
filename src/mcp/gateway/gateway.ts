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
  type CallToolResult,
  type InputRequiredResult,
  type Notification,
  type Request,
  type Result,
  type ServerCapabilities,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { ToolEnvelopeError, type JsonObject, type Principal, type ToolCall, type ToolOutcome } from 'tool-envelope/core';
import { PACKAGE_VERSION } from '../../version.js';
import { type Dialect, DEFAULT_PREVIEW_LIMIT_BYTES } from '../envelope.js';
import { osIdentity, type Identity } from '../../governance/identity.js';
import type { GatewayExecutor } from './governor.js';
import { DEFAULT_MAX_RESULT_BYTES } from '../wire/result-size.js';
import { requestTooLarge } from '../upstream/request-size.js';
import { paramHeadersToward } from '../wire/param-headers.js';
import { confirmationFor, isConfirmState } from '../rounds/confirm.js';
import { UpstreamPool, checkUpstreamNames, instanceKeyOf } from '../upstream/instances.js';
import { answerOf, callDetached, describeCall, failedOutcomeOf, mergeCapabilities, stampIds, toolOutcomeOf, type ToolRoute } from './calls.js';
import type { GatewayOptions } from './options.js';
import type { GatewayCall } from '../call.js';
import { stripProgressToken, toProtocolError } from '../upstream/fault-outcomes.js';
import { askSessionClient, notifySession, registerSessionHandlers, type SessionHost } from './session.js';
import { attachOnState, gatewayTasksFor, refuseUnroutedTask, taskRequest, taskRouteOf } from '../tasks/calls.js';
import type { GatewayTasks } from '../tasks/index.js';
import { type RoutedCall, type TaskExecuted, taskCallPlan, taskEndRecorder } from '../tasks/ends.js';
import type { TaskFetched, TaskRoute } from '../tasks/calls.js';
import type { Governed, RunHooks } from '../../governance/pipeline.js';
import { InputRounds, callerKeyOf } from '../rounds/input.js';
import { type NextRoundHost, firstRound, nextRound, relayForward, relaysRounds, roundHooks } from './rounds.js';
import { RelayStates, isRelayState, isRound, roundOutcome, roundParams } from '../rounds/relay.js';
import { ResourceSubscriptions } from './subscriptions.js';
import { ToolRoutes } from './tool-routes.js';
import { hidesTool, unknownToolError, visibleTools } from './hidden-tools.js';
import { SessionServer } from './session-server.js';
import { rpcError } from '../wire/rpc-errors.js';
import { MAX_MESSAGE_DEPTH, TOO_DEEP_MESSAGE, valueNestsDeeper } from '../wire/message-depth.js';
import { Upstream, UpstreamFault, type UpstreamRequestOptions, type UpstreamSpec } from '../upstream/upstream.js';

/** The default of `GatewayOptions.maxCallsInFlight`. */
const DEFAULT_MAX_CALLS_IN_FLIGHT = 1024;

type Extra = ServerContext;
type HttpHeaders = Record<string, string>;
/** How one request goes upstream: relayed input rounds come back as they are; a URL upstream's extra headers. */
type ForwardHow = { timeoutMs: number; allowInputRequired?: boolean; headers?: HttpHeaders | undefined };
type ToolParams = Record<string, unknown> & { name: string };

/**
 * A running gateway: supervised upstreams plus a factory of SDK v2 servers (one per 2025-era
 * session, one per 2026-07-28 request), which serves both eras through the SDK's entries.
 *
 * @example
 * ```ts
 * import { serveStdio } from '@modelcontextprotocol/server/stdio';
 * const gw = await Gateway.start({ upstreams: [{ name: 'memory', command: 'node', args: ['memory.js'] }] });
 * serveStdio(() => gw.createServer());
 * ```
 */
export class Gateway implements GatewayExecutor, SessionHost {
  readonly dialect: Dialect;
  readonly upstreams: Upstream[];
  private readonly options: GatewayOptions;
  private readonly deadlineMs: number;
  private readonly requestTimeoutMs: number;
  private readonly previewLimitBytes: number;
  private readonly maxResultBytes: number;
  private readonly servers = new Set<Server>();
  private readonly routes: ToolRoutes;
  /** @internal The upstream that owns each resource URI seen (several upstreams). */
  readonly resourceOwners = new Map<string, Upstream>();
  /** @internal Who subscribed to which resource, across eras (gateway/subscriptions.ts); the hooks `serveHttp` takes as `listen`. */
  readonly subscriptions: ResourceSubscriptions = new ResourceSubscriptions(this, (line) => this.log(line));
  /** The session of each request being handled (by its handler's `extra`). */
  private readonly origins = new WeakMap<object, Server>();
  /** Requests in flight on each upstream, by the session that made them: where its requests to the client go. */
  private readonly calling = new Map<Upstream, Map<Server, Set<Extra>>>();
  /** The verified identity of each session's server. */
  private readonly identities = new WeakMap<Server, Identity>();
  private readonly defaultIdentity: Identity;
  /** Instances of isolated upstreams, by their shared (template) instance. */
  private readonly pools = new Map<Upstream, UpstreamPool>();
  private readonly sessionKeys = new WeakMap<Server, string>();
  private readonly inflight = new Set<Promise<unknown>>();
  /** Tool calls in flight per session (its `Server`; the gateway itself for calls without one). */
  private readonly callsInFlight = new WeakMap<object, number>();
  private readonly maxCallsInFlight: number;
  /** Modern-era calls waiting for their client's input (see rounds/input.ts). */
  private readonly inputRounds = new InputRounds();
  /** A modern upstream's own rounds, relayed with their state wrapped (see rounds/relay.ts). */
  private readonly relayStates: RelayStates;
  private closed = false;
  private capabilities: ServerCapabilities = {};
  /** The tasks extension through caller-bound handles (with `taskHandles`); see tasks/calls.ts. */
  private readonly tasks: GatewayTasks | undefined;

  private constructor(options: GatewayOptions) {
    this.options = options;
    this.dialect = options.dialect ?? 'mcec';
    this.deadlineMs = options.deadlineMs ?? 30_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
    this.previewLimitBytes = options.previewLimitBytes ?? DEFAULT_PREVIEW_LIMIT_BYTES;
    const operatorChain = options.governance?.options.principalChain;
    this.defaultIdentity =
      options.identity ??
      (operatorChain && operatorChain.length > 0 ? { principal: operatorChain[0]!, chain: operatorChain.slice(1), roles: [], via: 'operator' } : osIdentity());
    this.maxResultBytes = options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
    this.maxCallsInFlight = options.maxCallsInFlight ?? DEFAULT_MAX_CALLS_IN_FLIGHT;
    this.relayStates = new RelayStates(options.governance?.pipeline, options.governance?.options.confirmWindowMs);
    const handles = options.taskHandles;
    const ends = options.governance && taskEndRecorder(options.governance.pipeline, options.upstreams);
    const taskOptions = { dialect: this.dialect, previewLimitBytes: this.previewLimitBytes, version: PACKAGE_VERSION, handleTtlMs: options.taskHandleTtlMs };
    this.tasks = handles && gatewayTasksFor(handles, { ...taskOptions, onFinal: ends, toolFailureMeta: options.toolFailureMeta });
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
      requestTimeoutMs: this.requestTimeoutMs,
      modes: options.modes,
      outputSchema: options.outputSchema,
      log: (line) => this.log(line),
      sync: (tools) => options.governance?.sync(tools),
    });
  }

  private makeUpstream(spec: UpstreamSpec, isolatedTemplate?: Upstream): Upstream {
    return new Upstream(
      spec,
      {
        onNotification: (n, up) => this.onUpstreamNotification(n, up),
        onRequest: (req, signal, up) => askSessionClient(req, signal, up.name, this.calling.get(up), (extra) => this.inputRounds.inputFor(extra)),
        log: (line) => this.log(line),
        onState: (state, up) => {
          if (!isolatedTemplate && state === 'ready') this.routes.stale();
          if (this.tasks) attachOnState(this.tasks, up, state, isolatedTemplate && this.pools.get(isolatedTemplate)?.keyOf(up));
          if (state === 'ready' && up.generation > 1) this.subscriptions.reconnected(up);
        },
      },
      this.options.supervision,
      { maxResultBytes: this.maxResultBytes },
    );
  }

  /** The instance of an isolated upstream that serves a session (its tenant's, or its own). */
  private instanceKey(up: Upstream, server: Server): string {
    return instanceKeyOf(up.spec, server, this.sessionKeys, (this.identities.get(server) ?? this.defaultIdentity).principal);
  }

  /**
   * Starts every upstream (failing clearly when one cannot start) and returns the gateway.
   */
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
      const key = this.sessionKeys.get(server);
      if (key) for (const pool of this.pools.values()) void pool.release(key).catch(() => {});
    };
    this.servers.add(server);
    if (session.identity) this.identities.set(server, session.identity);
    return server;
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
    await Promise.allSettled([...this.inflight]);
    await this.options.governance?.close();
    await this.options.recorder?.flush?.();
    await Promise.allSettled([...this.pools.values()].map((p) => p.close()));
    await Promise.allSettled(this.upstreams.map((u) => u.close()));
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  // ---------------------------------------------------------------- forwarding

  /** @internal */
  async forward(shared: Upstream, req: Request, extra: Extra | undefined): Promise<Result> {
    const timeoutMs = this.requestTimeoutMs;
    if (extra && req.method !== 'tools/call' && relaysRounds(extra, shared, req.method)) {
      const host = {
        states: this.relayStates,
        forwardRaw: (up: Upstream, r: Request, ctx: Extra) => this.forwardVia(up, r, ctx, { timeoutMs, allowInputRequired: true }).catch(rethrowAsProtocol),
      };
      const server = this.origins.get(extra);
      return relayForward(host, shared, req, extra, callerKeyOf((server && this.identities.get(server)) ?? this.defaultIdentity));
    }
    return this.forwardVia(shared, req, extra, { timeoutMs }).catch(rethrowAsProtocol);
  }

  /** Sends one request to the upstream (the caller's instance of an isolated one); an upstream fault is thrown as it is (an `UpstreamFault`). */

  private async forwardVia(shared: Upstream, req: Request, extra: Extra | undefined, how: ForwardHow): Promise<Result> {
    const server = extra ? this.origins.get(extra) : undefined;
    if (!server || !extra) return this.forwardOnce(shared, req, extra, how);
    const pool = this.pools.get(shared);
    let up = shared;
    if (pool) {
      try {
        up = await pool.get(this.instanceKey(shared, server));
      } catch (err) {
        throw new UpstreamFault('unavailable', shared.name, `no instance of '${shared.name}' for this caller: ${(err as Error).message}`);
      }
    }
    let bySession = this.calling.get(up);
    if (!bySession) this.calling.set(up, (bySession = new Map()));
    let extras = bySession.get(server);
    if (!extras) bySession.set(server, (extras = new Set()));
    extras.add(extra);
    try {
      return await this.forwardOnce(up, req, extra, how);
    } finally {
      extras.delete(extra);
      if (extras.size === 0) bySession.delete(server);
    }
  }

  private async forwardOnce(up: Upstream, req: Request, extra: Extra | undefined, how: ForwardHow): Promise<Result> {
    const progressToken = extra ? req.params?._meta?.progressToken : undefined;
    const options: UpstreamRequestOptions = { timeoutMs: how.timeoutMs };
    if (how.allowInputRequired) options.allowInputRequired = true;
    if (how.headers) options.headers = how.headers;
    if (extra) options.signal = this.inputRounds.signalFor(extra) ?? extra.mcpReq.signal;
    if (this.options.waitReadyMs !== undefined) options.waitReadyMs = this.options.waitReadyMs;
    if (progressToken === undefined) return up.request(req, options);
    // Progress is relayed with the client's own token, and flushed before the answer so it never arrives late.
    let relayed: Promise<void> = Promise.resolve();
    options.onprogress = (p) => {
      relayed = extra!.mcpReq.notify({ method: 'notifications/progress', params: { ...p, progressToken } }).catch(() => {});
    };
    const result = await up.request(stripProgressToken(req), options);
    await relayed;
    return result;
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
    for (const server of this.servers) if (!pool || this.instanceKey(pool[0], server) === pool[1].keyOf(up)) notifySession(server, n);
  }

  // ---------------------------------------------------------------- tools

  /** @internal */
  async listTools(extra: Extra): Promise<Result> {
    const tools = await this.routes.refresh(extra.mcpReq.signal);
    const server = this.origins.get(extra);
    return { tools: visibleTools(this.options.governance?.pipeline.policy, tools, (server && this.identities.get(server)) ?? this.defaultIdentity) };
  }

  /** @internal A published tool's `inputSchema` for `serveHttp`'s `toolInputSchema` (at once when the routes are fresh). */
  toolInputSchema(name: string): unknown {
    return this.routes.inputSchema(name);
  }

  /** @internal `tasks/get`, `tasks/update`, `tasks/cancel` for the session's verified identity. */
  taskRequest(method: string, params: JsonObject, ctx: Extra, server: Server): Promise<Result> {
    return taskRequest(this.tasks, method, params, ctx, this.identities.get(server) ?? this.defaultIdentity);
  }

  /** @internal */
  tag(ctx: Extra, server: Server): void {
    this.origins.set(ctx, server);
  }

  /**
   * Step 3 of a call: forwards it (to the caller's instance, through the tasks module, or relaying an
   * upstream's rounds) and reads the answer as one value: the outcome, stamped with the call's ids,
   * beside the upstream's raw answer, its round or its task. Upstream faults become outcomes; the
   * upstream's JSON-RPC errors that are not tool failures are thrown.
   */
  private async execute(route: ToolRoute, req: Request, extra: Extra | undefined, via: ExecuteVia = {}): Promise<TaskExecuted> {
    const tooLarge = requestTooLarge(route.upstream, req);
    if (tooLarge) return { outcome: tooLarge };
    const headers = route.upstream.spec.url ? paramHeadersToward(route.tool, req.params) : undefined;
    try {
      if (via.fetch) return this.read(route, await via.fetch(headers));
      const how: ForwardHow = { timeoutMs: this.deadlineMs, headers };
      if (via.relay) how.allowInputRequired = true;
      const raw = (
        via.instance ? await this.forwardOnce(via.instance, req, extra, how) : await this.forwardVia(route.upstream, req, extra, how)
      ) as CallToolResult;
      // An upstream's input round is not the call's outcome: it goes back to the client as it is.
      if (extra && isRound(raw)) return { outcome: roundOutcome(route.upstream.name), round: raw };
      return this.read(route, { raw });
    } catch (err) {
      return { outcome: failedOutcomeOf(route.upstream, err, this.deadlineMs) };
    }
  }

  /** The outcome of an upstream's answer, beside the answer itself and the task it started (if any). */
  private read(route: ToolRoute, fetched: TaskFetched): TaskExecuted {
    const executed: TaskExecuted = toolOutcomeOf(route.upstream, fetched.raw, this.previewLimitBytes, this.maxResultBytes);
    if (fetched.task) executed.task = fetched.task;
    if (fetched.started) executed.started = fetched.started;
    return executed;
  }

  /**
   * Calls a tool with no client waiting for the answer (used by the governance to run a call that
   * was approved after its client got `paused`). Never throws for a tool or upstream fault.
   *
   * @example
   * ```ts
   * const outcome = await gateway.callDetached('ev_echo', { message: 'hi' });
   * ```
   */
  callDetached(tool: string, args: JsonObject, options: { traceparent?: string; principal?: Principal } = {}): Promise<ToolOutcome> {
    return callDetached(
      {
        routeOf: (name) => this.routes.routeOf(name),
        pool: (up) => this.pools.get(up),
        execute: async (route, req, instance) => (await this.execute(route, req, undefined, instance ? { instance } : {})).outcome,
      },
      tool,
      args,
      options,
    );
  }

  /**
   * A client's `tools/call`: a relayed round's retry or an input round's answer goes on where it
   * waits; any other call is admitted, described once, governed around its execute step (plain, through
   * the tasks module, or relaying rounds: {@link modeOf}) and answered from the one value that step gave.
   *
   * @internal
   */
  async callTool(req: { method: 'tools/call'; params: ToolParams }, extra: Extra, server?: Server): Promise<CallToolResult | InputRequiredResult> {
    const params = req.params;
    // The gateway's own transports refuse such a message as they read it; over any other transport
    // it is refused here, before it is recorded or relayed (wire/message-depth.ts). `params` is one level
    // below the message.
    if (valueNestsDeeper(params, MAX_MESSAGE_DEPTH - 1)) throw rpcError(-32600, TOO_DEEP_MESSAGE);
    const modern = extra.mcpReq.envelope !== undefined;
    // Who the call acts for comes from the session's authentication (or the operator).
    const identity = (server && this.identities.get(server)) ?? this.defaultIdentity;
    const caller = modern ? callerKeyOf(identity) : '';
    // An upstream's input round is answered where it waits; a confirmation's state travels with the client (rounds/confirm.ts).
    const state = modern ? extra.mcpReq.requestState() : undefined;
    // A modern upstream's own round goes on from its wrapped state, on any replica (rounds/relay.ts).
    if (isRelayState(state)) return this.nextToolRound(params, extra, identity, state);
    if (state !== undefined && !isConfirmState(state)) return (await this.inputRounds.resume(extra, caller, params.name)) as CallToolResult;
    const route =
      this.routes.cached(params.name) ?? (await this.routes.routeOf(params.name, extra.mcpReq.signal, () => this.options.governor?.unknownTool?.()));
    if (hidesTool(this.options.governance?.pipeline.policy, params.name, route.tool.annotations, identity)) throw unknownToolError(params.name);
    const routed = await this.taskRoute(route, server, params);
    const call = describeCall(params, route, identity, server?.getClientVersion()?.name, extra.sessionId);
    const release = this.admit(server ?? this);
    // Set before the run starts: its upstream request takes the call's own signal.
    const inputCall = modern ? this.inputRounds.begin(extra, caller, params.name, this.deadlineMs) : undefined;
    Object.assign(call, confirmationFor(extra, server, caller, inputCall, this.options.governance !== undefined));
    const run: ToolCallRun = {
      call,
      route,
      extra,
      upstreamReq: { method: 'tools/call', params: { ...params, name: route.upstreamTool } },
      caller,
      started: performance.now(),
    };
    const answered = this.answered(run, routed, modern);
    this.inflight.add(answered);
    void answered
      .finally(() => {
        this.inflight.delete(answered);
        release();
      })
      .catch(() => {});
    return inputCall ? ((await this.inputRounds.serve(inputCall, answered, extra.mcpReq.signal)) as CallToolResult) : await answered;
  }

  /** Where the tasks module routes the call (an isolated upstream: the caller's instance), if it does; a task id it does not route is refused. */
  private async taskRoute(route: ToolRoute, server: Server | undefined, params: ToolParams): Promise<TaskRoute | undefined> {
    const key = server && this.pools.size > 0 ? (up: Upstream) => this.instanceKey(up, server) : undefined;
    const routing = this.tasks && taskRouteOf(this.tasks, route.upstream, this.pools, key);
    const routed = routing instanceof Promise ? await routing : routing;
    // A task id only ever reaches a caller as a handle bound to it: without the module, refused.
    if (!routed) refuseUnroutedTask(params, route.upstream.name);
    return routed || undefined;
  }

  /** Counts the call against its session's bound (`maxCallsInFlight`); returns what frees its place. */
  private admit(session: object): () => void {
    // From here to the run's start nothing awaits: the count cannot be overtaken.
    const inFlight = this.callsInFlight.get(session) ?? 0;
    if (inFlight >= this.maxCallsInFlight) {
      throw rpcError(-32000, `Too many tool calls in flight on this session (${this.maxCallsInFlight}); call again once some have answered`, {
        maxCallsInFlight: this.maxCallsInFlight,
      });
    }
    this.callsInFlight.set(session, inFlight + 1);
    return () => this.callsInFlight.set(session, (this.callsInFlight.get(session) ?? 1) - 1);
  }

  /**
   * The execute step of one call and the pipeline hooks that go with it: through the tasks module (the
   * record completed at the task's end, a replayed key answered with the task: tasks/ends.ts), relaying
   * a modern upstream's own rounds to a modern client (gateway/rounds.ts), or plain.
   */
  private modeOf(run: ToolCallRun, routed: TaskRoute | undefined, modern: boolean): CallMode {
    const { route, extra, upstreamReq } = run;
    const store = this.options.governance?.options.store;
    if (routed) {
      const plan = taskCallPlan({
        routed,
        spec: route.upstream.spec,
        call: run.call as RoutedCall['call'],
        ctx: extra,
        forwarded: upstreamReq.params,
        deadlineMs: this.deadlineMs,
        store,
      });
      return {
        execute: async (c) => plan.stamp(this.stamped(run, await this.execute(route, upstreamReq, extra, { fetch: plan.fetch }), c)),
        hooks: plan.hooks,
      };
    }
    // A modern client in front of a modern upstream gets the upstream's own rounds (not through the tasks module).
    if (modern && route.upstream.era === 'modern') {
      upstreamReq.params = roundParams(upstreamReq.params!, undefined, extra);
      return { execute: async (c) => this.stamped(run, await this.execute(route, upstreamReq, extra, { relay: true }), c), hooks: roundHooks(store) };
    }
    return { execute: async (c) => this.stamped(run, await this.execute(route, upstreamReq, extra), c) };
  }

  /** The executed outcome with the call's ids (and the pipeline's decision id), set where it is made: stamped once. */
  private stamped(run: ToolCallRun, executed: TaskExecuted, decided: ToolCall | undefined): TaskExecuted {
    stampIds(executed.outcome, run.call, decided?.policyDecisionId ?? undefined);
    return executed;
  }

  /** Step 4 of a call: governed, then answered from the one value its execute step gave. */
  private async answered(run: ToolCallRun, routed: TaskRoute | undefined, modern: boolean): Promise<CallToolResult> {
    const governed = await this.govern(run.call, this.modeOf(run, routed, modern));
    const { answer } = governed;
    // A task for a caller that declared the extension goes back as it is (its id a bound handle); an upstream's round too.
    if (answer?.task) return answer.task as unknown as CallToolResult;
    if (answer?.round) {
      const round = { round: answer.round, auditId: governed.auditId };
      const bind = { method: 'tools/call', target: run.call.tool, args: run.call.args };
      return (await firstRound(this.relayStates, round, run.caller, { bind, call: run.call })) as unknown as CallToolResult;
    }
    return this.answer(run.call, governed.outcome, run.started, answer?.raw).result;
  }

  /** Runs a call's execute step through the governance (when there is one) and the governor (a wrapper such as `traceGateway`). */
  private async govern(call: GatewayCall, mode: CallMode): Promise<Governed<TaskExecuted>> {
    const governance = this.options.governance;
    const governed = (): Promise<Governed<TaskExecuted>> =>
      governance ? governance.run(call, mode.execute, mode.hooks) : mode.execute(undefined).then(asGoverned);
    const governor = this.options.governor;
    if (!governor) return governed();
    // The governor sees outcomes: the value beside the outcome is kept here, for the answer.
    let kept: Governed<TaskExecuted> | undefined;
    const outcome = await governor.run(call, async () => (kept = await governed()).outcome);
    return kept && kept.outcome === outcome ? kept : { outcome };
  }

  /** The client's answer for a call's outcome (its envelope), handed to the recorder. */
  private answer(call: GatewayCall, outcome: ToolOutcome, started: number, raw: CallToolResult | undefined): { result: CallToolResult; enriched: ToolOutcome } {
    const { result, envelope, enriched } = answerOf(outcome, started, raw, {
      dialect: this.dialect,
      previewLimitBytes: this.previewLimitBytes,
      toolFailureMeta: this.options.toolFailureMeta === true,
    });
    this.options.recorder?.record(call, enriched, envelope, Date.now());
    return { result, enriched };
  }

  /** A retry of a relayed tool call (its wrapped state): the same logical call, not decided again (gateway/rounds.ts). */
  private async nextToolRound(params: ToolParams, extra: Extra, identity: Identity, state: string): Promise<CallToolResult | InputRequiredResult> {
    const route = await this.routes.routeOf(params.name, extra.mcpReq.signal);
    const call = describeCall(params, route, identity, undefined, extra.sessionId);
    const started = performance.now();
    const host: NextRoundHost = {
      states: this.relayStates,
      pipeline: this.options.governance?.pipeline,
      execute: (p) => this.execute(route, { method: 'tools/call', params: { ...p, name: route.upstreamTool } }, extra, { relay: true }),
      finish: (executed, ids) => {
        // The logical call's ids, from its first round: the retry is the same call.
        if (ids) Object.assign(call, { toolCallId: ids.toolCallId, runId: ids.runId, traceId: ids.traceId });
        stampIds(executed.outcome, call, undefined);
        return this.answer(call, executed.outcome, started, executed.raw);
      },
    };
    const bind = { method: 'tools/call', target: params.name, args: call.args };
    return nextRound(host, state, { caller: callerKeyOf(identity), bind, params, ctx: extra });
  }
}

/** One `tools/call` on its way through the gateway: made once by `callTool`, read by every step after. */
interface ToolCallRun {
  call: GatewayCall;
  route: ToolRoute;
  extra: Extra;
  /** The request as it goes upstream (the upstream's tool name; a relayed call's round params). */
  upstreamReq: Request;
  /** The caller's key (modern era; '' otherwise): rounds are bound to it. */
  caller: string;
  started: number;
}

/** How a call is executed (`execute`, given the pipeline's view of the call when governed) and the pipeline hooks of its mode. */
interface CallMode {
  execute: (decided: ToolCall | undefined) => Promise<TaskExecuted>;
  hooks?: RunHooks<TaskExecuted> | undefined;
}

/** Where one execution goes beyond the plain path: an instance, the tasks module, or relaying rounds. */
interface ExecuteVia {
  instance?: Upstream;
  fetch?: ((headers?: HttpHeaders) => Promise<TaskFetched>) | undefined;
  relay?: boolean;
}

function asGoverned(executed: TaskExecuted): Governed<TaskExecuted> {
  return { outcome: executed.outcome, answer: executed };
}

/** A fault of a forwarded request (not a tool call, whose faults are outcomes) as the client gets it: a JSON-RPC error. */
function rethrowAsProtocol(err: unknown): never {
  throw toProtocolError(err);
}
