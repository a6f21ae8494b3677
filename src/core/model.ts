/**
 * The canonical model: one shape that holds everything the three contracts
 * (MCEC, Durable Workflow, ContextOS) carry. Contract modules decode wire JSON
 * into it and encode it back out; the runtime produces it.
 *
 * Presence rules: a property that is `undefined` (or missing) is *absent* on
 * the wire; `null` is an explicit null where a contract allows one. Decoders
 * keep that difference so that `encode(decode(doc))` deep-equals `doc`.
 */
import type { JsonObject, JsonValue } from './json.js';
import { type ApprovalMode, type ErrorCategory, type OutcomeStatus, type PrincipalKind, defaultRetryable, isSuccessStatus } from './taxonomy.js';

/** A non-fatal condition that accompanies a result (MCEC `warnings[]`). */
export interface ToolWarning {
  /** Stable kebab-case code. */
  code: string;
  /** Human-readable explanation. */
  detail: string;
}

/**
 * The one structured error. `category` is always set (the closed MCEC set);
 * every other field is optional because some contracts do not carry it.
 */
export interface ToolError {
  /** Coarse class from the closed taxonomy; agents branch on it. */
  category: ErrorCategory;
  /**
   * True when the source document did not state a category and it was
   * inferred (from a Durable Workflow code/reason or a ContextOS status).
   * Encoders that can carry a category omit it when this is true, so that
   * the source round-trips unchanged.
   */
  categoryInferred?: boolean;
  /** Stable kebab-case refinement of the category (MCEC `code`, DW `code`). */
  code?: string | null;
  /** Human-readable explanation (MCEC `detail`, DW `message`, ContextOS `error`). */
  detail?: string | null;
  /** Machine reason (DW `reason`). */
  reason?: string | null;
  /** What the caller should do (DW `remediation`). */
  remediation?: string | null;
  /** Whether retrying the same call can succeed; see {@link defaultRetryable}. */
  retryable?: boolean | null;
  /** How long to wait before retrying, in milliseconds. */
  retryAfterMs?: number;
  /** Structured facts about the failure (DW `details`), e.g. per-field violations. */
  details?: JsonObject | null;
  /** The last good observation from a prior call in the session (MCEC). */
  lastObservation?: JsonObject | null;
  /** The failing call's own partial payload, kept on purpose (MCEC). */
  partialResult?: JsonObject | null;
  /** Properties of a wire error object that the model does not name (DW errors allow them). */
  extensions?: JsonObject;
  /**
   * True when the error was decoded from a Durable Workflow document, which
   * states exactly the error fields it wants on the wire. The DW encoder then
   * adds no per-category defaults (`code`, `reason`, `remediation`,
   * `retryable`), so that the source round-trips unchanged.
   */
  verbatim?: boolean;
  /**
   * The fields a Durable Workflow 14 decoder filled in from the document's `root_cause`
   * (`reason`, `retryable`) and `remediation` (`summary` as `remediation`) because the error
   * itself did not state them. The DW encoders leave them out again, so the source round-trips.
   */
  fromRootCause?: ('reason' | 'retryable' | 'remediation')[];
}

/** An MCP content block (`text`, `image`, `audio`, `resource`, `resource_link`, ...). */
export type ContentBlock = JsonObject & { type: string };

/** A human-readable preview of the result (Durable Workflow `payload_preview*`). */
export interface PayloadPreview {
  /** The preview text, at most `limitBytes` bytes of UTF-8. */
  text?: string | null;
  /** Whether anything was cut. */
  truncated?: boolean;
  /** The byte limit the preview was cut to. */
  limitBytes?: number;
}

