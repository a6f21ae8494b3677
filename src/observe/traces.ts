/**
 * `execute_tool` spans of the CLI's gateway exported over OTLP/HTTP when the standard `OTEL_*`
 * variables ask for them. The SDK (`@opentelemetry/sdk-trace-base`, the OTLP/HTTP exporter,
 * `@opentelemetry/resources`: optional dependencies) is imported only then: with the variables
 * unset nothing is loaded and every call goes straight through.
 */
import type { GatewayGovernor } from '../mcp/call.js';
import { traceGateway } from '../otel/instrument.js';

/** The OTLP/HTTP endpoint's default (the specification's). */
const DEFAULT_ENDPOINT = 'http://localhost:4318';

/** Where spans go, read from `OTEL_*` variables; `undefined`: tracing off. */
export interface TraceExportSettings {
  url: string;
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
  // The signal's own endpoint is used as is; the shared one gets the signal's path (the specification's rule).
  const url = own || `${(shared || DEFAULT_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;
  const resource = keyValues(env.OTEL_RESOURCE_ATTRIBUTES);
  const serviceName = env.OTEL_SERVICE_NAME || resource['service.name'] || 'tool-envelope-gateway';
  return { url, serviceName, resource, headers: { ...keyValues(env.OTEL_EXPORTER_OTLP_HEADERS), ...keyValues(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) } };
}

/** The export pipeline: a governor that traces each call, and the flush at shutdown. */
export interface TraceExport {
  governor(inner?: GatewayGovernor): GatewayGovernor;
  shutdown(): Promise<void>;
}

/**
 * Loads the SDK and starts exporting to `settings.url` (batched).
 */
export async function startTraceExport(settings: TraceExportSettings): Promise<TraceExport> {
  const [{ BasicTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const exporter = new OTLPTraceExporter({ url: settings.url, headers: settings.headers });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ ...settings.resource, 'service.name': settings.serviceName }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1_000 })],
  });
  return {
    governor: (inner) => traceGateway(inner, { tracerProvider: provider }),
    shutdown: () => provider.shutdown(),
  };
}
