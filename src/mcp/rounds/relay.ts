/**
 * An upstream's own input rounds (2026-07-28 on both sides), relayed as they are, with the upstream's
 * `requestState` wrapped: `ter_` + the call's facts and the upstream's state + an HMAC-SHA-256 over
 * them and the caller's identity, unwrapped byte for byte on the retry. Nothing waits in the gateway,
 * so any replica sharing the key takes the retry. A state is refused (one error for all) when forged,
 * another caller's, for another target or arguments, expired, or, with governance, used before: a
 * relayed round skips the approval the first round passed.
 */
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { isInputRequiredResult, type InputRequiredResult } from '@modelcontextprotocol/client';
import { inputRequired, ProtocolErrorCode, type ServerContext } from '@modelcontextprotocol/server';
import { isJsonObject, toolError, type JsonObject, type ToolOutcome } from 'tool-envelope/core';
import type { GovernancePipeline } from '../../governance/pipeline.js';
import type { Store } from '../../store/types.js';
import { DEFAULT_CONFIRM_WINDOW_MS, argsDigest, macMatches, roundKey, stateMac, useOnce } from './confirm.js';
import { completeOpenRecord, keepEnd } from '../tasks/ends.js';
import { modernClientCapabilities } from './input.js';
import { rpcError } from '../wire/rpc-errors.js';

const PREFIX = 'ter_';
/** The upstream's state travels inside: up to 1 MiB of it (the client sends the state back whole). */
const SHAPE = /^ter_([A-Za-z0-9_-]{8,1400000})\.([A-Za-z0-9_-]{43})$/;
const PURPOSE = 'tool-envelope/relay-state/v1';
/** The requests an upstream may answer with an input round (spec basic/patterns/mrtr). */
export const ROUND_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** What a relayed state is bound to: the method, its target (tool or prompt name, resource URI) and arguments. */
export interface RoundBinding {
  method: string;
  target: string;
  args: JsonObject;
}

/** The one logical tool call that several rounds make: its ids, and its open `started` record. */
export interface RoundCall {
  toolCallId: string;
  runId: string;
  traceId: string;
  /** The id of the call's `started` record (with an audit log): the final round completes it. */
  auditId?: string;
  /** The call carried an idempotency key: its final outcome is kept for the key's replays. */
  keyed: boolean;
}

/** What a verified relayed state says. */
export interface RoundFacts {
  upstreamState: string | undefined;
  call: RoundCall | undefined;
}

/** The one answer to a relayed state that is forged, modified, another caller's, used, expired or for another request. */
function refused(): Error {
  return rpcError(
    ProtocolErrorCode.InvalidParams,
    'Unknown, used or expired requestState: an input round is answered once, by the caller it was asked of, for the same request and arguments',
  );
}

/** True for a `requestState` the gateway wrapped around an upstream's own (a relayed round). */
export function isRelayState(state: unknown): state is string {
  return typeof state === 'string' && state.startsWith(PREFIX);
}

/** True when an upstream's answer is an input round, to relay rather than to read as a result. */
export function isRound(result: unknown): result is InputRequiredResult {
  return isInputRequiredResult(result);
}

/** The wrapped states of one gateway. */
export class RelayStates {
  private key: Promise<KeyObject> | undefined;
  private readonly store: Store | undefined;

  constructor(
    private readonly pipeline?: Pick<GovernancePipeline, 'operatorKey' | 'store'>,
    private readonly windowMs = DEFAULT_CONFIRM_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.store = pipeline?.store;
  }

  private secret(): Promise<KeyObject> {
    this.key ??= this.pipeline ? roundKey(this.pipeline, PURPOSE) : Promise.resolve(createSecretKey(randomBytes(32)));
    return this.key;
  }

  /** The state the client gets for an upstream's round: the upstream's own state inside, bound to this caller and request. */
  async wrap(caller: string, bind: RoundBinding, upstreamState: unknown, call: RoundCall | undefined): Promise<string> {
    const facts = [
      1,
      bind.method,
      bind.target,
      argsDigest(bind.args),
      this.now() + this.windowMs,
      randomBytes(16).toString('base64url'),
      typeof upstreamState === 'string' ? upstreamState : null,
      call ? [call.toolCallId, call.runId, call.traceId, call.auditId ?? null, call.keyed ? 1 : 0] : null,
    ];
    const payload = Buffer.from(JSON.stringify(facts)).toString('base64url');
    return `${PREFIX}${payload}.${stateMac(await this.secret(), payload, caller).toString('base64url')}`;
  }

