/**
 * A supervised connection to one upstream MCP server (a child process over
 * stdio, or a Streamable HTTP URL), made with the official SDK `Client`.
 *
 * The connection restarts itself with exponential backoff when the upstream
 * exits, fails to start or stops answering health pings, and classifies the
 * way a request failed (`exited`, `timeout`, `hung`, `unavailable`,
 * `protocol`), so the gateway can answer each call with an envelope instead of
 * dying of an upstream fault.
 */
import { PACKAGE_VERSION } from '../version.js';
import type { CompiledFailureRules } from '../core/plain-failure.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  McpError,
  ResultSchema,
  type Implementation,
  type Notification,
  type Request,
  type Result,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import type { ApprovalMode } from '../core/taxonomy.js';
import { upstreamEnvironment } from './env.js';
import { nodeHttpFetch } from './fetch.js';
import { TOO_LARGE_MARK } from './result-size.js';
import { describeExit } from './stderr-tail.js';
import { ChildProcessTransport, type ChildProcessParams } from './stdio.js';

/**
 * Where an upstream lives and how the gateway presents it.
 *
 * @example
 * ```ts
 * const spec: UpstreamSpec = { name: 'files', command: 'node', args: ['server.js'], prefix: 'files_' };
 * ```
 */
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
   * (`GATEWAY_SECRET_ENV` in env.ts); default `true`. `false` (`--env-clear`) keeps only the SDK's minimal
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
}

/**
 * Timing of supervision. All values are milliseconds.
 *
 * @example
 * ```ts
 * const s: SupervisionOptions = { restartInitialDelayMs: 100, restartMaxDelayMs: 5_000, healthIntervalMs: 0 };
 * ```
 */
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
 *
 * @example
 * ```ts
 * if (fault.kind === 'rpc') throw fault.error;
 * ```
 */
export type UpstreamFaultKind = 'exited' | 'hung' | 'timeout' | 'unavailable' | 'protocol' | 'too-large' | 'cancelled' | 'rpc';

/**
 * A classified failure of one request to an upstream.
 *
 * @example
 * ```ts
 * const f = new UpstreamFault('timeout', 'files', 'No answer within 30000 ms.');
 * ```
 */
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

/**
 * The state of an upstream connection.
 *
 * @example
 * ```ts
 * upstream.state === 'ready';
 * ```
 */
export type UpstreamState = 'idle' | 'connecting' | 'ready' | 'backoff' | 'closed';

/**
 * Callbacks of an {@link Upstream}.
 *
 * @example
 * ```ts
 * const hooks: UpstreamHooks = { onNotification: (n) => console.log(n.method) };
 * ```
 */
export interface UpstreamHooks {
  /** Any notification the upstream sends (list_changed, resources/updated, message, ...), except progress. */
  onNotification?: (notification: Notification, upstream: Upstream) => void;
  /** A request the upstream sends to its client (sampling, elicitation, roots). */
  onRequest?: (request: Request, signal: AbortSignal, upstream: Upstream) => Promise<Result>;
  /** A line of diagnostics (the child's stderr, restarts, protocol errors). */
  log?: (line: string) => void;
  /** Every state change. */
  onState?: (state: UpstreamState, upstream: Upstream) => void;
}

/** A request option bag for {@link Upstream.request}. */
export interface UpstreamRequestOptions {
  /** Caller cancellation. */
  signal?: AbortSignal;
  /** Deadline of the request in ms. */
  timeoutMs: number;
  /** How long to wait for a restarting upstream before answering `unavailable`; capped by the deadline. */
  waitReadyMs?: number;
  /** Progress from the upstream (its token already mapped back by the caller). */
  onprogress?: RequestOptions['onprogress'];
}

interface Connection {
  client: Client;
  transport: Transport;
  /** Why the gateway itself is closing this connection, if it is. */
  killedFor?: 'hung' | 'close';
  /** Count of undecodable lines seen on this connection. */
  protocolErrors: number;
  pid?: number | null;
}

const CLIENT_INFO: Implementation = { name: 'tool-envelope-gateway', version: PACKAGE_VERSION };

/**
 * A supervised SDK `Client` for one upstream server.
 *
 * @example
 * ```ts
 * const up = new Upstream({ name: 'everything', command: 'node', args: ['server.js'] });
 * await up.start();
 * const tools = await up.request({ method: 'tools/list' }, { timeoutMs: 5_000 });
 * await up.close();
 * ```
 */
