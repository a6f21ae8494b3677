/**
 * The `gateway` verb's operator flags (`--metrics`, `--log-format`, `--log-level`, `--log-calls`)
 * and the `OTEL_*` variables, and their wiring: the logger, the metrics (prom-client, loaded only
 * with `--metrics`), the trace export (the OpenTelemetry SDK, loaded only when the variables ask),
 * the health routes, and the governor, store and authenticator wrappers they feed from.
 *
 * @example
 * ```ts
 * const flags = parseObserveFlags(values);
 * if (typeof flags === 'string') return usageError(io, flags);
 * const observe = await startObserve(flags, io);
 * ```
 */
import { isToolEnvelopeError } from 'tool-envelope/core';
import type { ApprovalEventSink } from '../../governance/approval-events.js';
import type { GatewayGovernor } from '../../mcp/call.js';
import type { Authenticator } from '../../mcp/serve/auth.js';
import { isLoopbackHost, type HttpRoute } from '../../mcp/serve/http.js';
import type { Upstream } from '../../mcp/upstream/upstream.js';
import { healthRoutes, type ReadinessSources } from '../../observe/health.js';
import { listenRoutes, metricsRoute, type RoutesListener } from '../../observe/listener.js';
import { callLogGovernor, createLogger, LOG_LEVELS, type GatewayLogger, type LogFormat, type LogLevel } from '../../observe/logger.js';
import type { GatewayMetrics } from '../../observe/metrics.js';
import { startTraceExport, traceExportFrom, type TraceExport } from '../../observe/traces.js';
import type { ApprovalRequest } from '../../store/types.js';
import type { CliIo } from '../io.js';
import { hidePassword } from './store-location.js';

/** The `parseArgs` option definitions of these flags, spread into the verb's own. */
export const OBSERVE_FLAG_OPTIONS = {
  metrics: { type: 'string' },
  'log-format': { type: 'string' },
  'log-level': { type: 'string' },
  'log-calls': { type: 'boolean' },
} as const;

/** Their lines of the verb's `--help`. */
export const OBSERVE_FLAG_HELP = `  --metrics [HOST:PORT]         Prometheus metrics: alone, at /metrics on the --http listener (its
                                authentication); with HOST:PORT on a listener of its own (also
                                for stdio), beside /healthz and /readyz (see docs/operators.md)
  --log-format text|json        diagnostics on stderr as text (default) or one JSON object a line
  --log-level LEVEL             debug, info (default), warn, error or silent
  --log-calls                   one line per tool call (tool, principal, status, category,
                                latency, ids; never argument values)
`;

/** `--metrics` given without a value (the next argument a flag, or none) as `--metrics=on`. */
export function metricsArgs(own: string[]): string[] {
  return own.map((a, i) => (a === '--metrics' && (own[i + 1] === undefined || own[i + 1]!.startsWith('--')) ? '--metrics=on' : a));
}

/** The parsed flags. */
export interface ObserveFlags {
  /** `undefined`: off; `on`: on the MCP listener; else a listener of its own. */
  metrics: undefined | 'on' | { host: string; port: number };
  logFormat: LogFormat;
  logLevel: LogLevel;
  logCalls: boolean;
}

/**
 * Parses the flags (`--quiet` is `--log-level silent`); a string is the usage error.
 *
 * @example
 * ```ts
 * parseObserveFlags({ metrics: '127.0.0.1:9464', 'log-format': 'json' });
 * ```
 */