  /** The upstream's state and the call a retry continues; anything but this caller's unused, unexpired state for this request is refused. */
  async unwrap(state: string, caller: string, bind: RoundBinding): Promise<RoundFacts> {
    const now = this.now();
    const m = SHAPE.exec(state);
    if (!m) throw refused();
    const [, payload, tag] = m as unknown as [string, string, string];
    if (!macMatches(await this.secret(), payload, caller, tag)) throw refused();
    const [v, method, target, digest, expiresAt, nonce, upstreamState, call] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown[];
    if (v !== 1 || method !== bind.method || target !== bind.target || digest !== argsDigest(bind.args)) throw refused();
    if (typeof expiresAt !== 'number' || now > expiresAt || typeof nonce !== 'string') throw refused();
    if (this.store && !(await useOnce(this.store, { key: `rs1:${nonce}`, id: nonce, tool: bind.target }, now))) throw refused();
    const ids = Array.isArray(call) ? (call as unknown[]) : undefined;
    return {
      upstreamState: typeof upstreamState === 'string' ? upstreamState : undefined,
      call: ids && {
        toolCallId: String(ids[0]),
        runId: String(ids[1]),
        traceId: String(ids[2]),
        ...(typeof ids[3] === 'string' ? { auditId: ids[3] } : {}),
        keyed: ids[4] === 1,
      },
    };
  }

  /** The client's answer for an upstream's round: its `inputRequests` as they are, its state wrapped. */
  async relay(raw: InputRequiredResult, caller: string, bind: RoundBinding, call?: RoundCall): Promise<InputRequiredResult> {
    const requestState = await this.wrap(caller, bind, raw.requestState, call);
    return inputRequired({ ...(raw.inputRequests ? { inputRequests: raw.inputRequests } : {}), requestState });
  }
}

/**
 * The params to forward for a round's request: the client's input responses (the SDK lifts them out
 * of the handler's params), the upstream's own state in place of the wrapped one (none when it had
 * none), and the client capabilities the caller declared, so the upstream asks only what the client
 * can answer.
 */
export function roundParams(params: Record<string, unknown>, upstreamState: string | undefined, ctx: ServerContext): Record<string, unknown> {
  const { requestState: _s, inputResponses: _r, ...rest } = params;
  const meta = isJsonObject(rest._meta as JsonObject) ? (rest._meta as JsonObject) : {};
  const responses = ctx.mcpReq.inputResponses;
  return {
    ...rest,
    ...(responses !== undefined ? { inputResponses: responses } : {}),
    ...(upstreamState !== undefined ? { requestState: upstreamState } : {}),
    _meta: { ...meta, 'io.modelcontextprotocol/clientCapabilities': modernClientCapabilities(ctx) ?? {} },
  };
}

/** What the executed outcome of a round is (the pipeline sees it; the client gets the round). */
const ROUND_MARK = 'inputRound';

/**
 * The outcome a first round leaves with the governance: not the call's end (its `started` record stays
 * open, see docs/mcp.md), only what an idempotency key keeps until the final round's outcome is kept.
 */
export function roundOutcome(upstream: string): ToolOutcome {
  // No ids: the pipeline stamps the call's own on it (the key's replays find the final outcome by them).
  return { status: 'ok', latencyMs: 0, result: null, metadata: { [ROUND_MARK]: true, upstream } } as unknown as ToolOutcome;
}

/** The key under which a multi-round keyed call's final outcome is kept for its key's replays. */
function endKey(toolCallId: string): string {
  return `rr1:${toolCallId}`;
}

/**
 * The current answer to a replayed idempotency key whose call went into input rounds: the final
 * outcome once a final round brought one, else `idempotency-key-in-flight` (the rounds go on with
 * their requestState, never with a repeat of the key).
 */
export async function replayedRound(store: Store | undefined, stored: ToolOutcome): Promise<ToolOutcome> {
  if (stored.metadata?.[ROUND_MARK] !== true) return stored;
  const kept = store && stored.toolCallId ? await store.getIdempotency(endKey(stored.toolCallId)).catch(() => undefined) : undefined;
  if (kept?.state === 'done' && kept.outcome) return kept.outcome as unknown as ToolOutcome;
  return {
    ...stored,
    status: 'error',
    metadata: {},
    error: toolError(
      'timeout',
      'idempotency-key-in-flight',
      'The call with this idempotency key is waiting for its client to answer an input round (the retry carries inputResponses and requestState); retry later.',
      { retryable: true },
    ),
  };
}

/**
 * Ends the one logical call on its final round: completes its `started` record with the final
 * outcome (the record says who called and under which decision, from the first round), and for a
 * keyed call keeps the outcome for its key's replays. Never throws.
 */
export async function finishRounds(pipeline: GovernancePipeline, call: RoundCall, outcome: ToolOutcome): Promise<void> {
  try {
    if (call.keyed) await keepEnd(pipeline.store, endKey(call.toolCallId), outcome);
  } catch {
    // The outcome stands and went to the client; the record below is still written.
  }
  if (call.auditId) await completeOpenRecord(pipeline, call.auditId, outcome, { toolCallId: call.toolCallId });
}