export class Upstream {
  readonly spec: UpstreamSpec;
  private readonly hooks: UpstreamHooks;
  private readonly opts: Required<SupervisionOptions>;
  private conn: Connection | undefined;
  private _state: UpstreamState = 'idle';
  private failures = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private restartDueAt = 0;
  private healthTimer: NodeJS.Timeout | undefined;
  private waiters = new Set<() => void>();
  /** Progress relays by the token the gateway put in the request (see `request`). */
  private readonly progress = new Map<string, NonNullable<RequestOptions['onprogress']>>();
  private progressSeq = 0;
  private _capabilities: ServerCapabilities | undefined;
  private _serverInfo: Implementation | undefined;
  private _instructions: string | undefined;
  /** How many times the upstream has been (re)started successfully. */
  generation = 0;
  /** Why the last connection ended or the last start failed, for the operator and the envelope. */
  private lastFailure: { reason: string; stderr: string[] } | undefined;

  /** Largest answer read from a child-process upstream (see `ChildProcessParams.maxMessageBytes`). */
  private readonly maxResultBytes: number | undefined;

  constructor(spec: UpstreamSpec, hooks: UpstreamHooks = {}, supervision: SupervisionOptions = {}, limits: { maxResultBytes?: number } = {}) {
    this.maxResultBytes = limits.maxResultBytes;
    if (!spec.command === !spec.url) {
      throw new TypeError(`upstream '${spec.name}' needs exactly one of command or url`);
    }
    this.spec = spec;
    this.hooks = hooks;
    this.opts = {
      restartInitialDelayMs: supervision.restartInitialDelayMs ?? 200,
      restartMaxDelayMs: supervision.restartMaxDelayMs ?? 10_000,
      connectTimeoutMs: supervision.connectTimeoutMs ?? 10_000,
      healthIntervalMs: supervision.healthIntervalMs ?? 10_000,
      healthTimeoutMs: supervision.healthTimeoutMs ?? 5_000,
    };
  }

  /** The upstream's name. */
  get name(): string {
    return this.spec.name;
  }

  /** The current state. */
  get state(): UpstreamState {
    return this._state;
  }

  /** Capabilities the upstream announced on its last successful start. */
  get capabilities(): ServerCapabilities | undefined {
    return this._capabilities;
  }

  /** The upstream's `serverInfo`. */
  get serverInfo(): Implementation | undefined {
    return this._serverInfo;
  }

  /** The upstream's `instructions`. */
  get instructions(): string | undefined {
    return this._instructions;
  }

  /** The process id of a stdio upstream, when running. */
  get pid(): number | undefined {
    return this.conn?.pid ?? undefined;
  }

  /**
   * Connects for the first time. Rejects when the first attempt fails (a bad
   * command, an unreachable URL, an upstream that never answers `initialize`);
   * later failures are retried with backoff instead.
   */
  async start(): Promise<void> {
    if (this._state !== 'idle') throw new Error(`upstream '${this.name}' already started`);
    await this.connect(true);
  }

  /** Stops supervising and closes the connection (killing a stdio child). */
  async close(): Promise<void> {
    this.setState('closed');
    clearTimeout(this.restartTimer);
    clearInterval(this.healthTimer);
    const conn = this.conn;
    this.conn = undefined;
    this.wake();
    if (conn) {
      conn.killedFor = 'close';
      await conn.client.close().catch(() => {});
    }
  }

  /**
   * Sends one request and returns the raw result. Fails with an {@link UpstreamFault}.
   */
  async request(request: Request, options: UpstreamRequestOptions): Promise<Result> {
    let conn = this.conn && this._state === 'ready' ? this.conn : undefined;
    let remaining = options.timeoutMs;
    if (!conn) {
      const started = performance.now();
      conn = await this.waitReady(options);
      remaining = Math.max(1, options.timeoutMs - (performance.now() - started));
    }
    const errorsBefore = conn.protocolErrors;
    let token: string | undefined;
    if (options.onprogress) {
      // Our own token, relayed synchronously from the transport (see connect): the SDK handles
      // notifications a microtask late, so a last progress sent just before the answer would be lost.
      token = `te-${++this.progressSeq}`;
      this.progress.set(token, options.onprogress);
      request = { ...request, params: { ...request.params, _meta: { ...request.params?._meta, progressToken: token } } };
    }
    try {
      const reqOptions: RequestOptions = { timeout: remaining };
      if (options.signal) reqOptions.signal = options.signal;
      return await conn.client.request(request, ResultSchema, reqOptions);
    } catch (err) {
      throw this.classify(err, conn, errorsBefore, options);
    } finally {
      if (token) this.progress.delete(token);
    }
  }

