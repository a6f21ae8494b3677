/**
 * Approve from the client, for both eras: a 2025-era client gets an `elicitation/create` on the call's
 * stream; a 2026-07-28 client, with no session to be asked on, gets `input_required` with the same
 * elicitation and a `requestState` (`tec_` + the facts + an HMAC over them and the caller's identity,
 * keyed from the operator key, so any replica can take the retry). A state is refused (one error for
 * all) when forged, another caller's, for other arguments, or used before (claimed atomically in the store).
 */
import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';
import { inputRequired, inputResponse, ProtocolErrorCode, type Server, type ServerContext } from '@modelcontextprotocol/server';
import { decodeContextosCall, ToolEnvelopeError, type JsonObject, type ToolOutcome } from 'tool-envelope/core';
import { canonicalJson } from '../../governance/idempotency.js';
import type { GovernancePipeline } from '../../governance/pipeline.js';
import { elevation } from '../../governance/pipeline-outcomes.js';
import type { ApprovalRequest, Store } from '../../store/types.js';
import type { ConfirmReply, GatewayCall } from '../call.js';
import { callerKeyOf, type InputCall, modernClientCapabilities } from './input.js';
import { rpcError } from '../wire/rpc-errors.js';

/** The key of the confirmation in `inputRequests` / `inputResponses`. */
export const CONFIRM_INPUT_KEY = 'confirm';

/** How long a modern client's confirmation state stays answerable by default: 10 minutes. */
export const DEFAULT_CONFIRM_WINDOW_MS = 10 * 60_000;

const PREFIX = 'tec_';
const SHAPE = /^tec_([A-Za-z0-9_-]{8,1024})\.([A-Za-z0-9_-]{43})$/;
const PURPOSE = 'tool-envelope/confirm-state/v1';

/** The client's answer to a confirmation. */
export type ConfirmAnswer = 'accept' | 'decline' | 'cancel';

/** The one answer to a confirmation state that is forged, modified, another caller's, used, or for another call. */
function refused(): Error {
  return rpcError(
    ProtocolErrorCode.InvalidParams,
    'Unknown or used requestState: a confirmation is answered once, by the caller it was asked of, for the same call',
  );
}

/** True for a `requestState` of a confirmation round (as opposed to an upstream's input round). */
export function isConfirmState(state: unknown): state is string {
  return typeof state === 'string' && state.startsWith(PREFIX);
}

/** The `elicitation/create` params that ask a client to confirm a call. */
export function confirmElicitation(message: string): {
  message: string;
  requestedSchema: { type: 'object'; properties: { approve: { type: 'boolean'; title: string; description: string; default: boolean } }; required: string[] };
} {
  return {
    message,
    requestedSchema: {
      type: 'object',
      properties: { approve: { type: 'boolean', title: 'Approve', description: 'Run this call now', default: true } },
      required: ['approve'],
    },
  };
}

/**
 * Reads a client's elicitation result as a confirmation: `accept` only for an accept that did not
 * say `approve: false`; anything that is not an elicitation result is `cancel`.
 */
export function confirmAnswerOf(result: unknown): ConfirmAnswer {
  const view = inputResponse({ r: result }, 'r');
  if (view.kind !== 'elicit') return 'cancel';
  if (view.action !== 'accept') return view.action;
  return view.content?.approve === false ? 'decline' : 'accept';
}

/** Asks the client of a 2025-era request to confirm (MCP elicitation): `accept`, `decline` or `cancel`. */
export async function confirmWith(ctx: ServerContext, message: string): Promise<ConfirmAnswer> {
  // Related to the call being confirmed, so that over HTTP it travels on that call's own stream.
  const r = await ctx.mcpReq.send({ method: 'elicitation/create', params: confirmElicitation(message) });
  return confirmAnswerOf(r);
}

/**
 * How the client of one call may be asked to confirm it: a 2025-era session's client that declared
 * elicitation is asked directly; a modern-era client that declared it gets an input round; a retry
 * carrying a confirmation state is its answer (refused when the gateway has no governance to
 * decide it).
 */