/** The canonical outcome of one tool call. */
export interface ToolOutcome {
  /** One of the seven statuses; `ok`/`completed` mean the tool achieved its goal. */
  status: OutcomeStatus;
  /** The complete machine payload (any JSON). */
  result?: JsonValue;
  /** Non-fatal conditions. */
  warnings?: ToolWarning[];
  /** The failure; `null` is an explicit null on the wire. */
  error?: ToolError | null;
  /** The owning session (MCEC `sessionId`, ContextOS `session_id`). */
  sessionId?: string | null;
  /** ContextOS `run_id`. */
  runId?: string;
  /** ContextOS `trace_id` (W3C trace id when available). */
  traceId?: string;
  /** ContextOS `tool_call_id`. */
  toolCallId?: string;
  /** ContextOS `capability_id`: the tool's name. */
  capabilityId?: string;
  /** The policy decision that allowed or stopped the call. */
  policyDecisionId?: string | null;
  /** Wall time of the call in whole milliseconds, measured with a monotonic clock. */
  latencyMs?: number;
  /** References to produced files or objects. */
  artifacts?: string[];
  /** Sources the result cites. */
  citations?: JsonObject[];
  /** References to what the call changed. */
  mutations?: string[];
  /** Risk tags of the capability or the call. */
  riskTags?: string[];
  /** Open metadata (ContextOS `metadata`). */
  metadata?: JsonObject;
  /**
   * A byte-bounded human-readable preview of `result`. Absent: the DW encoder
   * computes one. `{}` (no field set): the source had no preview and none is written.
   */
  preview?: PayloadPreview;
  /** MCP content blocks for client compatibility. */
  content?: ContentBlock[];
  /** The contract version marker the source carried (Durable Workflow `version`). */
  schemaVersion?: number;
  /** Durable Workflow `meta`. */
  meta?: JsonObject;
  /**
   * Why the call ended as it did, as the workflow engine classified it (Durable Workflow 14
   * `root_cause`: `schema`, `version`, `category`, `reason`, `source {kind, id}`, `retryable`,
   * `severity`, `actionable`, ...). Kept as the document has it.
   */
  rootCause?: JsonObject | null;
  /** What can repair it (Durable Workflow 14 `remediation`: `classification`, `summary`, `automatic_repair`, `next_actions`). */
  remediationPlan?: JsonObject | null;
  /** The actions an agent may take next (Durable Workflow 14 `next_actions`: `code`, `label`, `tool`, `mutation`, `allowed`, `reason`). */
  nextActions?: JsonObject[];
  /** The change the call made or would make, and whether it is safe (Durable Workflow 14 `mutation`: `tool`, `operation`, `safe`, `applied`). */
  safeMutation?: JsonObject | null;
  /** Unknown top-level properties a contract allows (Durable Workflow); kept for round trips. */
  extensions?: JsonObject;
}

/** A principal in a ContextOS principal chain. */
export interface Principal {
  kind: PrincipalKind;
  id: string;
  tenant_id?: string;
  display?: string;
}

/** The canonical ContextOS tool **call** envelope. */
export interface ToolCall {
  toolCallId: string;
  runId: string;
  traceId: string;
  sessionId?: string;
  capabilityId: string;
  args: JsonObject;
  principalChain: Principal[];
  approvalModeRequested: ApprovalMode;
  approvalModeEffective: ApprovalMode;
  approvalModeHighest: ApprovalMode;
  policyDecisionId?: string | null;
  evidenceRefs: string[];
  idempotencyKey?: string | null;
  /** A reference to a credential, never the secret. */
  authRef?: string | null;
  metadata?: JsonObject;
}

/** True when the outcome achieved its goal (`status` is `ok` or `completed`). */
export function isOk(outcome: Pick<ToolOutcome, 'status'>): boolean {
  return isSuccessStatus(outcome.status);
}

/**
 * Builds a successful outcome.
 *
 * @example
 * ```ts
 * const outcome = success({ rows: 3 }, { warnings: [{ code: 'partial-page', detail: 'Only page 1.' }] });
 * ```
 */
export function success(result: JsonValue, init?: Omit<Partial<ToolOutcome>, 'status' | 'result'>): ToolOutcome {
  return { ...init, status: 'ok', result };
}

/** Builds a canonical error, filling `retryable` from the category when not given. */
export function toolError(category: ErrorCategory, code: string, detail: string, extra?: Omit<Partial<ToolError>, 'category' | 'code' | 'detail'>): ToolError {
  return { ...extra, category, code, detail, retryable: extra?.retryable ?? defaultRetryable(category) };
}

/**
 * Builds a failed outcome from an error.
 *
 * @example
 * ```ts
 * const outcome = failure(toolError('invalid-argument', 'missing-path', '`path` is required.'));
 * outcome.status; // 'error'
 * ```
 */
export function failure(error: ToolError, init?: Omit<Partial<ToolOutcome>, 'error'>): ToolOutcome {
  return { ...init, status: init?.status ?? 'error', error };
}
