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
import { ToolEnvelopeError, type JsonObject, type Principal, type ToolOutcome } from 'tool-envelope/core';
import { PACKAGE_VERSION } from '../../version.js';
import { type Dialect, DEFAULT_PREVIEW_LIMIT_BYTES } from '../envelope.js';
import { osIdentity, type Identity } from '../../governance/identity.js';
import type { GatewayExecutor } from './governor.js';
import { DEFAULT_MAX_RESULT_BYTES } from '../wire/result-size.js';
import { requestTooLarge } from '../upstream/request-size.js';
import { paramHeadersToward } from '../wire/param-headers.js';
import { confirmationFor, isConfirmState } from '../rounds/confirm.js';
import { UpstreamPool, checkUpstreamNames, instanceKeyOf } from '../upstream/instances.js';
import { answerOf, callDetached, describeCall, failedOutcomeOf, mergeCapabilities, toolOutcomeOf, type ToolRoute } from './calls.js';
import type { GatewayOptions } from './options.js';
import type { GatewayCall } from '../call.js';
import { UpstreamFaultError, stripProgressToken, toProtocolError } from '../upstream/fault-outcomes.js';
import { askSessionClient, notifySession, registerSessionHandlers, type SessionHost } from './session.js';
import { attachOnState, gatewayTasksFor, refuseUnroutedTask, taskRequest, taskRouteOf } from '../tasks/calls.js';
import type { GatewayTasks } from '../tasks/index.js';
import { type TaskAnswer, taskCallPlan, taskEndRecorder } from '../tasks/ends.js';
import type { RunHooks } from '../../governance/pipeline.js';
import { InputRounds, callerKeyOf } from '../rounds/input.js';
import { type RoundAnswer, firstRound, nextRound, relayForward, relaysRounds, roundHooks } from './rounds.js';
import { RelayStates, isRelayState, isRound, roundOutcome, roundParams } from '../rounds/relay.js';
import { ResourceSubscriptions } from './subscriptions.js';
import { ToolRoutes } from './tool-routes.js';
import { SessionServer } from './session-server.js';
import { rpcError } from '../wire/rpc-errors.js';
import { MAX_MESSAGE_DEPTH, TOO_DEEP_MESSAGE, valueNestsDeeper } from '../wire/message-depth.js';
import { Upstream, UpstreamFault, type UpstreamRequestOptions, type UpstreamSpec } from '../upstream/upstream.js';

/** The default of `GatewayOptions.maxCallsInFlight`. */
const DEFAULT_MAX_CALLS_IN_FLIGHT = 1024;

