/**
 * What the gateway's `--console` and the `console` verb share: the console's sign-in verifier over
 * the gateway's authenticator (a tokens file, or OAuth JWTs), and the console as a route of the
 * gateway's HTTP listener.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { trustedProxies } from '../console/client-address.js';
import { type ConsoleHandler, createConsole } from '../console/console.js';
import type { OidcOptions } from '../console/oidc.js';
import { osIdentity, type Identity } from '../governance/identity.js';
import { type Authenticator, isAuthFailure } from '../mcp/serve/auth.js';
import type { HttpRoute } from '../mcp/serve/http.js';
import type { Store } from '../store/types.js';
import { flagHelpLines, OIDC_FLAG_OPTIONS, oidcFlagHelp } from './console-oidc.js';

/**
 * The `--trust-proxy` lines of a verb's help, descriptions at `column`: the console behind a reverse
 * proxy counts failed sign-ins per client of X-Forwarded-For instead of per proxy.
 */
export function trustProxyHelp(column: number, prefix = ''): string {
  return flagHelpLines(
    '--trust-proxy CIDR[,CIDR...]',
    `${prefix}the reverse proxies in front of the console (their own ranges only): from them, the client is the right-most X-Forwarded-For address outside every range (failed sign-ins count per client); from any other peer the header is ignored`,
    column,
  );
}

/** The `--console` lines of the gateway's help (with the OpenID Connect and proxy flags the `console` verb takes too). */
export const CONSOLE_FLAG_HELP = `  --console                     HTTP: serve the operator console at /console on the same listener
                                (sign in with a token of --auth tokens FILE, or with OpenID Connect:
                                --oidc-issuer; see docs/console.md)
${oidcFlagHelp(32, 'the --http listener', 'with --console: ')}${trustProxyHelp(32, 'with --console: ')}`;

/** `--trust-proxy`'s parseArgs option (repeatable, each a comma-separated list). */
export const TRUST_PROXY_FLAG_OPTIONS = { 'trust-proxy': { type: 'string', multiple: true } } as const;

/** The `--console` options of the gateway's parseArgs. */
export const CONSOLE_FLAG_OPTIONS = { console: { type: 'boolean' }, ...OIDC_FLAG_OPTIONS, ...TRUST_PROXY_FLAG_OPTIONS } as const;

/** `--trust-proxy`'s ranges as given (`undefined` without the flag), or a usage error. */
export function parseTrustProxyFlag(values: Record<string, unknown>): string[] | undefined | string {
  const given = values['trust-proxy'];
  if (!Array.isArray(given)) return undefined;
  const ranges = (given as string[]).flatMap((r) => r.split(','));
  try {
    trustedProxies(ranges);
  } catch (e) {
    return `--trust-proxy: ${(e as Error).message}`;
  }
  return ranges;
}

/** The console's sign-in verifier over an authenticator: a token the gateway accepts signs in as its identity. */
export function verifierOf(auth: Authenticator): (token: string) => Promise<Identity | undefined> {
  return async (token) => {
    if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(token)) return undefined;
    const who = await auth.authenticate(`Bearer ${token}`);
    return isAuthFailure(who) ? undefined : who;
  };
}

/**
 * The console over a store: signing in with the authenticator's tokens and/or OpenID Connect, or,
 * with neither (a loopback listener), as the OS user.
 */
export function consoleFor(store: Store, auth: Authenticator | undefined, oidc?: OidcOptions, trustProxy?: string[]): ConsoleHandler {
  return createConsole({
    store,
    ...(auth ? { verifyToken: verifierOf(auth) } : oidc ? {} : { operator: osIdentity() }),
    ...(oidc && { oidc }),
    ...(trustProxy && { trustProxy }),
  });
}

/** The console as a route of `serveHttp` (every path under `/console`). */
export function consoleRoute(handler: ConsoleHandler): HttpRoute {
  return {
    path: handler.base,
    prefix: true,
    handle: (req: IncomingMessage, res: ServerResponse, context) => handler.handle(req, res, context.pathname),
  };
}
