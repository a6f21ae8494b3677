/**
 * The gateway's public shapes: what it knows about one call (handed to the governor and the
 * recorder), the governor and recorder hooks, and the options of `Gateway.start`.
 */
import type { Tool } from '@modelcontextprotocol/server';
import type { JsonObject, Principal, ToolOutcome, ApprovalMode } from 'tool-envelope/core';
import type { Identity } from '../governance/identity.js';
import type { ConfirmReply, ConfirmRound } from './confirm-rounds.js';
import type { Dialect } from './envelope.js';
import type { GatewayGovernance } from './governance.js';
import type { TaskHandleTable } from '../store/index.js';
import type { OutputSchemaStyle } from './output-schema.js';
import type { SupervisionOptions, UpstreamSpec } from './upstream.js';

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
  /** A modern-era client that declared elicitation: the confirmation goes to it in an input round (confirm-rounds.ts). */
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

/**
 * Options of {@link Gateway.start}.
 *
 * @example
 * ```ts
 * const gw = await Gateway.start({ upstreams: [{ name: 'everything', command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] }], dialect: 'dw' });
 * ```
 */
export interface GatewayOptions {
  upstreams: UpstreamSpec[];
  /** The contract of the envelopes; default `mcec`. */
  dialect?: Dialect;
  /** Deadline of each tool call in ms; default 30 000. */
  deadlineMs?: number;
  /** Deadline of every other forwarded request in ms; default 60 000. */
  requestTimeoutMs?: number;
  /** Byte limit of previews (DW `payload_preview`, the text block of gateway-made envelopes); default 4096. */
  previewLimitBytes?: number;
  /** Approval modes by gateway tool name (with prefix); override the upstream spec's `modes` and annotations. */
  modes?: Record<string, ApprovalMode>;
  /** Restart and health-check timing. */
  supervision?: SupervisionOptions;
  /** How long a call waits for a restarting upstream before answering `upstream-unavailable`; default 5 000. */
  waitReadyMs?: number;
  /**
   * Policy, idempotency, approvals and audit (see {@link GatewayGovernance}). With it, the audit log
   * is written by the governance: do not also pass a `StoreRecorder` for the same store.
   */
  governance?: GatewayGovernance;
  /**
   * The store's table of task handles (`store.taskHandles`): with it the gateway routes the tasks
   * extension (`io.modelcontextprotocol/tasks`) of 2026-07-28 upstreams through caller-bound
   * handles (docs/mcp.md#tasks). Without it, task requests are refused.
   */
  taskHandles?: TaskHandleTable;
  /** How long a task handle lives at most, in ms (default one day; shorter when the upstream's `ttlMs` is). */
  taskHandleTtlMs?: number;
  /** Wraps each call (after governance, so it sees the governed outcome), e.g. `traceGateway()`. */
  governor?: GatewayGovernor;
  recorder?: GatewayRecorder;
  /** Diagnostics (never written to stdout, which may carry the protocol). */
  log?: (line: string) => void;
  /** `serverInfo` of the gateway; defaults to `tool-envelope-gateway`. */
  name?: string;
  /**
   * The verified identity of sessions created without one (stdio, unauthenticated loopback HTTP):
   * the operator's. Default: the governance's `principalChain` when given, else the OS user.
   */
  identity?: Identity;
  /** Largest tool result in bytes, on both hops (from the upstream, to the client); default 10 MiB. Over it: `result-too-large`. */
  maxResultBytes?: number;
  /** The `outputSchema` of each tool: `compact` (default, the fields agents branch on) or `full` (the whole contract). */
  outputSchema?: OutputSchemaStyle;
}
