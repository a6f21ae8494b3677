/**
 * A client's `tools/call` through the gateway: described once (in the governance pipeline's own
 * shape), admitted, governed around its execute step (the forwarder's, bound to the call: plain,
 * through the tasks module, or relaying an upstream's rounds) and answered from the one value that
 * step gave. docs/architecture.md draws the path.
 */
import type { CallToolResult, InputRequiredResult, Request, Server, ServerContext } from '@modelcontextprotocol/server';
import type { JsonObject, Principal, ToolCall, ToolOutcome } from 'tool-envelope/core';
import type { Governed, RunHooks } from '../../governance/pipeline.js';
import type { Identity } from '../../governance/identity.js';
import type { GatewayCall } from '../call.js';
import type { Dialect } from '../envelope.js';
import { confirmationFor, isConfirmState } from '../rounds/confirm.js';
import { type InputRounds, callerKeyOf } from '../rounds/input.js';
import { type RelayStates, isRelayState, roundParams } from '../rounds/relay.js';
import { refuseUnroutedTask, taskRouteOf, type TaskRoute } from '../tasks/calls.js';
import { type RoutedCall, type TaskExecuted, taskCallPlan } from '../tasks/ends.js';
import type { GatewayTasks } from '../tasks/index.js';
import type { UpstreamPool } from '../upstream/instances.js';
import type { Upstream } from '../upstream/upstream.js';
import { MAX_MESSAGE_DEPTH, TOO_DEEP_MESSAGE, valueNestsDeeper } from '../wire/message-depth.js';
import { rpcError } from '../wire/rpc-errors.js';
import type { Callers } from './callers.js';
import { answerOf, callDetached, describeCall, stampIds, type ToolRoute } from './calls.js';
import type { ExecuteStep, ExecuteVia, Forwarder } from './forwarder.js';
import type { GatewayOptions } from './options.js';
import { type NextRoundHost, firstRound, nextRound, roundHooks } from './rounds.js';
import type { ToolCallHandler } from './session-server.js';
import type { ToolRoutes } from './tool-routes.js';
import { hidesTool, unknownToolError } from './hidden-tools.js';
import { waitForDecision } from './approval-wait.js';

type Extra = ServerContext;
type ToolParams = Record<string, unknown> & { name: string };

/** What the call path shares with the rest of the gateway. */
export interface ToolCallParts {
  options: GatewayOptions;
  dialect: Dialect;
  deadlineMs: number;
  previewLimitBytes: number;
  maxCallsInFlight: number;
  callers: Callers;
  forwarder: Forwarder;
  routes: ToolRoutes;
  pools: Map<Upstream, UpstreamPool>;
  inputRounds: InputRounds;
  relayStates: RelayStates;
  tasks: GatewayTasks | undefined;
}

/** One `tools/call` on its way: made once by `callTool`, read by every step after. */
interface ToolCallRun {
  step: ExecuteStep;
  /** The caller's key (modern era; '' otherwise): rounds are bound to it. */
  caller: string;
  started: number;
}

/** How a call is executed (given the pipeline's view of the call when governed) and the pipeline hooks of its mode. */
interface CallMode {
  execute: (decided: ToolCall | undefined) => Promise<TaskExecuted>;
  hooks?: RunHooks<TaskExecuted> | undefined;
}

export class ToolCalls {
  /** Tool calls in flight per session (its `Server`; this object for calls without one). */
  private readonly callsInFlight = new WeakMap<object, number>();
  private readonly inflight = new Set<Promise<unknown>>();
  /** Aborted at shutdown: every call in flight then answers (cancelled) while its session is still open. */
  private readonly stopping = new AbortController();
  /** The signals of the calls in flight (see {@link untilStopped}), aborted at shutdown. */
  private readonly stoppable = new Set<AbortController>();

  constructor(private readonly parts: ToolCallParts) {}

  /** The `tools/call` handler of one session's server. */
  handlerFor(server: Server): ToolCallHandler {
    return (req, ctx) => {
      this.parts.callers.tag(ctx, server);
      return this.callTool(req, ctx, server);
    };
  }

