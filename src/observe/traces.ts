/**
 * `execute_tool` spans of the CLI's gateway exported over OTLP/HTTP when the standard `OTEL_*`
 * variables ask for them, as protobuf (the specification's default) or JSON per
 * `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`; gRPC is refused (its exporter is not a dependency). The SDK
 * (`@opentelemetry/sdk-trace-base`, the OTLP exporter of the protocol, `@opentelemetry/resources`:
 * optional dependencies) is imported only then, and so is `@opentelemetry/api` (through
 * ../otel/instrument.js): with the variables unset nothing is loaded and every call goes straight
 * through.
 */
import { missingPeer } from 'tool-envelope/core';
import type { GatewayGovernor } from '../mcp/call.js';

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
  shutdown(): Promise<void>;
}

/**
 * Loads the SDK and starts exporting to `settings.url` (batched).
 */
export async function startTraceExport(settings: TraceExportSettings): Promise<TraceExport> {
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
