/**
 * `tool-envelope console`: the operator console on a listener of its own, over a store that
 * gateways write (an admin host can serve it for replicas sharing one PostgreSQL store).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { loadTokenAuthenticator, type Authenticator } from '../mcp/serve/auth.js';
import { tokenRoleWarnings } from './token-roles.js';
import { isLoopbackHost } from '../mcp/serve/http.js';
import { parseVerbArgs, usageError } from './args.js';
import { openAuditStore, redactLocation, STORE_HELP, STORE_OPTIONS } from './audit-common.js';
import { consoleFor, parseTrustProxyFlag, TRUST_PROXY_FLAG_OPTIONS, trustProxyHelp } from './console-mount.js';
import { OIDC_FLAG_OPTIONS, oidcFlagHelp, oidcOptionsOf, parseOidcFlags } from './console-oidc.js';
import { EXIT, type CliIo } from './io.js';
import { withDidYouMean } from './suggest.js';

/** `--help` text. */
export const help = `Usage: tool-envelope console [--store PATH|URL] [--listen HOST:PORT] [--tokens FILE]
                             [--oidc-issuer URL --oidc-client-id ID --public-url URL]
                             [--trust-proxy CIDR[,CIDR...]]

Serves the operator console (docs/console.md): the approvals inbox (approve or reject paused calls,
signed with the operator key as 'audit approvals approve' does) and the audit log, at /console.
The gateway that owns a tool runs an approved call once. A gateway can serve the same pages itself
with 'tool-envelope gateway --http PORT --console'.

Options:
${STORE_HELP}
  --listen HOST:PORT    where to listen (default 127.0.0.1:3334; port 0 picks a free one)
  --tokens FILE         sign in with a bearer token of FILE (the gateway's --auth tokens file;
                        roles viewer, approver, admin); required for a non-loopback HOST.
                        Without it (or --oidc-issuer), a loopback console signs its users in as
                        the OS user (admin)
${oidcFlagHelp(24, '--listen')}${trustProxyHelp(24)}
Examples:
  tool-envelope console --store ./tool-envelope.db --listen 127.0.0.1:3334
  tool-envelope console --store ./tool-envelope.db --listen 127.0.0.1:3334 --trust-proxy 127.0.0.1/32

Exit codes: 0 stopped (SIGINT/SIGTERM), 2 usage error, a store that cannot open or a busy port.
`;

/** The process ends as soon as the verb returns. */
export const exitWhenDone = true;

/** Runs `console`. */
export async function run(args: string[], io: CliIo): Promise<number> {
  const verb = 'console';
  const p = parseVerbArgs(
    verb,
    args,
    {
      ...STORE_OPTIONS,
      listen: { type: 'string' },
      tokens: { type: 'string' },
      ...OIDC_FLAG_OPTIONS,
      ...TRUST_PROXY_FLAG_OPTIONS,
    },
    io,
  );
  if (typeof p === 'number') return p;
  if (p.positionals.length) return usageError(verb, io, `unexpected argument '${p.positionals[0]}'`);
  const listen = typeof p.values.listen === 'string' ? p.values.listen : '127.0.0.1:3334';
  const m = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d{1,5})$/.exec(listen);
  if (!m || Number(m[2]) > 65_535) return usageError(verb, io, `--listen must be HOST:PORT, got '${listen}'`);
  const host = m[1]!.replace(/^\[|\]$/g, '');
  const port = Number(m[2]);
  let auth: Authenticator | undefined;
  if (typeof p.values.tokens === 'string') {
    try {
      const tokens = await loadTokenAuthenticator(resolve(io.cwd, p.values.tokens));
      for (const w of tokenRoleWarnings(tokens.roles, p.values.tokens)) io.stderr.write(`tool-envelope ${verb}: WARNING: ${w}\n`);
      auth = tokens;
    } catch (e) {
      return usageError(verb, io, withDidYouMean(e));
    }
  }
  const oidc = parseOidcFlags(p.values, io.env);
  if (typeof oidc === 'string') return usageError(verb, io, oidc);
  const trustProxy = parseTrustProxyFlag(p.values);
  if (typeof trustProxy === 'string') return usageError(verb, io, trustProxy);
  const authenticated = auth !== undefined || oidc !== undefined;
  if (!authenticated && !isLoopbackHost(host)) {
    return usageError(verb, io, `--listen ${listen} is reachable from other machines: give --tokens FILE or --oidc-issuer URL`);
  }
  const opened = await openAuditStore(verb, p.values, io);
  if (typeof opened === 'number') return opened;
  let listening = '';
  const handler = consoleFor(opened.store, auth, oidc && oidcOptionsOf(oidc, () => listening), trustProxy);
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const pathname = url.split('?')[0]!;
    // Without authentication only loopback names reach it (no DNS rebinding from a web page).
    if (!authenticated && !loopbackHostHeader(req.headers.host)) return void res.writeHead(403, { 'content-type': 'text/plain' }).end('Host not allowed\n');
    if (pathname === '/') return void res.writeHead(303, { location: `${handler.base}/inbox` }).end();
    void handler.handle(req, res, pathname);
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  try {
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(port, host, () => ok());
    });
  } catch (e) {
    await opened.store.close().catch(() => undefined);
    io.stderr.write(`tool-envelope ${verb}: cannot listen on ${listen}: ${(e as Error).message}\n`);
    return EXIT.USAGE;
  }
  const a = server.address() as AddressInfo;
  const shown = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  listening = `http://${shown}:${a.port}`;
  io.stdout.write(`Console: http://${shown}:${a.port}${handler.base}/\nstore: ${redactLocation(opened.location)}\nPress Ctrl-C to stop.\n`);
  await new Promise<void>((r) => {
    if (io.signal.aborted) r();
    io.signal.addEventListener('abort', () => r(), { once: true });
  });
  const closed = new Promise<void>((r) => server.close(() => r()));
  server.closeAllConnections();
  await closed;
  await opened.store.close().catch(() => undefined);
  return EXIT.OK;
}

function loopbackHostHeader(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return name === 'localhost' || isLoopbackHost(name);
}
