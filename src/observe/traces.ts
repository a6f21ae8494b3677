/**
 * `execute_tool` spans of the CLI's gateway exported over OTLP/HTTP when the standard `OTEL_*`
 * variables ask for them, as protobuf (the specification's default) or JSON per
 * `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`; gRPC is refused (its exporter is not a dependency). The SDK
 * (`@opentelemetry/sdk-trace-base`, the OTLP exporter of the protocol, `@opentelemetry/resources`:
 * optional dependencies) is imported only then, and so is `@opentelemetry/api` (through
 * ../otel/instrument.js): with the variables unset nothing is loaded and every call goes straight
 * through.
 *
 * An export that fails is logged (the first, then at most one line a minute), with the endpoint's
 * secrets hidden; the flush at shutdown waits at most {@link SHUTDOWN_BUDGET_MS} for a collector,
 * then drops what is left and says how many spans.
 */
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { missingPeer } from 'tool-envelope/core';
import type { GatewayGovernor } from '../mcp/call.js';
import { hidePassword } from '../store/hide-url-secrets.js';

/** The OTLP/HTTP endpoint's default (the specification's). */
const DEFAULT_ENDPOINT = 'http://localhost:4318';

/** The OTLP protocols over HTTP this gateway exports with. */
export type OtlpHttpProtocol = 'http/protobuf' | 'http/json';

/** Where spans go, read from `OTEL_*` variables; `undefined`: tracing off. */
export interface TraceExportSettings {
  url: string;
  protocol: OtlpHttpProtocol;
  serviceName: string;
  headers: Record<string, string>;
  resource: Record<string, string>;
}

