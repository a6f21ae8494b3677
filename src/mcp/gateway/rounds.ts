/**
 * The gateway's side of relayed input rounds (rounds/relay.ts). One logical call across rounds: the
 * first round is governed (policy, approval, idempotency claim, `started` record) and its answer is a
 * round, not an outcome; a retry is not decided again, and its final result completes that record.
 */
import type { CallToolResult, InputRequiredResult, Request, Result, ServerContext } from '@modelcontextprotocol/server';
import type { JsonObject, ToolOutcome } from 'tool-envelope/core';
import type { GovernancePipeline, RunHooks } from '../../governance/pipeline.js';
import type { CallExecuted } from '../call.js';
import type { Store } from '../../store/types.js';
import { type RelayStates, type RoundBinding, type RoundCall, finishRounds, isRound, replayedRound, ROUND_METHODS, roundParams } from '../rounds/relay.js';
import type { Upstream } from '../upstream/upstream.js';

/**
 * True when a request of this client to this upstream relays the upstream's own rounds: a modern-era
 * request (its `_meta` envelope) to a 2026-07-28 upstream, for a method that may answer with a round.
 */
export function relaysRounds(ctx: ServerContext, up: Upstream, method: string): boolean {
  return ctx.mcpReq.envelope !== undefined && up.era === 'modern' && ROUND_METHODS.has(method);
}

/**
 * The governance hooks of a relayed tool call's first round: a round leaves the `started` record open
 * (its final retry completes it; the pipeline hands back the record's id), and a replayed key whose
 * call went into rounds answers with the final outcome once there is one.
 */
export function roundHooks(store: Store | undefined): RunHooks<CallExecuted> {
  return {
    goesOn: (executed) => executed.round !== undefined,
    replayed: async (stored) => ({ outcome: await replayedRound(store, stored) }),
  };
}

/**
 * The round to hand the client for a first round's answer: the upstream's round with its state
 * wrapped around the logical call's ids (and its open record's, `auditId`).
 */
export function firstRound(
  states: RelayStates,
  answer: { round: InputRequiredResult; auditId?: string | undefined },
  caller: string,
  of: { bind: RoundBinding; call: { toolCallId: string; runId: string; traceId: string; idempotencyKey?: string | null | undefined } },
): Promise<InputRequiredResult> {
  const { call } = of;
  const ids: RoundCall = { toolCallId: call.toolCallId, runId: call.runId, traceId: call.traceId, keyed: typeof call.idempotencyKey === 'string' };
  if (answer.auditId !== undefined) ids.auditId = answer.auditId;
  return states.relay(answer.round, caller, of.bind, ids);
}

/** The parts of the gateway a relayed request needs. */
export interface RoundHost {
  readonly states: RelayStates;
  /** Who is calling (callerKeyOf): a round's state binds to its caller. */
  readonly caller: string;
  forwardRaw(up: Upstream, req: Request, ctx: ServerContext): Promise<Result>;
}

/**
 * Forwards a `prompts/get` or `resources/read` that may take rounds: the retry's wrapped state is
 * unwrapped (any other state is refused), and an upstream round goes back with its own keys.
 */
export async function relayForward(host: RoundHost, up: Upstream, req: Request, ctx: ServerContext): Promise<Result> {
  const { caller } = host;
  const params = (req.params ?? {}) as Record<string, unknown>;
  const bind: RoundBinding = {
    method: req.method,
    target: String(params.name ?? params.uri ?? ''),
    args: (typeof params.arguments === 'object' && params.arguments !== null ? params.arguments : {}) as JsonObject,
  };
  const state = ctx.mcpReq.requestState();
  const facts = state === undefined ? undefined : await host.states.unwrap(String(state), caller, bind);
  const raw = await host.forwardRaw(up, { method: req.method, params: roundParams(params, facts?.upstreamState, ctx) }, ctx);
  return isRound(raw) ? host.states.relay(raw, caller, bind) : raw;
}

/**
 * A relayed tool call's retry, as the gateway runs it: the upstream answer read as an outcome, and
 * what the client gets for it.
 */
export interface NextRoundHost {
  readonly states: RelayStates;
  readonly pipeline: GovernancePipeline | undefined;
  /** Forwards the request (relaying rounds), read as an outcome beside the upstream's raw answer or its round. */
  execute(params: Record<string, unknown>): Promise<CallExecuted>;
  /** The client's answer for the final outcome, recorded for the call with these ids; returns the enriched outcome too. */
  finish(executed: CallExecuted, ids: RoundCall | undefined): { result: CallToolResult; enriched: ToolOutcome };
}

/** A retry of a relayed tool call: who sent it, the call it is bound to, its params and request. */
export interface RoundRetry {
  caller: string;
  bind: RoundBinding;
  params: Record<string, unknown>;
  ctx: ServerContext;
}

/** Continues a relayed tool call: one more round, or the final result, which completes the call's record. */
export async function nextRound(host: NextRoundHost, state: string, retry: RoundRetry): Promise<CallToolResult | InputRequiredResult> {
  const { caller, bind, params, ctx } = retry;
  const facts = await host.states.unwrap(state, caller, bind);
  const executed = await host.execute(roundParams(params, facts.upstreamState, ctx));
  if (executed.round) return host.states.relay(executed.round, caller, bind, facts.call);
  const { result, enriched } = host.finish(executed, facts.call);
  if (host.pipeline && facts.call) await finishRounds(host.pipeline, facts.call, enriched);
  return result;
}
