/**
 * The `gateway` verb's flags about its upstreams' environment and its payloads (`--env`,
 * `--env-clear`, `--output-schema`, `--max-result-bytes`, `--max-calls-in-flight`), kept apart from the verb's other flags.
 */
import type { UpstreamEra, UpstreamSpec } from '../../mcp/upstream/upstream.js';

/** The `parseArgs` option definitions of these flags, spread into the verb's own. */
export const UPSTREAM_FLAG_OPTIONS = {
  env: { type: 'string', multiple: true },
  'env-clear': { type: 'boolean' },
  'output-schema': { type: 'string' },
  'max-result-bytes': { type: 'string' },
  'max-calls-in-flight': { type: 'string' },
  'upstream-era': { type: 'string' },
  'strict-upstream': { type: 'boolean' },
  'tool-failure-meta': { type: 'boolean' },
} as const;

/** Their lines of the verb's `--help`. */
export const UPSTREAM_FLAG_HELP = `  --env KEY=VALUE               set a variable for command upstreams (repeatable); they inherit
                                the gateway's environment minus its secrets (TOOL_ENVELOPE_*)
  --env-clear                   inherit nothing but PATH, HOME, USER, SHELL, TERM, LOGNAME
  --output-schema compact|full  outputSchema published on each tool (default compact)
  --max-result-bytes BYTES      largest tool result, from the upstream and to the client, before
                                it is refused as result-too-large (default 10485760, at least
                                65536; it holds for every message a command upstream sends)
  --max-calls-in-flight N       most tool calls one session may have in flight; one more is refused
                                with JSON-RPC error -32000 (default 1024)
  --upstream-era auto|legacy|modern
                                the MCP era spoken to every upstream (default auto: server/discover,
                                else initialize; a config file's 'era:' sets it per upstream)
  --strict-upstream             refuse a 2026-07-28 result without resultType (default: read it as
                                complete, with a warning in the log)
  --tool-failure-meta           draft: failed results also carry MCP's draft ToolFailure metadata
                                (_meta io.modelcontextprotocol/toolFailure, SEP PR #3313)
`;

/** The parsed values of these flags. */
export interface UpstreamFlags {
  env: Record<string, string>;
  envClear: boolean;
  outputSchema: 'compact' | 'full';
  maxResultBytes?: number;
  maxCallsInFlight?: number;
  /** `--upstream-era`: overrides every upstream's `era`. */
  era?: UpstreamEra;
  strict?: boolean;
  toolFailureMeta?: boolean;
}

/** Reads these flags from `parseArgs` values; a string is the usage error to print. */
export function parseUpstreamFlags(values: Record<string, unknown>): UpstreamFlags | string {
  const env: Record<string, string> = {};
  for (const pair of (values.env as string[] | undefined) ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) return `--env expects KEY=VALUE, got '${pair}'`;
    Object.defineProperty(env, pair.slice(0, eq), { value: pair.slice(eq + 1), enumerable: true, writable: true, configurable: true });
  }
  const schema = (values['output-schema'] as string | undefined) ?? 'compact';
  if (schema !== 'compact' && schema !== 'full') return `--output-schema must be compact or full, got '${schema}'`;
  const flags: UpstreamFlags = { env, envClear: values['env-clear'] === true, outputSchema: schema };
  const max = values['max-result-bytes'] as string | undefined;
  if (max !== undefined) {
    const n = Number(max);
    // Below 64 KiB an ordinary tools/list would not fit: the limit holds for every message an upstream sends.
    if (!/^\d+$/.test(max) || !Number.isSafeInteger(n) || n < 65_536) return `--max-result-bytes must be an integer of at least 65536, got '${max}'`;
    flags.maxResultBytes = n;
  }
  const calls = values['max-calls-in-flight'] as string | undefined;
  if (calls !== undefined) {
    const n = Number(calls);
    if (!/^\d+$/.test(calls) || !Number.isSafeInteger(n) || n < 1) return `--max-calls-in-flight must be a positive integer, got '${calls}'`;
    flags.maxCallsInFlight = n;
  }
  const era = values['upstream-era'] as string | undefined;
  if (era !== undefined) {
    if (era !== 'auto' && era !== 'legacy' && era !== 'modern') return `--upstream-era must be auto, legacy or modern, got '${era}'`;
    flags.era = era;
  }
  if (values['strict-upstream'] === true) flags.strict = true;
  if (values['tool-failure-meta'] === true) flags.toolFailureMeta = true;
  return flags;
}

/**
 * Applies `--env` and `--env-clear` to every command upstream (`--env` wins over a config file's `env:`),
 * and `--upstream-era` and `--strict-upstream` to every upstream (over a config file's `era:`, `strict:`).
 */
export function applyEnvFlags(upstreams: UpstreamSpec[], flags: UpstreamFlags): UpstreamSpec[] {
  return upstreams.map((spec) => {
    const eraAndStrict: Partial<UpstreamSpec> = {};
    if (flags.era !== undefined) eraAndStrict.era = flags.era;
    if (flags.strict) eraAndStrict.strict = true;
    if (!spec.command) return { ...spec, ...eraAndStrict };
    const out: UpstreamSpec = { ...spec, ...eraAndStrict };
    if (Object.keys(flags.env).length > 0) out.env = { ...spec.env, ...flags.env };
    if (flags.envClear) out.inheritEnv = false;
    return out;
  });
}