export function confirmationFor(
  ctx: ServerContext,
  { server, caller, input, governed }: { server: Server | undefined; caller: string; input: InputCall | undefined; governed: boolean },
): Pick<GatewayCall, 'confirm' | 'confirmRound' | 'confirmReply'> {
  const state = ctx.mcpReq.requestState();
  if (isConfirmState(state)) {
    if (!governed || !input) throw refused();
    return { confirmReply: { caller, state, responses: ctx.mcpReq.inputResponses } };
  }
  if (input) {
    if (!modernClientCapabilities(ctx)?.elicitation) return {};
    return { confirmRound: { caller, ask: (inputRequests, requestState) => input.defer(inputRequired({ inputRequests, requestState })) } };
  }
  return server?.getClientCapabilities()?.elicitation ? { confirm: (message: string) => confirmWith(ctx, message) } : {};
}

/** What a confirmation state says, once its MAC verified. */
interface ConfirmFacts {
  approvalId: string;
  tool: string;
  expiresAt: number;
  nonce: string;
}

/** The digest of a call's arguments that a round's state is bound to (canonical JSON, SHA-256). */
export function argsDigest(args: JsonObject): string {
  return createHash('sha256').update(canonicalJson(args)).digest('base64url');
}

/** The MAC of a round's state: HMAC-SHA-256 over its payload and the caller's key ({@link callerKeyOf}). */
export function stateMac(key: KeyObject, payload: string, caller: string): Buffer {
  return createHmac('sha256', key).update(`${payload}\n${caller}`).digest();
}

/** True when `tag` (base64url) is the MAC of `payload` for `caller`, compared in constant time. */
export function macMatches(key: KeyObject, payload: string, caller: string, tag: string): boolean {
  const want = stateMac(key, payload, caller);
  const got = Buffer.from(tag, 'base64url');
  return got.length === want.length && timingSafeEqual(got, want);
}

/** A one-time token: its store key, the id it is recorded under, and the tool it is for. */
export interface OneTimeToken {
  key: string;
  id: string;
  tool: string;
}

/**
 * Uses a one-time token up, once across every replica on the store (an atomic idempotency claim):
 * false when it was used before.
 */
export async function useOnce(store: Pick<Store, 'claimIdempotency' | 'completeIdempotency'>, token: OneTimeToken, now = Date.now()): Promise<boolean> {
  const { key, id, tool } = token;
  const claimToken = randomUUID();
  const claim = await store.claimIdempotency({ key, fingerprint: id, tool, toolCallId: id, claimToken, createdAt: now });
  if (!claim.claimed) return false;
  await store.completeIdempotency(key, claimToken, { state: 'used' }, now);
  return true;
}

/**
 * The key a gateway's round states are MACed with: derived from the operator key for `purpose`, so
 * every replica that shares the operator key can read them.
 */
export function roundKey(pipeline: Pick<GovernancePipeline, 'operatorKey'>, purpose: string): Promise<KeyObject> {
  return pipeline.operatorKey().then((k) => k.derive(purpose));
}

/** The confirmation states of one governance: issued for a paused call, read back on its retry. */
export class ConfirmStates {
  private key: Promise<KeyObject> | undefined;

  constructor(
    private readonly pipeline: GovernancePipeline,
    private readonly windowMs = DEFAULT_CONFIRM_WINDOW_MS,
  ) {
    if (!(windowMs > 0)) throw new ToolEnvelopeError('invalid-option', 'confirmWindowMs must be a positive number');
  }

  private secret(): Promise<KeyObject> {
    // Derived from the operator key, so every replica that can run approvals can read the states.
    this.key ??= roundKey(this.pipeline, PURPOSE);
    return this.key;
  }

