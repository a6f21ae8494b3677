/**
 * The types of the governance pipeline: a call as the pipeline sees it, how it is executed, the
 * outcomes the pipeline makes itself, and the pipeline's options.
 */
import type { JsonObject, Principal, ToolCall, ToolError, ToolOutcome, ApprovalMode, OutcomeStatus } from 'tool-envelope/core';
import type { AuditWriterOptions } from '../store/audit-writer.js';
import type { OperatorKey } from '../store/operator-key.js';
import type { Store } from '../store/types.js';
import type { ApprovalEventSink } from './approval-events.js';
import type { IdempotencyOptions } from './idempotency.js';
import type { Policy, PolicyIdentity } from './policy-types.js';

/**
 * How a call is executed once governance allows it. Resolves to the outcome; rejects only for a
 * library error (the call then did not run).
 */
export type Execute = (call: ToolCall) => Promise<ToolOutcome>;

/**
 * What a caller's execute step gives back: the outcome, and whatever the caller carries beside it for
 * its own answer (the gateway: the upstream's raw result, an input round, a task). The pipeline reads
 * the outcome and hands the whole value back in {@link Governed.answer}, untouched.
 */
export interface Executed {
  outcome: ToolOutcome;
}

/** The execute step of {@link GovernancePipeline.run}: runs the allowed call, at most once. */
export type ExecuteStep<R extends Executed> = (call: ToolCall) => Promise<R>;

/** What one governed run ends with. */
export interface Governed<R extends Executed> {
  /** The call's outcome as governance leaves it (blocked, paused, refused, replayed or executed), with the call's ids. */
  outcome: ToolOutcome;
  /** The execute step's value when it ran in this run, or the `replayed` hook's for a replay. */
  answer?: R;
  /** The id of the call's open `started` record, when the call goes on past its outcome ({@link RunHooks.goesOn}). */
  auditId?: string;
}

/** An outcome the pipeline makes itself (blocked, paused, rejected, refused). */
export interface SyntheticInit {
  status: OutcomeStatus;
  error?: ToolError | null;
  metadata?: JsonObject;
  latencyMs?: number;
}

/** Builds a synthetic outcome for a call (the governed runtime passes its runtime's, which emits events). */
export type Synthesize = (call: ToolCall, init: SyntheticInit) => ToolOutcome;

/** What a caller of {@link GovernancePipeline.run} may add to one run. */
export interface RunHooks<R extends Executed = Executed> {
  synthesize?: Synthesize;
  /**
   * Asked with the executed outcome: true when the call goes on past it (a task its caller polls).
   * The call's `started` record is then left open (read as `interrupted` should the process end
   * first) and `finish` completes it, once, with the call's end; the idempotency record keeps the
   * executed outcome. `auditId` is the id of that open record, for a call whose end is completed
   * elsewhere (an input round's final retry, which may reach another replica).
   */
  goesOn?: (executed: R, finish: (end: ToolOutcome) => Promise<void>, auditId: string | undefined) => boolean;
  /**
   * Told the id of the call's `started` record once it is written, before `execute` runs: a call
   * whose end may be seen by another process (a task's handle carries it) names the record to complete.
   */
  begun?: (auditId: string) => void;
  /** The current answer of a replayed outcome (a stored task resolved to its state or end), asked before the replay is recorded. */
  replayed?: (stored: ToolOutcome) => Promise<R>;
}

/** One call, as the pipeline sees it. */
export interface GovernedCall {
  /** The tool name recorded (ContextOS `capability_id`). */
  tool: string;
  /** The tool's declared ceiling. */
  ceiling: ApprovalMode;
  /** The mode the tool needs for this call (default: the ceiling). */
  requiredMode?: ApprovalMode;
  riskTags?: readonly string[];
  /** The JSON form of the arguments (policy, fingerprint, envelope and digest see these). */
  args: JsonObject;
  /** The mode the call asks for (unvalidated; default: the ceiling). */
  requestedMode?: unknown;
  principalChain: readonly Principal[];
  /**
   * How many leading entries of the chain were verified (authentication, the operator); the rest
   * were declared by the caller. Default: all.
   */
  verifiedPrincipals?: number;
  evidenceRefs?: readonly string[];
  idempotencyKey?: string | null;
  authRef?: string | null;
  metadata?: JsonObject;
  toolCallId: string;
  runId: string;
  traceId: string;
  sessionId?: string;
  /** The verified identity (roles, claims) policy conditions see; default: the verified head of the chain. */
  identity?: PolicyIdentity;
  /** The tool's MCP annotations, for policy conditions (`tool.annotations`). */
  toolAnnotations?: JsonObject;
}

export interface GovernanceOptions {
  store: Store;
  /** Default: {@link defaultPolicy}. */
  policy?: Policy;
  /** Calls whose effective mode is at least this need an idempotency key (default `local_write`; `false`: never). */
  requireIdempotencyKeyFrom?: ApprovalMode | false;
  /** How long an approval request stays open (default 24 h; `null`: never expires). */
  approvalTtlMs?: number | null;
  idempotency?: IdempotencyOptions;
  /** Options of the audit writer created for the store, or `false` for no audit log. */
  audit?: AuditWriterOptions | false;
  /**
   * The key approvals are signed and verified with. Default: {@link loadOperatorKey} with
   * `create: true` (`TOOL_ENVELOPE_KEY`, else the private key file), loaded on first use.
   */
  operatorKey?: OperatorKey | (() => Promise<OperatorKey>);
  /** May a principal of the call's own (verified) chain approve it? Default `false`. */
  allowSelfApproval?: boolean;
  /** The executor of a tool, for calls approved after their caller got `paused`. */
  executorFor?: (tool: string) => Execute | undefined;
  /** Builds synthetic outcomes (default: from the call's ids, capability and `riskTags`). */
  synthesize?: Synthesize;
  /** Keep an outcome's MCP `content` blocks in its audit record (default `true`; the gateway keeps the upstream's out). */
  auditContent?: boolean;
  /** Told when this process opens, decides, expires or runs an approval request (approval-events.ts); must not throw. */
  onApprovalEvent?: ApprovalEventSink;
  /**
   * An approved request runs only this long after its decision (default 15 min; `null`: any time):
   * one found later (no process ran it meanwhile) is settled `expired` instead.
   */
  approvalRunWindowMs?: number | null;
}
