/**
 * The gateway's public shapes: what it knows about one call (handed to the governor and the
 * recorder, with its confirmation hooks) and the governor and recorder hooks. The options of
 * `Gateway.start` are in gateway/options.ts.
 */
import type { InputRequests, Tool } from '@modelcontextprotocol/server';
import type { JsonObject, Principal, ToolOutcome, ApprovalMode } from 'tool-envelope/core';
import type { Identity } from '../governance/identity.js';

/**
 * The modern-era confirmation hooks of one call (set by `confirmationFor`, rounds/confirm.ts).
 *
 * @example
 * ```ts
 * const round: ConfirmRound = { caller: callerKeyOf(identity), ask: (requests, state) => input.defer(inputRequired({ inputRequests: requests, requestState: state })) };
 * ```
 */
export interface ConfirmRound {
  /** The caller's key (`callerKeyOf`, rounds/input.ts): the state is bound to it. */
  caller: string;
  /** Answers the client's call with an input round instead of its (paused) result. */
  ask(inputRequests: InputRequests, requestState: string): void;
}

/**
 * A modern-era client's retry that answers a confirmation: its state and responses, and who sent it.
 *
 * @example
 * ```ts
 * const a: ConfirmReply = { caller: callerKeyOf(identity), state: ctx.mcpReq.requestState() as string, responses: ctx.mcpReq.inputResponses };
 * ```
 */
export interface ConfirmReply {
  caller: string;
  state: string;
  responses: Record<string, unknown> | undefined;
}

/**
 * Everything the gateway knows about one tool call, handed to the governor and the recorder.
 *
 * @example
 * ```ts
 * const ctx: GatewayCall = { tool: 'files_read', upstream: 'files', upstreamTool: 'read', args: {}, mode: 'read_only',
 *   toolCallId: 'c1', runId: 'c1', traceId: '4bf92f3577b34da6a3ce929d0e0e4736', startedAt: Date.now() };
 * ```
 */
export interface GatewayCall {
  /** The tool name clients see (with prefix). */
  tool: string;
  upstream: string;
  /** The tool name on the upstream. */
  upstreamTool: string;
  args: JsonObject;
  /** The approval mode: from config, else derived from the upstream's annotations. */
  mode: ApprovalMode;
  idempotencyKey?: string;
  traceparent?: string;
  traceId: string;
  toolCallId: string;
  runId: string;
  /** The downstream session (Streamable HTTP session id), when there is one. */
  sessionId?: string;
  startedAt: number;
  /** The upstream tool's annotations. */
  annotations?: Tool['annotations'];
  /** The mode the call asks for, from `_meta` (unvalidated: an unknown mode is blocked by policy). */
  requestedMode?: string;
  /**
   * The call's principal chain: the session's verified chain, extended by the agents the client
   * declares in `_meta` (see `composeChain`).
   */
  principalChain?: Principal[];
  /** How many leading entries of `principalChain` are verified. */
  verifiedPrincipals?: number;
  /** The session's verified identity. */
  identity?: Identity;
  /**
   * Asks the calling client to confirm (MCP elicitation), when it supports it: `accept`, `decline`
   * or `cancel`. Used to approve a paused call from the client when policy lets its user approve it.
   */
  confirm?: (message: string) => Promise<'accept' | 'decline' | 'cancel'>;
  /** A modern-era client that declared elicitation: the confirmation goes to it in an input round (rounds/confirm.ts). */
  confirmRound?: ConfirmRound;
  /** A modern-era client's retry answering a confirmation round. */
  confirmReply?: ConfirmReply;
  /** Evidence refs from `_meta`. */
  evidenceRefs?: string[];
  /** `clientInfo.name` of the session that made the call. */
  clientName?: string;
}

/**
 * Runs one call through policy, idempotency and audit. `execute` performs the
 * upstream call and never throws for tool or upstream faults (they are outcomes).
 * The default (no governor) just runs `execute`.
 *
 * @example
 * ```ts
 * const governor: GatewayGovernor = {
 *   async run(call, execute) {
 *     if (call.mode === 'destructive') return failure(toolError('elevation', 'approval-required', 'Needs approval.'));
 *     return execute();
 *   },
 * };
 * ```
 */
export interface GatewayGovernor {
  run(call: GatewayCall, execute: () => Promise<ToolOutcome>): Promise<ToolOutcome>;
}

/**
 * Receives each finished call (after the answer was sent). Errors are logged, never thrown at the client.
 *
 * @example
 * ```ts
 * const recorder: GatewayRecorder = { record: (call, outcome, envelope) => console.log(call.tool, outcome.status) };
 * ```
 */
export interface GatewayRecorder {
  record(call: GatewayCall, outcome: ToolOutcome, envelope: JsonObject, endedAt: number): void;
  /** Flushes pending records. */
  flush?(): Promise<void>;
}
