/**
 * Step 3 of `tool-envelope gateway`: the configured gateway served over HTTP or stdio until the
 * process is signalled (or a stdio client goes away), then stopped in order.
 */
import type { Server, Transport } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { osIdentity } from '../../governance/identity.js';
import type { CompiledPolicy } from '../../governance/policy.js';
import type { Gateway } from '../../mcp/gateway/gateway.js';
import type { GatewayGovernance } from '../../mcp/gateway/governor.js';
import { notifySession } from '../../mcp/gateway/session-client.js';
import { type HttpEndpoint, isLoopbackHost, serveHttp } from '../../mcp/serve/http.js';
import { StdioServerLineTransport } from '../../mcp/serve/stdio.js';
import { ListenAwareTransport } from '../../mcp/serve/stdio-listen.js';
import { consoleFor, consoleRoute } from '../console-mount.js';
import { oidcOptionsOf } from '../console-oidc.js';
import { approvalBanner, destructiveTools, listedTools, policyPauses, type Release } from './banner.js';
import { type CliIo, EXIT } from '../io.js';
import type { Configured } from './configure.js';
import type { GatewaySettings } from './parse.js';
import { hidePassword, isMemoryStore } from './store-location.js';

/** How the serving ends: stop it, and the moment to; and the banner, said once every listener is bound. */
interface Serving {
  stop(): Promise<void>;
  finished: Promise<void>;
  announce(): Promise<void>;
}

/** Serves until the end; the exit code. */
export async function serveGateway(settings: GatewaySettings, parts: Configured, io: CliIo): Promise<number> {
  const { observe } = parts;
  let serving: Serving;
  try {
    serving = typeof settings.http === 'number' ? await serveOverHttp(settings, parts, io) : serveOverStdio(settings, parts, io);
  } catch (err) {
    await parts.close();
    observe.fatal((err as Error).message);
    return EXIT.USAGE;
  }
  try {
    await observe.listen(settings.auth);
  } catch (err) {
    await serving.stop().catch(() => {});
    await parts.close();
    observe.fatal(`--metrics: ${(err as Error).message}`);
    return EXIT.USAGE;
  }
  // Only now: a banner that says 'Press Ctrl-C to stop.' must not come before a listener that fails.
  await serving.announce();
  if (io.signal.aborted) await Promise.resolve();
  await serving.finished;
  observe.log('shutting down');
  // Calls in flight are answered (done, or cancelled) while their sessions are still open.
  await parts.gateway.drain().catch(() => {});
  await serving.stop().catch(() => {});
  await parts.close();
  return EXIT.OK;
}

async function serveOverHttp(settings: GatewaySettings, parts: Configured, io: CliIo): Promise<Serving> {
  const { gateway, governance, governed, observe } = parts;
  const { auth, host, values, consoleOidc, consoleTrustProxy } = settings;
  // The console's OpenID Connect callback is under the listener's URL unless --public-url says otherwise.
  let listening = '';
  const oidc = consoleOidc && oidcOptionsOf(consoleOidc, () => listening);
  const endpoint: HttpEndpoint = await serveHttp((session) => gateway.createServer(session), {
    listen: gateway.subscriptions,
    toolInputSchema: (name) => gateway.toolInputSchema(name),
    port: settings.http!,
    host,
    log: observe.log,
    ...(auth && { auth }),
    ...(typeof values.resource === 'string' && { resourceUrl: values.resource }),
    ...(values['allow-origin'] !== undefined && { allowedOrigins: values['allow-origin'] as string[] }),
    ...(settings.maxSessions !== undefined && { maxSessions: settings.maxSessions }),
    ...(settings.sessionIdleMs !== undefined && { sessionIdleMs: settings.sessionIdleMs }),
    ...(settings.sessionId && { sessionId: settings.sessionId }),
    routes: [...observe.routes(), ...(values.console === true ? [consoleRoute(consoleFor(governed, auth, oidc, consoleTrustProxy))] : [])],
  });
  listening = new URL(endpoint.url).origin;
  observe.watchSessions(() => endpoint.sessions);
  if (!auth && !isLoopbackHost(host))
    observe.log(`WARNING: serving ${host} without authentication (--insecure-no-auth): anyone who can reach it acts as ${gatewayIdentity(governance)}`);
  const consoleUrl = values.console === true ? new URL('/console/', endpoint.url).href : undefined;
  const { auditNote, release } = auditLines(settings, io, consoleUrl);
  // An upstream URL's password and query-string secrets are not shown (as a store URL's are not).
  const upstreams = settings.upstreams.map((u) => u.name + (u.url ? ` ${hidePassword(u.url)}` : ` ${[u.command, ...(u.args ?? [])].join(' ')}`));
  const policyFile = typeof values.policy === 'string' ? values.policy : settings.policyFile;
  const announce = async (): Promise<void> => {
    io.stdout.write(
      [
        `tool-envelope gateway (${settings.dialect}) in front of ${upstreams.join(', ')}`,
        `MCP endpoint (Streamable HTTP): ${endpoint.url}`,
        ...(consoleUrl ? [`Console: ${consoleUrl}`] : []),
        `  MCP Inspector: npx @modelcontextprotocol/inspector  → transport "Streamable HTTP", URL ${endpoint.url}`,
        auditNote,
        ...(await pausingBanner(gateway, governance, settings.policy, { file: policyFile, release, authenticated: auth !== undefined })),
        'Press Ctrl-C to stop.',
        '',
      ].join('\n'),
    );
  };
  const finished = new Promise<void>((r) => {
    if (io.signal.aborted) r();
    io.signal.addEventListener('abort', () => r(), { once: true });
  });
  return { stop: () => endpoint.close(), finished, announce };
}