export function parseObserveFlags(values: Record<string, unknown>): ObserveFlags | string {
  const format = (values['log-format'] as string | undefined) ?? 'text';
  if (format !== 'text' && format !== 'json') return `--log-format must be text or json, got '${format}'`;
  const level = (values['log-level'] as string | undefined) ?? (values.quiet === true ? 'silent' : 'info');
  if (!(LOG_LEVELS as readonly string[]).includes(level)) return `--log-level must be one of ${LOG_LEVELS.join(', ')}, got '${level}'`;
  const m = values.metrics as string | undefined;
  let metrics: ObserveFlags['metrics'];
  if (m === 'on') metrics = 'on';
  else if (m !== undefined) {
    const match = /^(?:\[([0-9a-fA-F:]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(m);
    const port = match ? Number(match[3]) : Number.NaN;
    if (!match || port > 65_535) return `--metrics expects HOST:PORT (e.g. 127.0.0.1:9464), or nothing to serve them on the --http listener; got '${m}'`;
    metrics = { host: match[1] ?? match[2]!, port };
  }
  return { metrics, logFormat: format, logLevel: level as LogLevel, logCalls: values['log-calls'] === true };
}

/** What the verb gets back: its log function and the pieces to plug in. */
export interface Observe {
  log: (line: string) => void;
  /** Why the gateway stops, at any level. */
  fatal: (line: string) => void;
  /** A line with stable fields (approval events, notification deliveries). */
  event: GatewayLogger['event'];
  /** The governor wrapping each call (metrics, call log, traces), or `undefined` when none is on. */
  governor: GatewayGovernor | undefined;
  /** The store with its audit commits counted (itself without `--metrics`). */
  store<S extends object>(store: S): S;
  /** The governance's approval event sink, with the events counted (decisions, settled outcomes) as well. */
  approvalEvents(sink: ApprovalEventSink): ApprovalEventSink;
  /** The authenticator with its refusals counted. */
  auth(auth: Authenticator | undefined): Authenticator | undefined;
  /** Starts reading the gateway (readiness, upstream and queue metrics). */
  watch(sources: WatchSources): void;
  /** The routes of the MCP listener: health, and `/metrics` with `--metrics` alone. */
  routes(): HttpRoute[];
  /** The MCP listener's open sessions, for the metrics. */
  watchSessions(sessions: () => number): void;
  /** Starts `--metrics HOST:PORT`'s listener, if asked. */
  listen(auth: Authenticator | undefined): Promise<void>;
  close(): Promise<void>;
}

/** What readiness and the scrape read. */
export interface WatchSources {
  upstreams: readonly Upstream[];
  store?: {
    checkWritable(): Promise<void>;
    listApprovals(filter: { state: 'pending'; limit: number; cursor?: string | null }): Promise<{ approvals: ApprovalRequest[]; nextCursor: string | null }>;
  };
  auditQueue?: () => number;
}

/** Counting pending approvals reads at most this many pages of this size (the gauge then stops growing). */
const APPROVAL_PAGES = 20;
const APPROVAL_PAGE = 500;

/**
 * Builds the logger, and the metrics and trace export when asked; a string is a usage error.
 *
 * @example
 * ```ts
 * const observe = await startObserve(flags, io);
 * ```
 */
export async function startObserve(flags: ObserveFlags, io: CliIo, insecure: boolean): Promise<Observe | string> {
  const logger: GatewayLogger = await createLogger({ format: flags.logFormat, level: flags.logLevel, stream: io.stderr as never });
  const log = (line: string): void => logger.line(line);
  const own = typeof flags.metrics === 'object' ? flags.metrics : undefined;
  if (own && !isLoopbackHost(own.host) && !insecure)
    return `--metrics ${own.host}:${own.port} is reachable from other machines: serve it on loopback, or give --insecure-no-auth`;
  const settings = traceExportFrom(io.env);
  if (typeof settings === 'string') return settings;
  let traces: TraceExport | undefined;
  try {
    traces = settings ? await startTraceExport(settings, log) : undefined;
  } catch (e) {
    // The exporter of the protocol asked is an optional peer: its absence is said as a usage error.
    if (isToolEnvelopeError(e, 'missing-dependency')) return (e as Error).message;
    throw e;
  }
  // Its user and password, and the query-string parameters that name secrets, are not shown.
  if (settings) log(`traces: OTLP/HTTP (${settings.protocol}) to ${hidePassword(settings.url.replace(/\/\/[^/@]*@/, '//***@'))} as ${settings.serviceName}`);
  const metrics: GatewayMetrics | undefined = flags.metrics ? new (await import('../../observe/metrics.js')).GatewayMetrics() : undefined;

  // Innermost the spans (they carry the call's context down), then the call log, metrics outside.
  let governor: GatewayGovernor | undefined = traces?.governor();
  if (flags.logCalls) governor = callLogGovernor(logger, governor);
  if (metrics) governor = metrics.governor(governor);

  let sources: ReadinessSources = { upstreams: () => [] };
  let listener: RoutesListener | undefined;
  const health = healthRoutes({
    upstreams: () => sources.upstreams(),
    storeWritable: () => sources.storeWritable?.() ?? Promise.resolve(),
    auditFailing: () => metrics?.auditFailing ?? false,
  });
  return {
    log,
    fatal: (line) => logger.fatal(line),
    event: (level, component, msg, fields) => logger.event(level, component, msg, fields),
    governor,
    store: (store) => (metrics ? metrics.observeStore(store) : store),
    approvalEvents: (sink) =>
      metrics
        ? (e) => {
            metrics.observeApprovalEvent(e);
            sink(e);
          }
        : sink,
    auth: (auth) => (auth && metrics ? metrics.observeAuthenticator(auth) : auth),
    watch(w) {
      const store = w.store;
      sources = { upstreams: () => w.upstreams, ...(store && { storeWritable: () => store.checkWritable() }) };
      metrics?.watch(w, {
        ...(w.auditQueue && { auditQueue: w.auditQueue }),
        ...(store && { pendingApprovals: () => countPending(store) }),
      });
    },
    routes: () => (flags.metrics === 'on' && metrics ? [...health, metricsRoute(metrics)] : health),
    watchSessions: (sessions) => metrics?.watchSessions(sessions),
    async listen(auth) {
      if (!own || !metrics) return;
      listener = await listenRoutes([metricsRoute(metrics), ...health], { host: own.host, port: own.port, auth });
      log(`metrics at ${listener.url}/metrics`);
    },
    async close() {
      await listener?.close();
      await traces?.shutdown().catch((err: unknown) => log(`traces: ${err instanceof Error ? err.message : String(err)}`));
    },
  };
}

async function countPending(store: NonNullable<WatchSources['store']>): Promise<number> {
  let n = 0;
  let cursor: string | null = null;
  for (let page = 0; page < APPROVAL_PAGES; page++) {
    const r = await store.listApprovals({ state: 'pending', limit: APPROVAL_PAGE, cursor });
    n += r.approvals.length;
    cursor = r.nextCursor;
    if (cursor === null) break;
  }
  return n;
}
