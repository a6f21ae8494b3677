/**
 * Requests on their way to an upstream: the execute step of a tool call (forwarded, read into one
 * outcome beside the raw answer, its round or its task) and any other request relayed as it is. A
 * request goes to the caller's instance of an isolated upstream, and is remembered on it while in
 * flight, so that what the upstream asks meanwhile reaches that caller's session only.
 */
import type { CallToolResult, Request, Result, Server, ServerContext } from '@modelcontextprotocol/server';
import type { ToolCall } from 'tool-envelope/core';
import type { GatewayCall } from '../call.js';
import type { InputRounds } from '../rounds/input.js';
import { callerKeyOf } from '../rounds/input.js';
import { type RelayStates, isRound, roundOutcome } from '../rounds/relay.js';
import type { TaskExecuted } from '../tasks/ends.js';
import type { TaskFetched } from '../tasks/calls.js';
import { stripProgressToken, toProtocolError } from '../upstream/fault-outcomes.js';
import type { UpstreamPool } from '../upstream/instances.js';
import { requestTooLarge } from '../upstream/request-size.js';
import { type Upstream, UpstreamFault, type UpstreamRequestOptions } from '../upstream/upstream.js';
import { paramHeadersToward } from '../wire/param-headers.js';
import type { Callers } from './callers.js';
import { failedOutcomeOf, stampIds, toolOutcomeOf, type ToolRoute } from './calls.js';
import { relayForward, relaysRounds } from './rounds.js';
import { askSessionClient, soleCaller } from './session-client.js';

type Extra = ServerContext;
type HttpHeaders = Record<string, string>;
/** How one request goes upstream: relayed input rounds come back as they are; a URL upstream's extra headers. */
type ForwardHow = { timeoutMs: number; allowInputRequired?: boolean; headers?: HttpHeaders | undefined };

/** Where one execution goes beyond the plain path: an instance, the tasks module, or relaying rounds; `after` finishes a mode's value. */
export interface ExecuteVia {
  instance?: Upstream;
  fetch?: ((headers?: HttpHeaders) => Promise<TaskFetched>) | undefined;
  relay?: boolean;
  after?: (executed: TaskExecuted) => TaskExecuted;
}

/** One tool call's execute step: what goes upstream, for which call. */
export interface ExecuteStep {
  call: GatewayCall;
  route: ToolRoute;
  /** The request as it goes upstream (the upstream's tool name; a relayed call's round params). */
  req: Request;
  extra: Extra | undefined;
  via: ExecuteVia;
}

/** What the forwarder shares with the rest of the gateway. */
export interface ForwarderParts {
  callers: Callers;
  pools: Map<Upstream, UpstreamPool>;
  inputRounds: InputRounds;
  relayStates: RelayStates;
  requestTimeoutMs: number;
  deadlineMs: number;
  previewLimitBytes: number;
  maxResultBytes: number;
  waitReadyMs: number | undefined;
}

export class Forwarder {
  /** Requests in flight on each upstream, by the session that made them: where its requests to the client go. */
  private readonly calling = new Map<Upstream, Map<Server, Set<Extra>>>();

  constructor(private readonly parts: ForwarderParts) {}

  /**
   * The execute step the governance pipeline calls (bound to one call): forwards, reads the answer
   * into one value and stamps the call's ids (and the pipeline's decision id) on its outcome, once.
   */
  async executeStep(step: ExecuteStep, decided: ToolCall | undefined): Promise<TaskExecuted> {
    const executed = await this.execute(step.route, step.req, step.extra, step.via);
    stampIds(executed.outcome, step.call, decided?.policyDecisionId ?? undefined);
    return step.via.after ? step.via.after(executed) : executed;
  }

