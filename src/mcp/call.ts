/**
 * The gateway's public shapes: what it knows about one call (handed to the governor and the
 * recorder, with its confirmation hooks) and the governor and recorder hooks. The options of
 * `Gateway.start` are in gateway/options.ts.
 */
import type { CallToolResult, InputRequiredResult, InputRequests } from '@modelcontextprotocol/server';
import type { JsonObject, ToolOutcome } from 'tool-envelope/core';
import type { Executed, GovernedCall } from '../governance/pipeline.js';
import type { Identity } from '../governance/identity.js';

/** The modern-era confirmation hooks of one call (set by `confirmationFor`, rounds/confirm.ts). */
export interface ConfirmRound {
  /** The caller's key (`callerKeyOf`, rounds/input.ts): the state is bound to it. */
  caller: string;
  /** Answers the client's call with an input round instead of its (paused) result. */
  ask(inputRequests: InputRequests, requestState: string): void;
}

/** A modern-era client's retry that answers a confirmation: its state and responses, and who sent it. */
export interface ConfirmReply {
  caller: string;
  state: string;
  responses: Record<string, unknown> | undefined;
}

/**
 * Everything the gateway knows about one tool call: the call in the governance pipeline's own shape
 * (`GovernedCall`: tool, ceiling, arguments, principal chain, ids, ...; handed to the pipeline as it
 * is), plus the gateway's part (the upstream, the session's identity, the client's confirmation
 * hooks). Made once per call by `describeCall` (gateway/calls.ts); handed to the governor and the recorder.
 */
export interface GatewayCall extends GovernedCall {
  upstream: string;
  /** The tool name on the upstream (`tool` is the name clients see, with prefix). */
  upstreamTool: string;
  traceparent?: string;
  startedAt: number;
  /** The session's verified identity (its authentication, or the operator's). */
  caller?: Identity;
  /**
   * Asks the calling client to confirm (MCP elicitation), when it supports it: `accept`, `decline`
   * or `cancel`. Used to approve a paused call from the client when policy lets its user approve it.
   */
  confirm?: (message: string) => Promise<'accept' | 'decline' | 'cancel'>;
  /** A modern-era client that declared elicitation: the confirmation goes to it in an input round (rounds/confirm.ts). */
  confirmRound?: ConfirmRound;
  /** A modern-era client's retry answering a confirmation round. */
  confirmReply?: ConfirmReply;
  /** `clientInfo.name` of the session that made the call. */
  clientName?: string;
}

/**
 * What the gateway's execute step gives back (the pipeline's `Executed`): the call's outcome, and
 * beside it what the client's answer is made from. Made once where the upstream answers; the
 * pipeline hands it back whole, and the answer is built from it in one place (`Gateway.answer`).
 */
export interface CallExecuted extends Executed {
  /** The upstream's answer as it came: its content blocks and other fields reach the client as they are. */
  raw?: CallToolResult;
  /** An upstream's input round: not the call's outcome (no envelope, no record); the client gets it as it is. */
  round?: InputRequiredResult;
  /** A task for a caller that declared the tasks extension (its id a bound handle), handed back as it is. */
  task?: JsonObject;
}

/**
 * Runs one call through policy, idempotency and audit. `execute` performs the
 * upstream call and never throws for tool or upstream faults (they are outcomes).
 * The default (no governor) just runs `execute`.
 */
export interface GatewayGovernor {
  run(call: GatewayCall, execute: () => Promise<ToolOutcome>): Promise<ToolOutcome>;
  /** Told of a `tools/call` refused before it ran because no upstream has its name (it never reaches `run`). */
  unknownTool?(): void;
}

/** Receives each finished call (after the answer was sent). Errors are logged, never thrown at the client. */
export interface GatewayRecorder {
  record(call: GatewayCall, outcome: ToolOutcome, envelope: JsonObject, endedAt: number): void;
  /** Flushes pending records. */
  flush?(): Promise<void>;
}