type Extra = ServerContext;
type HttpHeaders = Record<string, string>;
/** How one request goes upstream: relayed input rounds come back as they are; a URL upstream's extra headers. */
type ForwardHow = { allowInputRequired?: boolean; headers?: HttpHeaders | undefined };
/** The upstream's raw answer and, for a task call, its task (tasks/ends.ts). */
type CallAnswer = TaskAnswer & RoundAnswer & { raw?: CallToolResult };
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
    this.tasks = handles && gatewayTasksFor(handles, this.dialect, this.previewLimitBytes, PACKAGE_VERSION, options.taskHandleTtlMs, ends);
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
  async forward(shared: Upstream, req: Request, extra: Extra | undefined, timeoutMs = this.requestTimeoutMs, headers?: HttpHeaders): Promise<Result> {
    if (extra && req.method !== 'tools/call' && relaysRounds(extra, shared, req.method)) {
      const host = {
        states: this.relayStates,
        forwardRaw: (up: Upstream, r: Request, ctx: Extra) => this.forwardVia(up, r, ctx, timeoutMs, { allowInputRequired: true }),
      };
      const server = this.origins.get(extra);
      return relayForward(host, shared, req, extra, callerKeyOf((server && this.identities.get(server)) ?? this.defaultIdentity));
    }
    return this.forwardVia(shared, req, extra, timeoutMs, headers ? { headers } : undefined);
  }

  private async forwardVia(shared: Upstream, req: Request, extra: Extra | undefined, timeoutMs: number, how?: ForwardHow): Promise<Result> {
    const server = extra ? this.origins.get(extra) : undefined;
    if (!server || !extra) return this.forwardOnce(shared, req, extra, timeoutMs, how);
    const pool = this.pools.get(shared);
    let up = shared;
    if (pool) {
      try {
        up = await pool.get(this.instanceKey(shared, server));
      } catch (err) {
        throw toProtocolError(new UpstreamFault('unavailable', shared.name, `no instance of '${shared.name}' for this caller: ${(err as Error).message}`));
      }
    }
    let bySession = this.calling.get(up);
    if (!bySession) this.calling.set(up, (bySession = new Map()));
    let extras = bySession.get(server);
    if (!extras) bySession.set(server, (extras = new Set()));
    extras.add(extra);
    try {
      return await this.forwardOnce(up, req, extra, timeoutMs, how);
    } finally {
      extras.delete(extra);
      if (extras.size === 0) bySession.delete(server);
    }
  }

  private async forwardOnce(up: Upstream, req: Request, extra: Extra | undefined, timeoutMs: number, how?: ForwardHow): Promise<Result> {
    const progressToken = extra ? req.params?._meta?.progressToken : undefined;
    const options: UpstreamRequestOptions = { timeoutMs };
    if (how?.allowInputRequired) options.allowInputRequired = true;
    if (how?.headers) options.headers = how.headers;
    if (extra) options.signal = this.inputRounds.signalFor(extra) ?? extra.mcpReq.signal;
    if (this.options.waitReadyMs !== undefined) options.waitReadyMs = this.options.waitReadyMs;
    if (progressToken === undefined) {
      try {
        return await up.request(req, options);
      } catch (err) {
        throw toProtocolError(err);
      }
    }
    // Progress is relayed with the client's own token, and flushed before the answer so it never arrives late.
    let relayed: Promise<void> = Promise.resolve();
    options.onprogress = (p) => {
      relayed = extra!.mcpReq.notify({ method: 'notifications/progress', params: { ...p, progressToken } }).catch(() => {});
    };
    try {
      const result = await up.request(stripProgressToken(req), options);
      await relayed;
      return result;
    } catch (err) {
      throw toProtocolError(err);
    }
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
    return { tools: await this.routes.refresh(extra.mcpReq.signal) };
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
   * Forwards a tool call; upstream faults become outcomes, the upstream's JSON-RPC errors are thrown.
   * The upstream's raw answer, when there is one, is left in `answer.raw`.
   */
  private async execute(
    route: ToolRoute,
    upstreamReq: Request,
    extra: Extra | undefined,
    answer?: CallAnswer,
    instance?: Upstream,
    fetch?: (headers?: HttpHeaders) => Promise<CallToolResult>,
  ): Promise<ToolOutcome> {
    const tooLarge = requestTooLarge(route.upstream, upstreamReq);
    if (tooLarge) return tooLarge;
    const headers = route.upstream.spec.url ? paramHeadersToward(route.tool, upstreamReq.params) : undefined;
    const how: ForwardHow | undefined = headers ? { headers } : undefined;
    try {
      const raw = (
        fetch
          ? await fetch(headers)
          : instance
            ? await this.forwardOnce(instance, upstreamReq, extra, this.deadlineMs, how)
            : await this.forwardVia(route.upstream, upstreamReq, extra, this.deadlineMs, answer?.relay ? { allowInputRequired: true, headers } : how)
      ) as CallToolResult;
      // An upstream's input round is not the call's outcome: it goes back to the client as it is.
      if (answer && isRound(raw)) {
        answer.round = raw;
        return roundOutcome(route.upstream.name);
      }
      return toolOutcomeOf(route.upstream, raw, answer, this.previewLimitBytes, this.maxResultBytes);
    } catch (err) {
      return failedOutcomeOf(route.upstream, err, this.deadlineMs);
    }
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
        execute: (route, req, instance) => this.execute(route, req, undefined, undefined, instance),
      },
      tool,
      args,
      options,
    );
  }

  /** @internal */
  async callTool(
    req: { method: 'tools/call'; params: Record<string, unknown> & { name: string } },
    extra: Extra,
    server?: Server,
  ): Promise<CallToolResult | InputRequiredResult> {
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
    const cached = this.routes.cached(params.name);
    const route = cached ?? (await this.routes.routeOf(params.name, extra.mcpReq.signal));
    const upstreamReq: Request = { method: 'tools/call', params: { ...params, name: route.upstreamTool } };
    // Where the tasks module routes the call (an isolated upstream: the caller's instance), if it does.
    const key = server && this.pools.size > 0 ? (up: Upstream) => this.instanceKey(up, server) : undefined;
    const routing = this.tasks && taskRouteOf(this.tasks, route.upstream, this.pools, key);
    const routed = routing instanceof Promise ? await routing : routing;
    // A task id only ever reaches a caller as a handle bound to it: without the module, refused.
    if (!routed) refuseUnroutedTask(params, route.upstream.name);

    const clientName = server?.getClientVersion()?.name;
    const call = describeCall(params, route, identity, clientName, extra.sessionId);
    // From here to the run's start nothing awaits: the count cannot be overtaken.
    const session: object = server ?? this;
    const inFlight = this.callsInFlight.get(session) ?? 0;
    if (inFlight >= this.maxCallsInFlight) {
      throw rpcError(-32000, `Too many tool calls in flight on this session (${this.maxCallsInFlight}); call again once some have answered`, {
        maxCallsInFlight: this.maxCallsInFlight,
      });
    }
    this.callsInFlight.set(session, inFlight + 1);
    // Set before the run starts: its upstream request takes the call's own signal.
    const inputCall = modern ? this.inputRounds.begin(extra, caller, params.name, this.deadlineMs) : undefined;
    Object.assign(call, confirmationFor(extra, server, caller, inputCall, this.options.governance !== undefined));

    const started = performance.now();
    // A modern client in front of a modern upstream gets the upstream's own rounds (not through the tasks module).
    const relay = modern && !routed && route.upstream.era === 'modern';
    const answer: CallAnswer = relay ? { relay } : {};
    if (relay) upstreamReq.params = roundParams(upstreamReq.params!, undefined, extra);
    // Through the tasks module: the record completed at the task's end, a replayed key answered with the task (tasks/ends.ts).
    const store = this.options.governance?.options.store;
    const plan = routed && taskCallPlan(routed, route.upstream.spec, { ...call, identity }, extra, upstreamReq.params, this.deadlineMs, answer, store);
    const hooks = plan ? plan.hooks : relay ? roundHooks(answer, store) : undefined;
    const execute = (): Promise<ToolOutcome> => {
      const ran = this.execute(route, upstreamReq, extra, answer, undefined, plan?.fetch);
      return plan ? ran.then(plan.stamp) : ran;
    };
    const bind = { method: 'tools/call', target: params.name, args: call.args };
    const run = this.govern(call, execute, started, answer, hooks).then(
      // A task for a caller that declared the extension goes back as it is (its id a bound handle); an upstream's round too.
      (result) =>
        answer.task
          ? (answer.task as unknown as CallToolResult)
          : answer.round
            ? (firstRound(this.relayStates, { ...answer, round: answer.round }, caller, bind, call) as Promise<unknown> as Promise<CallToolResult>)
            : result,
      (err: unknown) => {
        throw err instanceof UpstreamFaultError ? toProtocolError(err.fault) : err;
      },
    );
    this.inflight.add(run);
    void run
      .finally(() => {
        this.inflight.delete(run);
        this.callsInFlight.set(session, (this.callsInFlight.get(session) ?? 1) - 1);
      })
      .catch(() => {});
    return inputCall ? ((await this.inputRounds.serve(inputCall, run, extra.mcpReq.signal)) as CallToolResult) : await run;
  }

  /** Runs a call through governance and governor, and builds the client's answer. */
  private async govern(call: GatewayCall, execute: () => Promise<ToolOutcome>, started: number, answer: CallAnswer, hooks?: RunHooks): Promise<CallToolResult> {
    const governance = this.options.governance;
    const governed = governance ? () => governance.run(call, execute, hooks) : execute;
    const outcome = this.options.governor ? await this.options.governor.run(call, governed) : await governed();
    // A round is not the call's outcome: no envelope, no record (callTool answers with the round).
    if (answer.round) return { content: [] };
    return this.answer(call, outcome, started, answer.raw).result;
  }

  /** The client's answer for a call's outcome (its envelope), handed to the recorder. */
  private answer(call: GatewayCall, outcome: ToolOutcome, started: number, raw: CallToolResult | undefined): { result: CallToolResult; enriched: ToolOutcome } {
    const { result, envelope, enriched } = answerOf(call, outcome, started, raw, {
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
    const host = {
      states: this.relayStates,
      pipeline: this.options.governance?.pipeline,
      execute: (p: Record<string, unknown>, answer: CallAnswer) =>
        this.execute(route, { method: 'tools/call', params: { ...p, name: route.upstreamTool } }, extra, answer),
      finish: (outcome: ToolOutcome, ids: Partial<GatewayCall> | undefined, answer: CallAnswer) =>
        this.answer(Object.assign(call, ids && { toolCallId: ids.toolCallId, runId: ids.runId, traceId: ids.traceId }), outcome, started, answer.raw),
    };
    return nextRound(host, state, callerKeyOf(identity), { method: 'tools/call', target: params.name, args: call.args }, params, extra);
  }
}