  /**
   * A client's `tools/call`: a relayed round's retry or an input round's answer goes on where it
   * waits; any other call is described once, admitted, and answered.
   */
  async callTool(req: { method: 'tools/call'; params: ToolParams }, ctx: Extra, server?: Server): Promise<CallToolResult | InputRequiredResult> {
    const own = this.untilStopped(ctx);
    const extra: Extra = { ...ctx, mcpReq: { ...ctx.mcpReq, signal: own.signal } };
    const tagged = this.parts.callers.serverOf(ctx);
    if (tagged) this.parts.callers.tag(extra, tagged);
    try {
      return await this.serveCall(req.params, extra, server);
    } finally {
      this.stoppable.delete(own);
    }
  }

  private async serveCall(params: ToolParams, extra: Extra, server: Server | undefined): Promise<CallToolResult | InputRequiredResult> {
    // The gateway's own transports refuse such a message as they read it; any other is refused here, before it is recorded or relayed.
    if (valueNestsDeeper(params, MAX_MESSAGE_DEPTH - 1)) throw rpcError(-32600, TOO_DEEP_MESSAGE);
    const modern = extra.mcpReq.envelope !== undefined;
    const identity = this.parts.callers.identityOf(server);
    const caller = modern ? callerKeyOf(identity) : '';
    const state = modern ? extra.mcpReq.requestState() : undefined;
    if (isRelayState(state)) return this.nextToolRound(params, extra, identity, state);
    if (state !== undefined && !isConfirmState(state)) return (await this.parts.inputRounds.resume(extra, caller, params.name)) as CallToolResult;
    const { routes, inputRounds, deadlineMs } = this.parts;
    const { governance, governor } = this.parts.options;
    const route = routes.cached(params.name) ?? (await routes.routeOf(params.name, extra.mcpReq.signal, () => governor?.unknownTool?.()));
    if (hidesTool(governance?.pipeline.policy, params.name, route.tool.annotations, identity)) {
      governor?.unknownTool?.(); // counted as what it is answered as: an unknown tool
      throw unknownToolError(params.name);
    }
    const routed = await this.taskRoute(route, server, params);
    const call = describeCall(params, route, { identity, clientName: server?.getClientVersion()?.name, sessionId: extra.sessionId });
    const release = this.admit(server ?? this);
    // Set before the run starts: its upstream request takes the call's own signal.
    const inputCall = modern ? inputRounds.begin(extra, caller, params.name, deadlineMs) : undefined;
    Object.assign(call, confirmationFor(extra, { server, caller, input: inputCall, governed: governance !== undefined }));
    const upstreamReq: Request = { method: 'tools/call', params: { ...params, name: route.upstreamTool } };
    const run: ToolCallRun = { step: { call, route, req: upstreamReq, extra, via: {} }, caller, started: performance.now() };
    const answered = this.answered(run, routed, modern);
    this.track(answered, release);
    return inputCall ? ((await inputRounds.serve(inputCall, answered, extra.mcpReq.signal)) as CallToolResult) : await answered;
  }

  /**
   * Calls a tool with no client waiting for the answer (a call approved after its client got
   * `paused`). Never throws for a tool or upstream fault.
   */
  callDetached(tool: string, args: JsonObject, options: { traceparent?: string; principal?: Principal } = {}): Promise<ToolOutcome> {
    const { routes, pools, forwarder } = this.parts;
    const host = {
      routeOf: (name: string) => routes.routeOf(name),
      pool: (up: Upstream) => pools.get(up),
      execute: async (route: ToolRoute, req: Request, instance?: Upstream) =>
        (await forwarder.execute(route, req, undefined, instance ? { instance } : {})).outcome,
    };
    return callDetached(host, tool, args, options);
  }