  /** A state for the caller's confirmation of a pending approval; it expires with the window or the approval, whichever is first. */
  async issue(caller: string, approval: Pick<ApprovalRequest, 'id' | 'tool' | 'expiresAt'>, args: JsonObject, now = Date.now()): Promise<string> {
    const expiresAt = Math.min(now + this.windowMs, approval.expiresAt ?? Number.POSITIVE_INFINITY);
    const facts = [1, approval.id, approval.tool, argsDigest(args), expiresAt, randomBytes(16).toString('base64url')];
    const payload = Buffer.from(JSON.stringify(facts)).toString('base64url');
    return `${PREFIX}${payload}.${stateMac(await this.secret(), payload, caller).toString('base64url')}`;
  }

  /** The facts of a state issued to this caller for this tool and these arguments; anything else is refused. */
  async read(state: string, caller: string, tool: string, args: JsonObject): Promise<ConfirmFacts> {
    const m = SHAPE.exec(state);
    if (!m) throw refused();
    const [, payload, tag] = m as unknown as [string, string, string];
    if (!macMatches(await this.secret(), payload, caller, tag)) throw refused();
    const [v, approvalId, forTool, digest, expiresAt, nonce] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown[];
    if (v !== 1 || typeof approvalId !== 'string' || typeof expiresAt !== 'number' || typeof nonce !== 'string') throw refused();
    if (forTool !== tool || digest !== argsDigest(args)) throw refused();
    return { approvalId, tool, expiresAt, nonce };
  }

  /** Uses a state up, once across every replica on the store: false when it was used before. */
  use(facts: ConfirmFacts, now = Date.now()): Promise<boolean> {
    return useOnce(this.pipeline.store, { key: `cs1:${facts.nonce}`, id: facts.approvalId, tool: facts.tool }, now);
  }

  /**
   * Decides a paused call from its client's answer to a confirmation round: accept approves it (it
   * runs once, through the signed approval path), decline rejects it; cancel, no answer, an expired
   * state or an approval decided meanwhile give the paused envelope (the request stays with the
   * other approvers).
   */
  async answer(call: GatewayCall, reply: ConfirmReply, approver: string): Promise<ToolOutcome> {
    const facts = await this.read(reply.state, reply.caller, call.tool, call.args);
    if (!(await this.use(facts))) throw refused();
    const a = await this.pipeline.store.getApproval(facts.approvalId);
    // The approval must be this caller's own paused call, with the arguments the client sends again.
    if (!a || a.tool !== call.tool || !a.principalChain[0] || callerKeyOf({ principal: a.principalChain[0] }) !== reply.caller) throw refused();
    if (canonicalJson(decodeContextosCall(a.callEnvelope).args) !== canonicalJson(call.args)) throw refused();
    const answer = Date.now() > facts.expiresAt ? 'cancel' : confirmAnswerOf(reply.responses?.[CONFIRM_INPUT_KEY]);
    if (a.state === 'pending' && a.policyDecision?.selfApproval === true) {
      try {
        if (answer === 'accept') return await this.pipeline.approve(a.id, { approver, reason: 'confirmed in the client' });
        if (answer === 'decline') return await this.pipeline.reject(a.id, { approver, reason: 'declined in the client' });
      } catch (err) {
        // Decided meanwhile by another approver: the paused answer, as on a 2025-era session.
        if (!(err instanceof ToolEnvelopeError)) throw err;
      }
    }
    return pausedOutcome(call, a);
  }
}

/** The paused envelope of an approval that waits (or was decided by someone else meanwhile). */
function pausedOutcome(call: GatewayCall, a: ApprovalRequest): ToolOutcome {
  return {
    status: 'paused',
    toolCallId: call.toolCallId,
    runId: call.runId,
    traceId: call.traceId,
    capabilityId: call.tool,
    latencyMs: 0,
    policyDecisionId: a.policyDecision?.id ?? null,
    error: elevation('approval-required', `Waiting for an approver (${a.id}): ${a.reason}`, { approvalId: a.id }),
    metadata: { approvalId: a.id },
  };
}