/** `k=v,k2=v2` (W3C baggage-like, values percent-encoded) as used by OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES. */
function keyValues(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (text ?? '').split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    try {
      Object.defineProperty(out, decodeURIComponent(part.slice(0, eq).trim()), {
        value: decodeURIComponent(part.slice(eq + 1).trim()),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } catch {
      // A malformed escape: the pair is ignored, as the SDK does.
    }
  }
  return out;
}

/**
 * What the `OTEL_*` variables ask for: settings, `undefined` (no tracing), or an error message for
 * an exporter this gateway does not have.
 */
export function traceExportFrom(env: Record<string, string | undefined>): TraceExportSettings | undefined | string {
  if (/^true$/i.test(env.OTEL_SDK_DISABLED ?? '')) return undefined;
  const exporter = (env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase();
  const own = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const shared = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (exporter === 'none') return undefined;
  if (exporter !== '' && exporter !== 'otlp') return `OTEL_TRACES_EXPORTER=${exporter} is not supported: only otlp (over HTTP) or none`;
  if (exporter === '' && !own && !shared) return undefined;
  // The signal's own variable wins over the shared one; http/protobuf is the specification's default.
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const asked = (env[variable] || 'http/protobuf').trim().toLowerCase();
  if (asked === 'grpc') return `${variable}=grpc is not supported: only http/protobuf (the default) or http/json`;
  if (asked !== 'http/protobuf' && asked !== 'http/json')
    return `${variable}=${asked.slice(0, 40)} is not an OTLP protocol: http/protobuf (the default), http/json or grpc`;
  const protocol: OtlpHttpProtocol = asked;
  // The signal's own endpoint is used as is; the shared one gets the signal's path (the specification's rule).
  const url = own || `${(shared || DEFAULT_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;
  const resource = keyValues(env.OTEL_RESOURCE_ATTRIBUTES);
  const serviceName = env.OTEL_SERVICE_NAME || resource['service.name'] || 'tool-envelope-gateway';
  return {
    url,
    protocol,
    serviceName,
    resource,
    headers: { ...keyValues(env.OTEL_EXPORTER_OTLP_HEADERS), ...keyValues(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
  };
}

/** The export pipeline: a governor that traces each call, and the flush at shutdown. */
export interface TraceExport {
  governor(inner?: GatewayGovernor): GatewayGovernor;
  /** Flushes for at most {@link SHUTDOWN_BUDGET_MS}; what is left is dropped (and logged). */
  shutdown(): Promise<void>;
}

/** The longest the flush at shutdown waits for the collector: the gateway exits within 500 ms of SIGTERM. */
export const SHUTDOWN_BUDGET_MS = 400;

/** A failed export is logged at most once this often (the first always). */
export const EXPORT_FAILURE_LOG_INTERVAL_MS = 60_000;

/** The endpoint as shown in the log: without its user and password or its query string's secrets. */
export function shownEndpoint(url: string): string {
  return hidePassword(url.replace(/\/\/[^/@]*@/, '//***@'));
}

/**
 * Loads the SDK and starts exporting to `settings.url` (batched); `log` gets the export failures and
 * what the shutdown dropped.
 */
export async function startTraceExport(settings: TraceExportSettings, log: (line: string) => void = () => {}): Promise<TraceExport> {
  const exporterPackage = settings.protocol === 'http/json' ? '@opentelemetry/exporter-trace-otlp-http' : '@opentelemetry/exporter-trace-otlp-proto';
  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    // Only the exporter of the protocol asked is loaded; an optional peer, so it may be missing.
    (settings.protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto')).catch(
      (e: unknown) => {
        throw missingPeer(e, exporterPackage, `OTLP traces over ${settings.protocol}`);
      },
    ),
    import('@opentelemetry/resources'),
  ]);
  const { traceGateway } = await import('../otel/instrument.js');
  const endpoint = shownEndpoint(settings.url);
  const counts = { ended: 0, settled: 0 };
  const exporter = reportingExporter(new OTLPTraceExporter({ url: settings.url, headers: settings.headers }), settings.url, endpoint, counts, log);
  const batch = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1_000 });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ ...settings.resource, 'service.name': settings.serviceName }),
    spanProcessors: [
      batch,
      // Counts the spans ended, so that the shutdown can say how many it dropped.
      { onStart: () => {}, onEnd: () => void counts.ended++, forceFlush: () => Promise.resolve(), shutdown: () => Promise.resolve() },
    ],
  });
  return {
    governor: (inner) => traceGateway(inner, { tracerProvider: provider }),
    async shutdown() {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<'late'>((r) => {
        timer = setTimeout(() => r('late'), SHUTDOWN_BUDGET_MS);
      });
      const done = await Promise.race([provider.shutdown().then(() => 'done' as const), late]).finally(() => clearTimeout(timer));
      const left = counts.ended - counts.settled;
      if (done === 'late' && left > 0)
        log(`traces: ${left} span(s) not exported at shutdown: ${endpoint} did not answer within ${SHUTDOWN_BUDGET_MS} ms; dropped`);
    },
  };
}

/**
 * The exporter, with its outcomes counted and its failures logged: the first, then at most one
 * line per {@link EXPORT_FAILURE_LOG_INTERVAL_MS} (saying how many failed meanwhile). Without it a
 * wrong endpoint dropped every span in silence.
 */
function reportingExporter(inner: SpanExporter, url: string, endpoint: string, counts: { settled: number }, log: (line: string) => void): SpanExporter {
  let lastLogged = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  return {
    export(spans: ReadableSpan[], done) {
      inner.export(spans, (result) => {
        counts.settled += spans.length;
        // ExportResultCode.SUCCESS is 0 (@opentelemetry/core, not imported for one constant).
        if (result.code !== 0) {
          unlogged += spans.length;
          const now = Date.now();
          if (now - lastLogged >= EXPORT_FAILURE_LOG_INTERVAL_MS) {
            // One line, and the endpoint shown masked should the error quote it.
            const why = (result.error?.message ?? 'unknown error').split(url).join(endpoint).replace(/\s+/g, ' ').slice(0, 200);
            log(`traces: export to ${endpoint} failed (${why}); ${unlogged} span(s) dropped (next such line in a minute at the earliest)`);
            lastLogged = now;
            unlogged = 0;
          }
        }
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}
