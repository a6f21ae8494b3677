/**
 * A supervised connection to one upstream (child process or Streamable HTTP) on the SDK `Client`: it
 * restarts with backoff and classifies how a request failed, so a call gets an envelope, not a crash.
 */
import { PACKAGE_VERSION } from '../../version.js';
import {
  Client,
  SdkError,
  SdkErrorCode,
  type ConnectOptions,
  type Implementation,
  type Notification,
  type PriorDiscovery,
  type Request,
  type RequestOptions,
  type Result,
  type ServerCapabilities,
  type Transport,
} from '@modelcontextprotocol/client';
import { ResultSchema } from '@modelcontextprotocol/core';
import { LineLimit } from './log-limit.js';
import { MAX_MESSAGE_DEPTH, valueNestsDeeper } from '../wire/message-depth.js';
import { DEFAULT_MAX_RESULT_BYTES } from '../wire/result-size.js';
import { printable } from '../../store/printable.js';
import { describeExit, describeStartFailure, noAnswerWithin } from './stderr-tail.js';
import { ChildProcessTransport } from './child-process.js';
import { classifyRequestError, withCauses } from './faults.js';
import { relayProgressFirst, upstreamTransport } from './transport.js';
import { acceptMissingResultType } from './result-type.js';
import { carryClientEra, currentClientEra } from './client-era.js';
import { type SupervisionOptions, UpstreamFault, type UpstreamRequestOptions, type UpstreamSpec, type UpstreamState } from './types.js';

export * from './types.js';

/** Callbacks of an {@link Upstream}. */
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

interface Connection {
  client: Client;
  transport: Transport;
  /** Why the gateway itself is closing this connection, if it is. */
  killedFor?: 'hung' | 'close';
  /** Count of undecodable lines seen on this connection. */
  protocolErrors: number;
  /** How many of them reach the log (upstream/log-limit.ts). */
  protocolLog: LineLimit;
  pid?: number | null;
}

const CLIENT_INFO: Implementation = { name: 'tool-envelope-gateway', version: PACKAGE_VERSION };
/** The requests an upstream may send its client; the gateway relays them (see `UpstreamHooks.onRequest`). */
const CLIENT_REQUESTS = ['sampling/createMessage', 'elicitation/create', 'roots/list'] as const;
/** Requests that belong to the connection itself, not to a caller. */
const LIFECYCLE = new Set(['initialize', 'server/discover']);
/** How long the era probe (`server/discover`) may take before a silent stdio upstream counts as 2025-era. */
const PROBE_TIMEOUT_MS = 3_000;

