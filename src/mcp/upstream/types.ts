/**
 * The plain types of an upstream connection: where an upstream lives ({@link UpstreamSpec}), how it is
 * supervised, and how a request to it failed ({@link UpstreamFault}). The connection itself is
 * `Upstream` in upstream/upstream.ts.
 */
import type { RequestOptions } from '@modelcontextprotocol/client';
import type { CompiledFailureRules, ApprovalMode } from 'tool-envelope/core';

/** Where an upstream lives and how the gateway presents it. */
export interface UpstreamSpec {
  /** A short name used in logs, in the audit log and in envelopes. */
  name: string;
  /** Prepended to every tool (and prompt) name the upstream publishes; empty by default. */
  prefix?: string;
  /** A stdio upstream: the command to spawn. */
  command?: string;
  /** Arguments of `command`. */
  args?: string[];
  /** Environment variables set for the child, over the inherited ones (see `upstreamEnvironment`); they win over the deny-list. */
  env?: Record<string, string>;
  /**
   * Whether the child inherits the gateway's environment minus the gateway's secrets
   * (`GATEWAY_SECRET_ENV` in upstream/env.ts); default `true`. `false` (`--env-clear`) keeps only the SDK's minimal
   * set (PATH, HOME, USER, SHELL, TERM, LOGNAME) plus `env`.
   */
  inheritEnv?: boolean;
  /** Working directory of the child. */
  cwd?: string;
  /** A Streamable HTTP upstream: its URL. */
  url?: string;
  /** Extra HTTP headers sent to an HTTP upstream. */
  headers?: Record<string, string>;
  /** Per-tool approval modes (upstream tool names, without prefix); otherwise derived from annotations. */
  modes?: Record<string, ApprovalMode>;
  /** Plain-failure rules for this upstream's `isError` results, tried before the shipped ones. */
  failureRules?: CompiledFailureRules;
  /**
   * Largest request (JSON bytes) the upstream can take. A larger call is refused with an envelope
   * before it is sent, so that one caller cannot crash an upstream others share. Default: 8 MiB for a
   * stdio upstream (the SDK's stdio servers stop at 10 MiB a message), 16 MiB for an HTTP one.
   */
  maxRequestBytes?: number;
  /**
   * How the upstream is shared: `shared` (default, one process), `tenant` (one instance per tenant of
   * the verified principal) or `session` (one per client session), for upstreams that keep state.
   */
  isolation?: 'shared' | 'tenant' | 'session';
  /** Most instances of an isolated upstream at once (default 100). */
  maxInstances?: number;
  /**
   * Which MCP era to speak: `auto` (default) probes with `server/discover` and falls back to the
   * 2025 `initialize` handshake; `legacy` only initializes (2025-11-25 and before); `modern` requires
   * 2026-07-28. The verdict of the first connection is kept for the restarts.
   */
  era?: UpstreamEra;
  /**
   * Refuse a 2026-07-28 result without `resultType` as the revision says (`upstream-protocol-error`).
   * Default false: it is read as `complete`, with a warning in the log (upstream/result-type.ts).
   */
  strict?: boolean;
}

/** The MCP era spoken to an upstream (see {@link UpstreamSpec.era}). */
export type UpstreamEra = 'auto' | 'legacy' | 'modern';

/** Timing of supervision. All values are milliseconds. */
export interface SupervisionOptions {
  /** First restart delay; doubles on each consecutive failure. Default 200. */
  restartInitialDelayMs?: number;
  /** Ceiling of the restart delay. Default 10 000. */
  restartMaxDelayMs?: number;
  /** How long `initialize` may take. Default 10 000. */
  connectTimeoutMs?: number;
  /** Interval of health pings; 0 disables them. Default 10 000. */
  healthIntervalMs?: number;
  /** A ping that takes longer marks the upstream hung; it is killed and restarted. Default 5 000. */
  healthTimeoutMs?: number;
}

/**
 * How a request to an upstream failed, when it did not return a result.
 *
 * - `exited`: the upstream exited or closed the connection while the request was in flight.
 * - `hung`: the upstream stopped answering health pings and was restarted.
 * - `timeout`: no answer within the deadline.
 * - `unavailable`: the upstream is down (restarting) and did not come back in time.
 * - `protocol`: the upstream wrote output that is not MCP, or an answer that is not a valid result.
 * - `too-large`: the upstream's answer is over the result size limit; it was dropped, the connection stays up.
 * - `cancelled`: the caller cancelled the request.
 * - `rpc`: the upstream answered with a JSON-RPC error (a protocol fault to forward unchanged).
 */
export type UpstreamFaultKind = 'exited' | 'hung' | 'timeout' | 'unavailable' | 'protocol' | 'too-large' | 'cancelled' | 'rpc';

/** A classified failure of one request to an upstream. */
export class UpstreamFault extends Error {
  readonly kind: UpstreamFaultKind;
  readonly upstream: string;
  /** For `rpc`: the JSON-RPC error code and data the upstream sent. */
  readonly rpcCode?: number;
  readonly rpcData?: unknown;
  /** For `unavailable`: when the next restart attempt is due, in ms from now. */
  readonly retryAfterMs?: number;
  /** For `exited` and `unavailable` of a child process: the last lines of its stderr. */
  readonly stderr?: string[];

  constructor(
    kind: UpstreamFaultKind,
    upstream: string,
    message: string,
    extra?: { rpcCode?: number; rpcData?: unknown; retryAfterMs?: number; cause?: unknown; stderr?: string[] },
  ) {
    super(message, extra?.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'UpstreamFault';
    this.kind = kind;
    this.upstream = upstream;
    if (extra?.rpcCode !== undefined) this.rpcCode = extra.rpcCode;
    if (extra?.rpcData !== undefined) this.rpcData = extra.rpcData;
    if (extra?.retryAfterMs !== undefined) this.retryAfterMs = extra.retryAfterMs;
    if (extra?.stderr !== undefined && extra.stderr.length > 0) this.stderr = extra.stderr;
  }
}

/** The state of an upstream connection. */
export type UpstreamState = 'idle' | 'connecting' | 'ready' | 'backoff' | 'closed';

/** The message of a JSON-RPC error without the `MCP error <code>: ` prefix v1 of the SDK put on it. */
export function stripMcpPrefix(err: { code: number; message: string }): string {
  const prefix = `MCP error ${err.code}: `;
  return err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
}

/** A request option bag for `Upstream.request`. */
export interface UpstreamRequestOptions {
  /** Caller cancellation. */
  signal?: AbortSignal;
  /** Deadline of the request in ms. */
  timeoutMs: number;
  /** How long to wait for a restarting upstream before answering `unavailable`; capped by the deadline. */
  waitReadyMs?: number;
  /** Progress from the upstream (its token already mapped back by the caller). */
  onprogress?: RequestOptions['onprogress'];
  /** HTTP headers of this request (a URL upstream; `Mcp-Param-*` of a 2026-07-28 `tools/call`). */
  headers?: Record<string, string>;
  /** A 2026-07-28 upstream's `input_required` answer comes back as it is, for the gateway to relay (rounds/relay.ts), instead of being fulfilled by this client. */
  allowInputRequired?: boolean;
}