function serveOverStdio(settings: GatewaySettings, parts: Configured, io: CliIo): Serving {
  const { gateway, observe } = parts;
  // stdout carries the protocol: everything human goes to stderr.
  const announce = async (): Promise<void> => observe.log(`serving stdio (${settings.dialect}); ${auditLines(settings, io, undefined).auditNote}`);
  // Answers produced in the same tick leave in one write (see StdioServerLineTransport).
  const transport = new StdioServerLineTransport(io.stdin as NodeJS.ReadStream, io.stdout as NodeJS.WriteStream);
  const finished = new Promise<void>((r) => {
    if (io.signal.aborted) r();
    io.signal.addEventListener('abort', () => r(), { once: true });
    (io.stdin as NodeJS.ReadStream).once?.('end', () => r());
  });
  // The SDK's stdio entry serves both eras on the one connection; a 2026-07-28 client's listen
  // streams get their resources held upstream (see ListenAwareTransport).
  let current: Server | undefined;
  const wire = new ListenAwareTransport(transport as unknown as Transport, gateway.subscriptions, (n) => current && notifySession(current, n));
  const served = serveStdio(({ era }) => (current = gateway.createServer({ era })), {
    transport: wire,
    onerror: (err) => observe.log(`stdio: ${err.message}`),
  });
  return { stop: () => served.close(), finished, announce };
}

/**
 * The banner's audit line and how a paused call is released: with a store another process can open,
 * by `audit approvals` on it; with `--no-store` or the memory store, the approvals are in this
 * process's memory, which only its console (`--console`) reaches.
 */
function auditLines(settings: GatewaySettings, io: CliIo, consoleUrl: string | undefined): { auditNote: string; release: Release } {
  // Under `npm start` (in a clone) the command is not on PATH, but npx finds the project's own bin.
  const command = io.env.npm_lifecycle_event === 'start' ? 'npx tool-envelope' : 'tool-envelope';
  const { storePath } = settings;
  if (storePath === undefined) return { auditNote: 'audit log: off (--no-store)', release: { command, inMemory: '--no-store', consoleUrl } };
  if (isMemoryStore(storePath)) {
    const auditNote = `audit log: in this process's memory (--store ${storePath}), gone when it stops; --store FILE to keep it`;
    return { auditNote, release: { command, inMemory: `--store ${storePath}`, consoleUrl } };
  }
  const storeArgs = `--store ${hidePassword(storePath)}`;
  return { auditNote: `audit log: ${hidePassword(storePath)}  (${command} audit list ${storeArgs})`, release: { command, storeArgs } };
}

/**
 * The banner lines on the tools that pause: under the default policy the destructive ones; under a
 * policy file what it decides for each tool, asked for a call by who unauthenticated calls act for.
 */
async function pausingBanner(
  gateway: Gateway,
  governance: GatewayGovernance,
  policy: CompiledPolicy | undefined,
  shown: { file: string | undefined; release: Release; authenticated: boolean },
): Promise<string[]> {
  const caller = shown.authenticated ? undefined : gatewayIdentity(governance);
  if (policy === undefined) return approvalBanner(await destructiveTools(gateway).catch(() => []), shown.release, caller);
  const tools = await listedTools(gateway).catch(() => []);
  const chain = governance.options.principalChain ?? [osIdentity().principal];
  const { pause, depends } = policyPauses(tools, policy, chain);
  return approvalBanner(pause, shown.release, caller, { file: shown.file ?? 'given', depends });
}

function gatewayIdentity(governance: GatewayGovernance): string {
  const p = governance.options.principalChain?.[0] ?? osIdentity().principal;
  return `${p.kind}:${p.id}`;
}