  /**
   * Forwards a tool call (to the caller's instance, through the tasks module, or relaying an
   * upstream's rounds) and reads the answer as one value. Upstream faults become outcomes; the
   * upstream's JSON-RPC errors that are not tool failures are thrown.
   */
  async execute(route: ToolRoute, req: Request, extra: Extra | undefined, via: ExecuteVia = {}): Promise<TaskExecuted> {
    const tooLarge = requestTooLarge(route.upstream, req);
    if (tooLarge) return { outcome: tooLarge };
    const headers = route.upstream.spec.url ? paramHeadersToward(route.tool, req.params) : undefined;
    const deadlineMs = this.parts.deadlineMs;
    try {
      if (via.fetch) return this.read(route, await via.fetch(headers));
      const how: ForwardHow = { timeoutMs: deadlineMs, headers };
      if (via.relay) how.allowInputRequired = true;
      const raw = (
        via.instance ? await this.forwardOnce(via.instance, req, extra, how) : await this.forwardVia(route.upstream, req, extra, how)
      ) as CallToolResult;
      // An upstream's input round is not the call's outcome: it goes back to the client as it is.
      if (extra && isRound(raw)) return { outcome: roundOutcome(route.upstream.name), round: raw };
      return this.read(route, { raw });
    } catch (err) {
      return { outcome: failedOutcomeOf(route.upstream, err, deadlineMs) };
    }
  }

  /** Any other request, relayed (a modern upstream's own rounds with their state wrapped); a fault is a JSON-RPC error. */
  async forward(shared: Upstream, req: Request, extra: Extra | undefined): Promise<Result> {
    const timeoutMs = this.parts.requestTimeoutMs;
    if (extra && req.method !== 'tools/call' && relaysRounds(extra, shared, req.method)) {
      const host = {
        states: this.parts.relayStates,
        caller: callerKeyOf(this.parts.callers.identityOf(this.parts.callers.serverOf(extra))),
        forwardRaw: (up: Upstream, r: Request, ctx: Extra) => this.forwardVia(up, r, ctx, { timeoutMs, allowInputRequired: true }).catch(rethrowAsProtocol),
      };
      return relayForward(host, shared, req, extra);
    }
    return this.forwardVia(shared, req, extra, { timeoutMs }).catch(rethrowAsProtocol);
  }

  /** A request an upstream sends its client (sampling, elicitation, roots), to the session it is serving. */
  askClient(req: Request, signal: AbortSignal, up: Upstream): Promise<Result> {
    return askSessionClient(req, signal, { name: up.name, calling: this.calling.get(up), modernInput: (extra) => this.parts.inputRounds.inputFor(extra) });
  }

  /** The session and request a log line of `up` belongs to: the one session with requests in flight on it, if one. */
  callerOn(up: Upstream): [Server, Extra] | undefined {
    return soleCaller(this.calling.get(up));
  }

  /** The outcome of an upstream's answer, beside the answer itself and the task it started (if any). */
  private read(route: ToolRoute, fetched: TaskFetched): TaskExecuted {
    const executed: TaskExecuted = toolOutcomeOf(route.upstream, fetched.raw, this.parts.previewLimitBytes, this.parts.maxResultBytes);
    if (fetched.task) executed.task = fetched.task;
    if (fetched.started) executed.started = fetched.started;
    return executed;
  }

  /** Sends one request to the upstream (the caller's instance of an isolated one); a fault is thrown as it is (an `UpstreamFault`). */
  private async forwardVia(shared: Upstream, req: Request, extra: Extra | undefined, how: ForwardHow): Promise<Result> {
    const server = this.parts.callers.serverOf(extra);
    if (!server || !extra) return this.forwardOnce(shared, req, extra, how);
    const up = await this.instanceFor(shared, server);
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

  private async instanceFor(shared: Upstream, server: Server): Promise<Upstream> {
    const pool = this.parts.pools.get(shared);
    if (!pool) return shared;
    try {
      return await pool.get(this.parts.callers.instanceKey(shared, server));
    } catch (err) {
      throw new UpstreamFault('unavailable', shared.name, `no instance of '${shared.name}' for this caller: ${(err as Error).message}`);
    }
  }

  private async forwardOnce(up: Upstream, req: Request, extra: Extra | undefined, how: ForwardHow): Promise<Result> {
    const progressToken = extra ? req.params?._meta?.progressToken : undefined;
    const options: UpstreamRequestOptions = { timeoutMs: how.timeoutMs };
    if (how.allowInputRequired) options.allowInputRequired = true;
    if (how.headers) options.headers = how.headers;
    if (extra) options.signal = this.parts.inputRounds.signalFor(extra) ?? extra.mcpReq.signal;
    if (this.parts.waitReadyMs !== undefined) options.waitReadyMs = this.parts.waitReadyMs;
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
}

/** A fault of a forwarded request (not a tool call, whose faults are outcomes) as the client gets it: a JSON-RPC error. */
function rethrowAsProtocol(err: unknown): never {
  throw toProtocolError(err);
}