  /** Sends a notification to the upstream; dropped while it is down. */
  async notify(notification: Notification): Promise<void> {
    const conn = this.conn;
    if (!conn || this._state !== 'ready') return;
    await conn.client.notification(notification).catch((err: unknown) => this.log(`notification failed: ${String(err)}`));
  }

  private classify(err: unknown, conn: Connection, errorsBefore: number, options: UpstreamRequestOptions): UpstreamFault {
    const name = this.name;
    if (options.signal?.aborted) return new UpstreamFault('cancelled', name, 'The caller cancelled the request.', { cause: err });
    if (err instanceof McpError) {
      if (err.code === ErrorCode.ConnectionClosed) {
        if (conn.killedFor === 'hung') {
          return new UpstreamFault('hung', name, `Upstream '${name}' stopped answering health checks and was restarted.`, { cause: err });
        }
        if (conn.protocolErrors > errorsBefore) {
          return new UpstreamFault('protocol', name, `Upstream '${name}' wrote output that is not MCP and the connection closed.`, { cause: err });
        }
        const t = conn.transport;
        if (t instanceof ChildProcessTransport) {
          const why = describeExit(t.exit, t.stderrTail.lines(), t.spawnError);
          return new UpstreamFault('exited', name, `Upstream '${name}' is gone during the call: ${why}.`, {
            cause: err,
            stderr: t.stderrTail.lines().slice(-5),
          });
        }
        return new UpstreamFault('exited', name, `Upstream '${name}' exited or closed the connection during the call.`, { cause: err });
      }
      if (err.code === ErrorCode.RequestTimeout) {
        if (conn.protocolErrors > errorsBefore) {
          return new UpstreamFault(
            'protocol',
            name,
            `Upstream '${name}' wrote ${conn.protocolErrors - errorsBefore} line(s) that are not MCP and gave no answer within ${options.timeoutMs} ms.`,
            { cause: err },
          );
        }
        return new UpstreamFault('timeout', name, `Upstream '${name}' gave no answer within ${options.timeoutMs} ms.`, { cause: err });
      }
      const data = err.data as Record<string, unknown> | undefined;
      if (data && typeof data === 'object' && data[TOO_LARGE_MARK] === true) {
        return new UpstreamFault(
          'too-large',
          name,
          `Upstream '${name}' answered with ${String(data.bytes)} bytes, over the limit of ${String(data.limitBytes)} bytes.`,
          {
            cause: err,
            rpcData: data,
          },
        );
      }
      // Errors the SDK raises itself carry no JSON-RPC origin; anything else is the upstream's answer.
      return new UpstreamFault('rpc', name, stripMcpPrefix(err), { rpcCode: err.code, rpcData: err.data, cause: err });
    }
    if (err instanceof UpstreamFault) return err;
    // A result that fails the SDK's schema (zod) or a transport failure.
    const message = err instanceof Error ? err.message : String(err);
    if (/not connected/i.test(message)) {
      return new UpstreamFault('exited', name, `Upstream '${name}' is not connected.`, { cause: err });
    }
    return new UpstreamFault('protocol', name, `Upstream '${name}' answered with an invalid result: ${message}`, { cause: err });
  }