/**
 * A supervised SDK `Client` for one upstream server, speaking the era the upstream speaks: the first
 * connection negotiates it (`server/discover`, else `initialize`), and restarts reuse the verdict
 * (the cached discover result of a 2026-07-28 upstream: no round trip).
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
  private _protocolVersion: string | undefined;
  /** The era verdict of the last successful connection, reused by restarts. */
  private prior: PriorDiscovery | undefined;
  /** How many times the upstream has been (re)started successfully. */
  generation = 0;
  /** How many connections ended without the gateway closing them (exit, crash, failed health check): for metrics. */
  exits = 0;
  /** Why the last connection ended or the last start failed, for the operator and the envelope. */
  private lastFailure: { reason: string; stderr: string[] } | undefined;

  /** Largest answer read from the upstream, stdio or HTTP (default 10 MiB). */
  private readonly maxResultBytes: number;
  /** The 2025 session with an HTTP upstream that serves both eras, for 2025-era clients (opened on first use). */
  private legacyTwin: Promise<Upstream | undefined> | undefined;

  constructor(spec: UpstreamSpec, hooks: UpstreamHooks = {}, supervision: SupervisionOptions = {}, limits: { maxResultBytes?: number } = {}) {
    this.maxResultBytes = limits.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
    if (!spec.command === !spec.url) {
      throw new TypeError(`upstream '${spec.name}' needs exactly one of command or url`);
    }
    this.spec = spec;
    // Its 2025-era clients may go over a twin session (twinForClient), which reads the client's era.
    if (spec.url && (spec.era ?? 'auto') === 'auto') carryClientEra();
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

  /** The upstream's `serverInfo` (a 2026-07-28 upstream may not say). */
  get serverInfo(): Implementation | undefined {
    return this._serverInfo;
  }

  /** The upstream's `instructions`. */
  get instructions(): string | undefined {
    return this._instructions;
  }

  /** The protocol version spoken with the upstream since its last start (`2026-07-28`, `2025-11-25`, ...). */
  get protocolVersion(): string | undefined {
    return this._protocolVersion;
  }

  /** The SDK transport of the current connection (for the raw task dispatch), undefined when down. */
  get transport(): Transport | undefined {
    return this.conn?.transport;
  }

  /** The era spoken with the upstream since its last start: `modern` (2026-07-28 and later) or `legacy`. */
  get era(): 'modern' | 'legacy' | undefined {
    return this.prior?.kind;
  }

  /** True when a 2025-era client's requests reach it over a 2025 session beside its modern connection (auto, over HTTP). */
  get legacySessionForClients(): boolean {
    return this.prior?.kind === 'modern' && !!this.spec.url && (this.spec.era ?? 'auto') === 'auto';
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
    void this.legacyTwin?.then((twin) => twin?.close());
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
   * Sends one request (any method: tools/call, tasks/get, ...) and returns the raw result. Fails
   * with an {@link UpstreamFault}.
   */
  async request(request: Request, options: UpstreamRequestOptions): Promise<Result> {
    if (LIFECYCLE.has(request.method)) {
      // The connection's own handshake: a caller's is answered by whoever serves it, never relayed
      // (a relayed `server/discover` would claim the upstream's era for the gateway).
      throw new UpstreamFault('rpc', this.name, 'Method not found', { rpcCode: -32601 });
    }
    const twin = this.twinForClient();
    if (twin) {
      const legacy = await twin;
      if (legacy && this._state !== 'closed') return legacy.request(request, options);
    }
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
      // By assignment: a spread followed by new keys is V8's slow path, and this runs per request.
      const reqOptions: RequestOptions = { timeout: remaining };
      if (options.allowInputRequired) reqOptions.allowInputRequired = true;
      if (options.signal) reqOptions.signal = options.signal;
      if (options.headers) reqOptions.headers = options.headers;
      const result = (await conn.client.request(request, ResultSchema, reqOptions)) as Result;
      if (valueNestsDeeper(result)) {
        throw new UpstreamFault(
          'protocol',
          this.name,
          `Upstream '${this.name}' answered with JSON nested deeper than ${MAX_MESSAGE_DEPTH} levels; the answer was dropped.`,
        );
      }
      return result;
    } catch (err) {
      throw classifyRequestError(err, {
        upstream: this.name,
        transport: conn.transport,
        ...(conn.killedFor ? { killedFor: conn.killedFor } : {}),
        protocolErrors: conn.protocolErrors - errorsBefore,
        timeoutMs: options.timeoutMs,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } finally {
      if (token) this.progress.delete(token);
    }
  }

  /**
   * Same era end to end: a 2025-era client's request to an HTTP upstream spoken to in the modern
   * era (found by `auto`: it serves both) goes over a 2025 session with it, opened on first use.
   * Undefined when the request goes over this connection.
   */
  private twinForClient(): Promise<Upstream | undefined> | undefined {
    if (currentClientEra() !== 'legacy' || !this.legacySessionForClients) return undefined;
    this.legacyTwin ??= this.openLegacyTwin();
    return this.legacyTwin;
  }

  private async openLegacyTwin(): Promise<Upstream | undefined> {
    // What the twin hears is this upstream's: the gateway knows only this one (its routes, its calls in flight).
    const hooks: UpstreamHooks = {};
    if (this.hooks.onNotification) hooks.onNotification = (n) => this.hooks.onNotification?.(n, this);
    if (this.hooks.onRequest) hooks.onRequest = (r, signal) => this.hooks.onRequest!(r, signal, this);
    if (this.hooks.log) hooks.log = (line) => this.hooks.log?.(line.replace(`[${this.name}]`, `[${this.name} 2025 session]`));
    const twin = new Upstream({ ...this.spec, era: 'legacy' }, hooks, this.opts, { maxResultBytes: this.maxResultBytes });
    try {
      await twin.start();
    } catch (err) {
      this.log(`serves no 2025 session (${err instanceof Error ? err.message : String(err)}); 2025-era clients go over the modern wire`);
      return undefined;
    }
    if (this._state === 'closed') {
      await twin.close();
      return undefined;
    }
    this.log('2025-era clients are relayed over a 2025 session with it');
    return twin;
  }

  /** Opens a `subscriptions/listen` stream on a 2026-07-28 upstream's connection (it ends with the connection). */
  async listen(filter: Parameters<Client['listen']>[0]): ReturnType<Client['listen']> {
    const conn = await this.waitReady({ timeoutMs: this.opts.connectTimeoutMs });
    return conn.client.listen(filter, { timeout: this.opts.connectTimeoutMs });
  }

  /** Sends a notification to the upstream; dropped while it is down. */
  async notify(notification: Notification): Promise<void> {
    const conn = this.conn;
    if (!conn || this._state !== 'ready') return;
    await conn.client.notification(notification).catch((err: unknown) => this.log(`notification failed: ${String(err)}`));
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

  private makeClient(conn: Connection): Client {
    const era = this.spec.era ?? 'auto';
    const client = new Client(CLIENT_INFO, {
      // No roots: an upstream may ask roots/list at any time (server-filesystem does on initializing,
      // before any client is connected), and only a client's own request in flight says whose roots
      // they would be; declared, the upstream's first ask failed with -32600 at every start.
      capabilities: this.hooks.onRequest ? { sampling: {}, elicitation: {} } : {},
      ...(era === 'legacy' ? {} : { versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'auto', probe: { timeoutMs: PROBE_TIMEOUT_MS } } }),
    });
    client.fallbackNotificationHandler = async (n) => {
      // Relayed to clients as it is: one too deep to serialise again is dropped here (wire/message-depth.ts).
      if (valueNestsDeeper(n)) return this.log(`dropped a ${n.method} notification nested deeper than ${MAX_MESSAGE_DEPTH} levels`);
      this.hooks.onNotification?.(n, this);
    };
    const onRequest = this.hooks.onRequest;
    if (onRequest) {
      // Registered by name, not only as the fallback: a 2026-07-28 upstream asks for input inside its
      // results, and the client fulfils those through the handlers registered for these methods.
      for (const method of CLIENT_REQUESTS) {
        if (method === 'roots/list') continue; // not declared (above): the fallback below still relays it
        client.setRequestHandler(method, ((req: Request, ctx: { mcpReq: { signal: AbortSignal } }) =>
          onRequest({ method: req.method, ...(req.params ? { params: req.params } : {}) }, ctx.mcpReq.signal, this)) as never);
      }
      client.fallbackRequestHandler = async (req, ctx) =>
        onRequest({ method: req.method, ...(req.params ? { params: req.params } : {}) }, ctx.mcpReq.signal, this);
    }
    client.onerror = (err) => {
      // Undecodable stdout lines reach onerror as JSON or schema parse errors.
      if (err instanceof SyntaxError || err?.name === 'ZodError' || /JSON|Unexpected token|invalid_/i.test(err?.message ?? '')) {
        conn.protocolErrors++;
        for (const line of conn.protocolLog.take(`protocol error: ${printable(err.message.slice(0, 200))}`)) this.log(line);
      } else {
        this.log(`error: ${err?.message ?? String(err)}`);
      }
    };
    client.onclose = () => this.onConnectionClosed(conn);
    return client;
  }

  /** Connects (`first`: at start, where a failure throws; otherwise a restart, where it schedules the next). */
  private async connect(first: boolean): Promise<void> {
    this.setState('connecting');
    const conn = this.openConnection();
    const started = performance.now();
    try {
      const connectOptions: ConnectOptions = { timeout: this.opts.connectTimeoutMs };
      if (this.prior) connectOptions.prior = this.prior;
      await conn.client.connect(conn.transport, connectOptions);
    } catch (err) {
      await this.failedToStart(conn, err, first, performance.now() - started);
      return;
    }
    if (this._state === 'closed') {
      conn.killedFor = 'close';
      await conn.client.close().catch(() => {});
      return;
    }
    this.connected(conn);
  }

  /** A new connection's transport and client, its stderr logged from the start. */
  private openConnection(): Connection {
    const transport = upstreamTransport(this.spec, this.maxResultBytes);
    const conn = { transport, protocolErrors: 0, protocolLog: new LineLimit('protocol errors') } as Connection;
    conn.client = this.makeClient(conn);
    if (transport instanceof ChildProcessTransport) {
      // Listening from the start: what a server says while it fails to start is the most useful part.
      transport.stderr?.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) this.log(line);
      });
    }
    return conn;
  }

  /**
   * A connection that did not start (after `waitedMs`): closed and told; at start, thrown as
   * `unavailable`, later, retried.
   */
  private async failedToStart(conn: Connection, err: unknown, first: boolean, waitedMs: number): Promise<void> {
    const { client, transport } = conn;
    conn.killedFor = 'close';
    // No answer in time: the gateway ends the process itself, so how it then ended says nothing.
    const timedOutAfterMs = err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout ? waitedMs : undefined;
    let message = timedOutAfterMs === undefined ? withCauses(err) : noAnswerWithin(timedOutAfterMs);
    if (transport instanceof ChildProcessTransport) {
      // Its exit and last words tell more than the SDK's `Connection closed`; they come within a moment.
      if (timedOutAfterMs === undefined) await Promise.race([transport.ended, new Promise((r) => setTimeout(r, 500).unref())]);
      const lines = transport.stderrTail.lines();
      const { exit, spawnError, firstBadLine: badLine } = transport;
      message =
        describeStartFailure({ exit, spawnError, timedOutAfterMs, badLine }, lines) +
        (exit || spawnError || timedOutAfterMs !== undefined ? '' : ` (${message})`);
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
  }

  /** A started connection as the upstream's: what it serves read once, then ready, watched and listened to. */
  private connected(conn: Connection): void {
    const { client, transport } = conn;
    relayProgressFirst(transport, this.progress);
    if (this.spec.strict !== true)
      acceptMissingResultType(
        transport,
        () => client.getProtocolEra() === 'modern',
        (line) => this.log(line),
      );
    if (transport instanceof ChildProcessTransport) conn.pid = transport.pid;
    this.conn = conn;
    this.failures = 0;
    this.lastFailure = undefined;
    this.generation++;
    this._capabilities = client.getServerCapabilities();
    this._serverInfo = client.getServerVersion();
    this._instructions = client.getInstructions();
    this._protocolVersion = client.getNegotiatedProtocolVersion();
    const discover = client.getDiscoverResult();
    this.prior = client.getProtocolEra() === 'modern' && discover ? { kind: 'modern', discover } : { kind: 'legacy' };
    this.setState('ready');
    this.startHealth(conn);
    if (this.prior.kind === 'modern') void this.listenForChanges(conn);
    if (this.generation > 1) this.log(`restarted (generation ${this.generation})`);
    else this.log(`speaks MCP ${this._protocolVersion ?? '?'} (${this.prior.kind} era)`);
  }

  /**
   * A 2026-07-28 upstream sends its list_changed notifications only on a `subscriptions/listen`
   * stream: one is opened for what it advertises, and they reach `onNotification` as a 2025
   * upstream's do.
   */
  private async listenForChanges(conn: Connection): Promise<void> {
    const caps = this._capabilities;
    const filter = {
      ...(caps?.tools?.listChanged ? { toolsListChanged: true } : {}),
      ...(caps?.prompts?.listChanged ? { promptsListChanged: true } : {}),
      ...(caps?.resources?.listChanged ? { resourcesListChanged: true } : {}),
    };
    if (Object.keys(filter).length === 0) return;
    try {
      await conn.client.listen(filter, { timeout: this.opts.connectTimeoutMs });
    } catch (err) {
      if (this.conn === conn) this.log(`subscriptions/listen failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private onConnectionClosed(conn: Connection): void {
    for (const line of conn.protocolLog.flush()) this.log(line);
    if (this.conn !== conn) return;
    this.conn = undefined;
    clearInterval(this.healthTimer);
    if (this._state === 'closed') return;
    this.exits++;
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
            if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout) {
              this.log(`health check: no pong within ${this.opts.healthTimeoutMs} ms; restarting`);
              conn.killedFor = 'hung';
              this.killChild(conn.transport);
              // An HTTP upstream has no child to kill: close the client so in-flight requests settle.
              if (!(conn.transport instanceof ChildProcessTransport)) void conn.client.close();
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
    if (transport instanceof ChildProcessTransport && transport.pid) {
      try {
        // Our child-process transport starts each upstream as its own process group: end all of it.
        process.kill(process.platform === 'win32' ? transport.pid : -transport.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}
