/**
 * The environment of a child-process upstream. By default it inherits the gateway's own
 * environment (API keys, `MEMORY_FILE_PATH` and the like reach the server as they would if the
 * server were launched directly), minus the gateway's secrets: the one deny-list is
 * {@link GATEWAY_SECRET_ENV}. `env` entries of the spec (`--env KEY=VALUE`) are set on top and
 * win over everything, also over the deny-list: naming a variable is an explicit choice.
 */
import { getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';

/**
 * The gateway's own secrets, never passed on to an upstream it starts (unless set explicitly with
 * `--env`/`env:`): every variable whose name starts with one of `prefixes`, and the exact `names`.
 * The operator key signs approvals, the token identifies the CLI's operator, and the store URL may
 * hold the database password; a server the gateway fronts has no business with any of them.
 * A new secret the gateway reads (for example where `--auth` material comes from) is added here.
 */
export const GATEWAY_SECRET_ENV: { readonly prefixes: readonly string[]; readonly names: readonly string[] } = {
  prefixes: ['TOOL_ENVELOPE_'],
  names: ['TOOL_ENVELOPE_KEY', 'TOOL_ENVELOPE_KEY_FILE', 'TOOL_ENVELOPE_TOKEN', 'TOOL_ENVELOPE_STORE'],
};

/** True when `name` is one of the gateway's secrets ({@link GATEWAY_SECRET_ENV}) or in `extra`. */
export function isGatewaySecret(name: string, extra: Iterable<string> = []): boolean {
  if (GATEWAY_SECRET_ENV.names.includes(name)) return true;
  if (GATEWAY_SECRET_ENV.prefixes.some((p) => name.startsWith(p))) return true;
  for (const e of extra) if (e === name) return true;
  return false;
}

/** How an upstream's environment is made. */
export interface UpstreamEnvOptions {
  /** Inherit the gateway's environment minus its secrets (default `true`); `false` keeps only the SDK's minimal set (PATH, HOME, USER, ...). */
  inherit?: boolean;
  /** Variables set on top (`--env KEY=VALUE`, a config file's `env:`). */
  set?: Record<string, string>;
  /** More names to keep from the upstream, beside {@link GATEWAY_SECRET_ENV}. */
  deny?: Iterable<string>;
  /** The environment to inherit from; default `process.env`. */
  from?: NodeJS.ProcessEnv;
}

/** The complete environment of a child-process upstream. */
export function upstreamEnvironment(options: UpstreamEnvOptions = {}): Record<string, string> {
  const env: Record<string, string> = {};
  const put = (k: string, v: string): void => {
    Object.defineProperty(env, k, { value: v, enumerable: true, writable: true, configurable: true });
  };
  if (options.inherit === false) {
    for (const [k, v] of Object.entries(getDefaultEnvironment())) put(k, v);
  } else {
    const deny = [...(options.deny ?? [])];
    for (const [k, v] of Object.entries(options.from ?? process.env)) {
      if (v === undefined || isGatewaySecret(k, deny)) continue;
      put(k, v);
    }
  }
  for (const [k, v] of Object.entries(options.set ?? {})) put(k, v);
  return env;
}