  private async waitReady(options: UpstreamRequestOptions): Promise<Connection> {
    const limit = Math.min(options.waitReadyMs ?? 5_000, options.timeoutMs);
    const deadline = performance.now() + limit;
    for (;;) {
      if (this.conn && this._state === 'ready') return this.conn;
      if (this._state === 'closed') throw new UpstreamFault('unavailable', this.name, `Upstream '${this.name}' is closed.`);
      if (options.signal?.aborted) throw new UpstreamFault('cancelled', this.name, 'The caller cancelled the request.');
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new UpstreamFault(
          'unavailable',
          this.name,
          `Upstream '${this.name}' is restarting (state ${this._state}, ${this.failures} consecutive failure(s))${this.lastFailure ? `; last failure: ${this.lastFailure.reason}` : ''}.`,
          { retryAfterMs: Math.max(0, Math.round(this.restartDueAt - Date.now())), ...(this.lastFailure ? { stderr: this.lastFailure.stderr } : {}) },
        );
      }
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.waiters.delete(done);
          options.signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, left);
        this.waiters.add(done);
        options.signal?.addEventListener('abort', done, { once: true });
      });
    }
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  private setState(state: UpstreamState): void {
    if (this._state === 'closed' && state !== 'closed') return;
    this._state = state;
    this.hooks.onState?.(state, this);
    if (state === 'ready' || state === 'closed') this.wake();
  }

  private log(line: string): void {
    this.hooks.log?.(`[${this.name}] ${line}`);
  }

  private makeTransport(): Transport {
    const spec = this.spec;
    if (spec.url) {
      return new StreamableHTTPClientTransport(new URL(spec.url), {
        // Answers that are one SSE event come as JSON; see nodeHttpFetch.
        fetch: nodeHttpFetch({ sseAnswerAsJson: true }),
        ...(spec.headers ? { requestInit: { headers: spec.headers } } : {}),
      });
    }
    const params: ChildProcessParams = { command: spec.command!, args: spec.args ?? [], stderr: 'pipe' };
    if (this.maxResultBytes !== undefined) params.maxMessageBytes = this.maxResultBytes;
    params.env = upstreamEnvironment({ inherit: spec.inheritEnv !== false, ...(spec.env ? { set: spec.env } : {}) });
    if (spec.cwd) params.cwd = spec.cwd;
    // On Windows the SDK's transport, whose cross-spawn finds `.cmd` shims such as `npx.cmd`.
    return process.platform === 'win32' ? new StdioClientTransport(params) : new ChildProcessTransport(params);
  }

  private async connect(first: boolean): Promise<void> {
    this.setState('connecting');
    const transport = this.makeTransport();
    const client = new Client(CLIENT_INFO, {
      capabilities: this.hooks.onRequest ? { sampling: {}, elicitation: {}, roots: { listChanged: true } } : {},
    });
    const conn: Connection = { client, transport, protocolErrors: 0 };
    client.fallbackNotificationHandler = async (n) => {
      this.hooks.onNotification?.(n, this);
    };
    if (this.hooks.onRequest) {
      const onRequest = this.hooks.onRequest;
      client.fallbackRequestHandler = async (req, extra) => onRequest(req, extra.signal, this);
    }
    client.onerror = (err) => {
      // Undecodable stdout lines reach onerror as JSON or schema parse errors.
      if (err instanceof SyntaxError || err?.name === 'ZodError' || /JSON|Unexpected token|invalid_/i.test(err?.message ?? '')) {
        conn.protocolErrors++;
        this.log(`protocol error: ${err.message.slice(0, 200)}`);
      } else {
        this.log(`error: ${err?.message ?? String(err)}`);
      }
    };
    client.onclose = () => this.onConnectionClosed(conn);
    if (isChildTransport(transport)) {
      // Listening from the start: what a server says while it fails to start is the most useful part.
      transport.stderr?.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) this.log(line);
      });
    }
    try {
      await client.connect(transport, { timeout: this.opts.connectTimeoutMs });
    } catch (err) {
      conn.killedFor = 'close';
      let message = err instanceof Error ? err.message : String(err);
      if (transport instanceof ChildProcessTransport) {
        // Its exit and last words tell more than the SDK's `Connection closed`; they come within a moment.
        await Promise.race([transport.ended, new Promise((r) => setTimeout(r, 500).unref())]);
        const lines = transport.stderrTail.lines();
        message = describeExit(transport.exit, lines, transport.spawnError) + (transport.exit || transport.spawnError ? '' : ` (${message})`);
        this.lastFailure = { reason: message, stderr: lines.slice(-5) };
        if (lines.length > 0) this.log(`its last stderr lines:\n${lines.map((l) => `  | ${l}`).join('\n')}`);
      }
      await client.close().catch(() => {});
      this.killChild(transport);
      this.log(`failed to start: ${message}`);
      if (first) {
        this.setState('backoff');
        this.setState('closed');
        throw new UpstreamFault('unavailable', this.name, `Upstream '${this.name}' failed to start: ${message}`, {
          cause: err,
          ...(this.lastFailure ? { stderr: this.lastFailure.stderr } : {}),
        });
      }
      this.failures++;
      this.scheduleRestart();
      return;
    }
    if (this._state === 'closed') {
      conn.killedFor = 'close';
      await client.close().catch(() => {});
      return;
    }
    const protocolOnMessage = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if ('method' in message && message.method === 'notifications/progress' && !('id' in message)) {
        const params = message.params as { progressToken?: unknown } | undefined;
        const relay = typeof params?.progressToken === 'string' ? this.progress.get(params.progressToken) : undefined;
        if (relay) {
          const { progressToken: _t, ...rest } = params as Record<string, unknown>;
          relay(rest as Parameters<typeof relay>[0]);
          return;
        }
      }
      protocolOnMessage?.(message, extra);
    };
    if (isChildTransport(transport)) conn.pid = transport.pid;
    this.conn = conn;
    this.failures = 0;
    this.lastFailure = undefined;
    this.generation++;
    this._capabilities = client.getServerCapabilities();
    this._serverInfo = client.getServerVersion();
    this._instructions = client.getInstructions();
    this.setState('ready');
    this.startHealth(conn);
    if (this.generation > 1) this.log(`restarted (generation ${this.generation})`);
  }

  private onConnectionClosed(conn: Connection): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    clearInterval(this.healthTimer);
    if (this._state === 'closed') return;
    const t = conn.transport;
    if (t instanceof ChildProcessTransport && conn.killedFor !== 'hung') {
      const lines = t.stderrTail.lines();
      const reason = describeExit(t.exit, lines, t.spawnError);
      this.lastFailure = { reason, stderr: lines.slice(-5) };
      this.log(`connection closed: ${reason}`);
      if (lines.length > 0) this.log(`its last stderr lines:\n${lines.map((l) => `  | ${l}`).join('\n')}`);
    } else this.log(conn.killedFor === 'hung' ? 'killed after failed health check' : 'connection closed');
    this.failures++;
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this._state === 'closed') return;
    const delay = Math.min(this.opts.restartMaxDelayMs, this.opts.restartInitialDelayMs * 2 ** Math.max(0, this.failures - 1));
    this.setState('backoff');
    this.restartDueAt = Date.now() + delay;
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.connect(false).catch((err: unknown) => this.log(`restart failed: ${String(err)}`));
    }, delay);
    this.restartTimer.unref();
  }

  private startHealth(conn: Connection): void {
    clearInterval(this.healthTimer);
    if (this.opts.healthIntervalMs <= 0) return;
    let pinging = false;
    this.healthTimer = setInterval(() => {
      if (pinging || this.conn !== conn) return;
      pinging = true;
      conn.client
        .ping({ timeout: this.opts.healthTimeoutMs })
        .then(
          () => {},
          (err: unknown) => {
            if (this.conn !== conn || this._state === 'closed') return;
            if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
              this.log(`health check: no pong within ${this.opts.healthTimeoutMs} ms; restarting`);
              conn.killedFor = 'hung';
              this.killChild(conn.transport);
              // An HTTP upstream has no child to kill: close the client so in-flight requests settle.
              if (!isChildTransport(conn.transport)) void conn.client.close();
            }
          },
        )
        .finally(() => {
          pinging = false;
        });
    }, this.opts.healthIntervalMs);
    this.healthTimer.unref();
  }

  private killChild(transport: Transport): void {
    if (isChildTransport(transport) && transport.pid) {
      try {
        // Our child-process transport starts each upstream as its own process group: end all of it.
        process.kill(transport instanceof ChildProcessTransport ? -transport.pid : transport.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}

function isChildTransport(t: Transport): t is ChildProcessTransport | StdioClientTransport {
  return t instanceof ChildProcessTransport || t instanceof StdioClientTransport;
}

/** The message of an McpError without the SDK's `MCP error <code>: ` prefix. */
export function stripMcpPrefix(err: McpError): string {
  const prefix = `MCP error ${err.code}: `;
  return err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
}
