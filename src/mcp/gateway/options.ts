/** The options of `Gateway.start` (gateway.ts); the package exports them from `tool-envelope/mcp` (index.ts). */
import type { ApprovalMode } from 'tool-envelope/core';
import type { Identity } from '../../governance/identity.js';
import type { TaskHandleTable } from '../../store/index.js';
import type { Dialect } from '../envelope.js';
import type { GatewayGovernor, GatewayRecorder } from '../call.js';
import type { GatewayGovernance } from './governor.js';
import type { OutputSchemaStyle } from './output-schema.js';
import type { SupervisionOptions, UpstreamSpec } from '../upstream/upstream.js';

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
  /**
   * With `governance` and `taskHandles`: a paused call of a client that declared the tasks extension
   * is answered as a task that ends with the request's decision (src/mcp/tasks/approval-tasks.ts),
   * and the gateway advertises the extension whatever its upstreams do.
   */
  approvalTasks?: boolean;
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
  /**
   * Most tool calls one session may have in flight (default 1024). One more is refused with JSON-RPC
   * error -32000 until one answers: a client sending calls without waiting cannot grow the gateway
   * without bound (50 000 pending calls held 930 MB).
   */
  maxCallsInFlight?: number;
  /** The `outputSchema` of each tool: `compact` (default, the fields agents branch on) or `full` (the whole contract). */
  outputSchema?: OutputSchemaStyle;
  /**
   * Draft (off by default): a failed call's result also carries MCP's draft ToolFailure metadata,
   * `_meta["io.modelcontextprotocol/toolFailure"]` (SEP PR #3313), mapped from the canonical error;
   * an upstream's own is relayed unchanged (docs/mcp.md#toolfailure-draft).
   */
  toolFailureMeta?: boolean;
}