  /** Resolves once every call in flight has answered. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
  }

  /**
   * Shutdown: the calls in flight get `graceMs` to answer, then are cancelled (each answers its
   * cancelled envelope, recorded as such) and given `answerMs` more; resolves then. The sessions are
   * closed only after, so that a client is answered rather than left waiting for its own timeout.
   */
  async drain(graceMs: number, answerMs: number): Promise<void> {
    const within = async (ms: number): Promise<void> => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([this.settled(), new Promise((r) => (timer = setTimeout(r, ms)))]);
      clearTimeout(timer);
    };
    if (this.inflight.size > 0) await within(graceMs);
    this.stopping.abort(new Error('the gateway is shutting down'));
    for (const own of this.stoppable) own.abort(this.stopping.signal.reason);
    if (this.inflight.size > 0) await within(answerMs);
  }

  /**
   * The call's own abort: it follows the request's signal and also aborts at shutdown (the SDK's own
   * aborts only when the session closes, too late to answer). Not AbortSignal.any with the long-lived shutdown signal:
   * on Node 20 that costs about 16 µs a call and keeps every call's signal until a full GC; the
   * calls in flight are aborted from {@link stoppable} instead.
   */
  private untilStopped(ctx: Extra): AbortController {
    const own = new AbortController();
    const source = ctx.mcpReq.signal;
    if (source.aborted) own.abort(source.reason);
    else source.addEventListener('abort', () => own.abort(source.reason), { once: true });
    if (this.stopping.signal.aborted) own.abort(this.stopping.signal.reason);
    this.stoppable.add(own);
    return own;
  }

  private track(answered: Promise<unknown>, release: () => void): void {
    this.inflight.add(answered);
    void answered
      .finally(() => {
        this.inflight.delete(answered);
        release();
      })
      .catch(() => {});
  }

  /** Where the tasks module routes the call (an isolated upstream: the caller's instance), if it does; a task id it does not route is refused. */
  private async taskRoute(route: ToolRoute, server: Server | undefined, params: ToolParams): Promise<TaskRoute | undefined> {
    const { tasks, pools, callers } = this.parts;
    const key = server && pools.size > 0 ? (up: Upstream) => callers.instanceKey(up, server) : undefined;
    const routing = tasks && taskRouteOf(tasks, route.upstream, pools, key);
    const routed = routing instanceof Promise ? await routing : routing;
    // A task id only ever reaches a caller as a handle bound to it: without the module, refused.
    if (!routed) refuseUnroutedTask(params, route.upstream.name);
    return routed || undefined;
  }

  /** Counts the call against its session's bound (`maxCallsInFlight`); returns what frees its place. */
  private admit(session: object): () => void {
    // From here to the run's start nothing awaits: the count cannot be overtaken.
    const max = this.parts.maxCallsInFlight;
    const inFlight = this.callsInFlight.get(session) ?? 0;
    if (inFlight >= max) {
      throw rpcError(-32000, `Too many tool calls in flight on this session (${max}); call again once some have answered`, { maxCallsInFlight: max });
    }
    this.callsInFlight.set(session, inFlight + 1);
    return () => this.callsInFlight.set(session, (this.callsInFlight.get(session) ?? 1) - 1);
  }

  /**
   * The execute step of one call (the forwarder's, bound to it) and the pipeline hooks of its mode:
   * through the tasks module (tasks/ends.ts), relaying a modern upstream's own rounds to a modern
   * client (gateway/rounds.ts), or plain.
   */
  private modeOf(run: ToolCallRun, routed: TaskRoute | undefined, modern: boolean): CallMode {
    const { step } = run;
    const store = this.parts.options.governance?.options.store;
    let via: ExecuteVia = {};
    let hooks: RunHooks<TaskExecuted> | undefined;
    if (routed) {
      const plan = taskCallPlan({
        routed,
        spec: step.route.upstream.spec,
        call: step.call as RoutedCall['call'],
        ctx: step.extra!,
        forwarded: step.req.params,
        deadlineMs: this.parts.deadlineMs,
        store,
      });
      via = { fetch: plan.fetch, after: plan.stamp };
      hooks = plan.hooks;
    } else if (modern && step.route.upstream.era === 'modern') {
      step.req.params = roundParams(step.req.params!, undefined, step.extra!);
      via = { relay: true };
      hooks = roundHooks(store);
    }
    step.via = via;
    return { execute: this.parts.forwarder.executeStep.bind(this.parts.forwarder, step), hooks };
  }

  /** Governed, then answered from the one value its execute step gave. */
  private async answered(run: ToolCallRun, routed: TaskRoute | undefined, modern: boolean): Promise<CallToolResult> {
    const { call } = run.step;
    const governed = await this.govern(call, this.modeOf(run, routed, modern));
    const { answer } = governed;
    // A task for a caller that declared the extension goes back as it is (its id a bound handle); an upstream's round too.
    if (answer?.task) return answer.task as unknown as CallToolResult;
    if (answer?.round) {
      const round = { round: answer.round, auditId: governed.auditId };
      const bind = { method: 'tools/call', target: call.tool, args: call.args };
      return (await firstRound(this.parts.relayStates, round, run.caller, { bind, call })) as unknown as CallToolResult;
    }
    const task = governed.outcome.status === 'paused' ? await this.pausedTask(run.step, governed.outcome) : undefined;
    if (task) {
      this.answer(call, governed.outcome, run.started, answer?.raw); // recorded as the paused call it is
      return task as unknown as CallToolResult;
    }
    const outcome = governed.outcome.status === 'paused' ? await this.waited(run.step, governed.outcome) : governed.outcome;
    return this.answer(call, outcome, run.started, answer?.raw).result;
  }

  /** A paused call as a task, for a client that declared the extension (tasks/approval-tasks.ts); a store fault leaves it `paused`. */
  private async pausedTask(step: ExecuteStep, paused: ToolOutcome): Promise<JsonObject | undefined> {
    const { tasks } = this.parts;
    const { call, extra } = step;
    if (!tasks || !extra || !call.caller) return undefined;
    const envelope = (extra.mcpReq as { envelope?: unknown }).envelope ?? step.req.params?._meta;
    const who = { identity: call.caller, ...(extra.sessionId ? { sessionId: extra.sessionId } : {}), envelope };
    return tasks.pausedTask(paused, paused.capabilityId ?? call.tool, who).catch(() => undefined);
  }

  /** A paused call held open for its decision, up to `--approval-wait` (approval-wait.ts). */
  private waited(step: ExecuteStep, paused: ToolOutcome): Promise<ToolOutcome> {
    const governance = this.parts.options.governance;
    if (!governance) return Promise.resolve(paused);
    const { store, approvalWaitMs, approvalPollMs } = governance.options;
    return waitForDecision({ store, maxWaitMs: approvalWaitMs, pollMs: approvalPollMs }, paused, step.req.params, step.extra);
  }

  /** Runs a call's execute step through the governance (when there is one) and the governor (a wrapper such as `traceGateway`). */
  private async govern(call: GatewayCall, mode: CallMode): Promise<Governed<TaskExecuted>> {
    const { governance, governor } = this.parts.options;
    const governed = (): Promise<Governed<TaskExecuted>> =>
      governance ? governance.run(call, mode.execute, mode.hooks) : mode.execute(undefined).then(asGoverned);
    if (!governor) return governed();
    // The governor sees outcomes: the value beside the outcome is kept here, for the answer.
    let kept: Governed<TaskExecuted> | undefined;
    const outcome = await governor.run(call, async () => (kept = await governed()).outcome);
    return kept && kept.outcome === outcome ? kept : { outcome };
  }

  /** The client's answer for a call's outcome (its envelope), handed to the recorder. */
  private answer(call: GatewayCall, outcome: ToolOutcome, started: number, raw: CallToolResult | undefined): { result: CallToolResult; enriched: ToolOutcome } {
    const { options, dialect, previewLimitBytes } = this.parts;
    const { result, envelope, enriched } = answerOf(outcome, started, raw, { dialect, previewLimitBytes, toolFailureMeta: options.toolFailureMeta === true });
    options.recorder?.record(call, enriched, envelope, Date.now());
    return { result, enriched };
  }

  /** A retry of a relayed tool call (its wrapped state): the same logical call, not decided again (gateway/rounds.ts). */
  private async nextToolRound(params: ToolParams, extra: Extra, identity: Identity, state: string): Promise<CallToolResult | InputRequiredResult> {
    const { routes, relayStates, options, forwarder } = this.parts;
    const route = await routes.routeOf(params.name, extra.mcpReq.signal);
    const call = describeCall(params, route, { identity, sessionId: extra.sessionId });
    const started = performance.now();
    const host: NextRoundHost = {
      states: relayStates,
      pipeline: options.governance?.pipeline,
      execute: (p) => forwarder.execute(route, { method: 'tools/call', params: { ...p, name: route.upstreamTool } }, extra, { relay: true }),
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

function asGoverned(executed: TaskExecuted): Governed<TaskExecuted> {
  return { outcome: executed.outcome, answer: executed };
}
