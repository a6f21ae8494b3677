/**
 * `tool-envelope gateway`: serves MCP in front of upstream MCP servers and wraps
 * every tool result in the chosen contract, recording each call in the store.
 *
 * @example
 * ```sh
 * tool-envelope gateway --http 3333 -- npx -y @modelcontextprotocol/server-memory
 * ```
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { isContractId, isToolEnvelopeError, isApprovalMode, isPrincipalKind, PRINCIPAL_KINDS, type ApprovalMode, type Principal } from 'tool-envelope/core';
import { loadGatewayConfig, type GatewayConfig } from '../mcp/gateway/config.js';
import { Gateway } from '../mcp/gateway/gateway.js';
import { notifySession } from '../mcp/gateway/session-client.js';
import { loadTokenAuthenticator, oauthAuthenticator, type Authenticator } from '../mcp/serve/auth.js';
import { isLoopbackHost, replicaSessionId, serveHttp, type HttpEndpoint } from '../mcp/serve/http.js';
import { StdioServerLineTransport } from '../mcp/serve/stdio.js';
import { ListenAwareTransport } from '../mcp/serve/stdio-listen.js';
import type { Server, Transport } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { GatewayGovernance } from '../mcp/gateway/governor.js';
import type { UpstreamSpec } from '../mcp/upstream/upstream.js';
import { osIdentity } from '../governance/identity.js';
import { loadPolicyFile, type CompiledPolicy } from '../governance/policy.js';
import { createMemoryStore, openStore } from '../store/index.js';
import { checkRedactionOptions, mergeRedactionPointers } from '../store/redact.js';
import { parseErrorMessage } from './args.js';
import { approvalBanner, destructiveTools, listedTools, policyPauses } from './gateway-banner.js';
import { EXIT, type CliIo } from './io.js';
import { UPSTREAM_FLAG_HELP, UPSTREAM_FLAG_OPTIONS, applyEnvFlags, parseUpstreamFlags } from './gateway-upstream-flags.js';
import { CONSOLE_FLAG_HELP, CONSOLE_FLAG_OPTIONS, consoleFor, consoleRoute } from './console-mount.js';
import { OBSERVE_FLAG_HELP, OBSERVE_FLAG_OPTIONS, metricsArgs, parseObserveFlags, startObserve } from './gateway-observe.js';
import { NOTIFY_FLAG_HELP, NOTIFY_FLAG_OPTIONS, approvalWiring } from './gateway-notify.js';
import { reloadPolicyOnChange } from './gateway-policy-reload.js';

/** `--help` text. */
export const help = `Usage: tool-envelope gateway [options] -- UPSTREAM_COMMAND [ARGS...]
       tool-envelope gateway [options] --url http://HOST:PORT/mcp
       tool-envelope gateway [options] --config gateway.yaml

Serves MCP in front of one or more upstream MCP servers. Every request and
notification is forwarded; every tool result keeps the upstream's content
blocks and gains an envelope of the chosen contract as structuredContent.
Each call is recorded in the store's audit log.

Options:
  --dialect DIALECT             contract of the envelopes: mcec (default), dw, contextos,
                                or a later revision: mcec@2026-07, dw@14
  --http PORT                   serve Streamable HTTP on 127.0.0.1:PORT/mcp (0 = a free port);
                                without it the gateway serves stdio
  --host ADDR                   interface for --http (default 127.0.0.1); a non-loopback address
                                needs --auth (or --insecure-no-auth)
  --auth tokens FILE            HTTP: bearer tokens from FILE (JSON/YAML: tokens: [{ sha256,
                                principal: KIND:ID, tenant?, roles? }]); each session acts for
                                its token's principal
  --auth oauth                  HTTP: OAuth 2.1 resource server: JWT access tokens of
                                --oauth-issuer, audience --resource (default: the endpoint URL)
  --oauth-issuer URL            the authorization server (iss)
  --oauth-jwks URL              its JWKS (default: jwks_uri of the issuer's metadata)
  --resource URL                this gateway's public URL (OAuth audience and metadata)
  --allow-origin ORIGIN         a browser Origin allowed to call (repeatable; default: loopback
                                origins only; requests without Origin are always allowed)
  --max-sessions N              most open HTTP sessions (default 1000)
  --session-idle MS             close HTTP sessions idle this long (default 1800000, 0 = never)
  --insecure-no-auth            allow a non-loopback --host without --auth
  --replica-id NAME             HTTP: this process is replica NAME of several behind a reverse
                                proxy: session ids start with 'NAME.', for sticky routing
                                (see docs/deploy.md)
  --store PATH|URL              SQLite file or postgres:// URL (default: $TOOL_ENVELOPE_STORE,
                                else ./tool-envelope.db)
  --no-store                    record nothing
  --audit-commit before-answer|background
                                before-answer (default): a call answers once its audit record is
                                committed; background: answers sooner, but a crash loses the last records
  --redact TOOL=POINTER         also redact this value in the audit log (repeatable; POINTER under
                                /args or /result, e.g. crm_update=/args/customer/ssn; adds to the
                                config file's redact). Secret-looking keys and secret formats are always redacted
  --no-redact                   store arguments and results verbatim (each record says so)
  --url URL                     a Streamable HTTP upstream instead of a command
  --config FILE                 upstreams and settings from a JSON/YAML file (see docs/mcp.md)
  --prefix PREFIX               prefix of the upstream's tool and prompt names
  --deadline MS                 deadline of each tool call (default 30000)
  --preview-limit BYTES         preview byte limit (default 4096)
  --mode TOOL=MODE              approval mode of a tool (repeatable): read_only, local_write,
                                network, delegated, destructive (default: from annotations)
  --health-interval MS          upstream health-ping interval, 0 = off (default 10000)
  --policy FILE                 approval policy rules (JSON/YAML, see docs/governance.md);
                                default: the ContextOS per-mode defaults (destructive calls
                                pause for an approver, delegated calls need a user and evidence);
                                reloaded on SIGHUP and when the file changes (a bad one is
                                refused and logged; the policy in force stays)
  --require-idempotency-key MODE
                                calls at MODE or above need _meta["tool-envelope/idempotency-key"]
                                (default: off)
  --principal KIND:ID           the verified principal of unauthenticated sessions (stdio,
                                loopback HTTP): repeatable, originating principal first; default
                                user:<the OS user>. A client's _meta chain only adds agents after it
  --approval-ttl MS             how long an approval request stays open (default 86400000)
  --approval-poll MS            how often approved requests are picked up, 0 = never (default 500)
${NOTIFY_FLAG_HELP}${UPSTREAM_FLAG_HELP}${OBSERVE_FLAG_HELP}${CONSOLE_FLAG_HELP}  --quiet                       no diagnostics on stderr (--log-level silent)

Paused calls: approve with 'tool-envelope audit approvals approve ID --store ...' (as the OS user);
this gateway then runs the call once and records its final envelope.

Examples:
  tool-envelope gateway -- npx -y @modelcontextprotocol/server-everything
  tool-envelope gateway --dialect dw --http 3333 -- node my-server.js
  tool-envelope gateway --config gateway.yaml --store postgres://app@localhost/agents

Exit codes: 0 stopped normally (client gone, SIGINT/SIGTERM), 2 usage error, an
            upstream that cannot start, a store that cannot open or a busy port.
`;

/**
 * The process ends as soon as the verb returns: a handle left behind must not keep a stopped gateway alive.
 *
 * @example
 * ```ts
 * if (verb.exitWhenDone) setTimeout(() => process.exit(code), 50).unref();
 * ```
 */
export const exitWhenDone = true;

function usageError(io: CliIo, message: string): number {
  io.stderr.write(`tool-envelope gateway: ${message}\nRun 'tool-envelope gateway --help' for usage.\n`);
  return EXIT.USAGE;
}

function intOption(value: string | undefined, name: string, allowZero: boolean): number | undefined | Error {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || (!allowZero && n === 0))
    return new Error(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer, got '${value}'`);
  return n;
}

/**
 * Runs the gateway until the client disconnects (stdio) or the process is signalled.
 *
 * @example
 * ```ts
 * const code = await run(['--http', '0', '--', 'node', 'server.js'], processIo(signal));
 * ```
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  const dash = args.indexOf('--');
  const own = metricsArgs(authArgs(dash === -1 ? args : args.slice(0, dash)));
  const command = dash === -1 ? [] : args.slice(dash + 1);
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: own,
      options: {
        dialect: { type: 'string' },
        http: { type: 'string' },
        host: { type: 'string' },
        store: { type: 'string' },
        'no-store': { type: 'boolean' },
        'audit-commit': { type: 'string' },
        redact: { type: 'string', multiple: true },
        'no-redact': { type: 'boolean' },
        url: { type: 'string' },
        config: { type: 'string' },
        prefix: { type: 'string' },
        deadline: { type: 'string' },
        'preview-limit': { type: 'string' },
        mode: { type: 'string', multiple: true },
        'health-interval': { type: 'string' },
        policy: { type: 'string' },
        'require-idempotency-key': { type: 'string' },
        principal: { type: 'string', multiple: true },
        'approval-ttl': { type: 'string' },
        'approval-poll': { type: 'string' },
        quiet: { type: 'boolean' },
        auth: { type: 'string' },
        'auth-tokens-file': { type: 'string' },
        'oauth-issuer': { type: 'string' },
        'oauth-jwks': { type: 'string' },
        resource: { type: 'string' },
        'allow-origin': { type: 'string', multiple: true },
        'max-sessions': { type: 'string' },
        'session-idle': { type: 'string' },
        'insecure-no-auth': { type: 'boolean' },
        'replica-id': { type: 'string' },
        ...UPSTREAM_FLAG_OPTIONS,
        ...CONSOLE_FLAG_OPTIONS,
        ...OBSERVE_FLAG_OPTIONS,
        ...NOTIFY_FLAG_OPTIONS,
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    const flags = [...new Set(help.match(/--[a-z][a-z-]*/g) ?? [])];
    return usageError(
      io,
      parseErrorMessage(err, flags, (arg) => `put the upstream command after '--', as in: tool-envelope gateway [options] -- ${arg} ...`),
    );
  }

  let config: GatewayConfig | undefined;
  if (typeof values.config === 'string') {
    try {
      config = await loadGatewayConfig(resolve(io.cwd, values.config));
    } catch (err) {
      return usageError(io, (err as Error).message);
    }
  }
  const sources = [command.length > 0, typeof values.url === 'string', config !== undefined].filter(Boolean).length;
  if (sources !== 1) return usageError(io, 'give exactly one upstream: `-- COMMAND [ARGS...]`, `--url URL` or `--config FILE`');

  let upstreams: UpstreamSpec[];
  if (config) upstreams = config.upstreams;
  else {
    const spec: UpstreamSpec =
      typeof values.url === 'string' ? { name: 'upstream', url: values.url } : { name: 'upstream', command: command[0]!, args: command.slice(1), cwd: io.cwd };
    if (typeof values.prefix === 'string') spec.prefix = values.prefix;
    upstreams = [spec];
  }
  const upstreamFlags = parseUpstreamFlags(values);
  if (typeof upstreamFlags === 'string') return usageError(io, upstreamFlags);
  upstreams = applyEnvFlags(upstreams, upstreamFlags);

  const dialect = (values.dialect as string | undefined) ?? config?.dialect ?? 'mcec';
  if (!isContractId(dialect)) return usageError(io, `--dialect must be mcec, dw, contextos, mcec@2026-07 or dw@14, got '${dialect}'`);
  const http = intOption(values.http as string | undefined, '--http', true) ?? config?.http;
  const deadline = intOption(values.deadline as string | undefined, '--deadline', false) ?? config?.deadlineMs;
  const preview = intOption(values['preview-limit'] as string | undefined, '--preview-limit', true) ?? config?.previewLimitBytes;
  const health = intOption(values['health-interval'] as string | undefined, '--health-interval', true);
  const ttl = intOption(values['approval-ttl'] as string | undefined, '--approval-ttl', false);
  const poll = intOption(values['approval-poll'] as string | undefined, '--approval-poll', true);
  const maxSessions = intOption(values['max-sessions'] as string | undefined, '--max-sessions', false);
  const sessionIdle = intOption(values['session-idle'] as string | undefined, '--session-idle', true);
  for (const v of [http, deadline, preview, health, ttl, poll, maxSessions, sessionIdle]) if (v instanceof Error) return usageError(io, v.message);
  const host = typeof values.host === 'string' ? values.host : '127.0.0.1';
  const replica = values['replica-id'] as string | undefined;
  let sessionId: (() => string) | undefined;
  if (replica !== undefined) {
    if (typeof http !== 'number') return usageError(io, '--replica-id applies to --http');
    try {
      sessionId = replicaSessionId(replica);
    } catch (err) {
      return usageError(io, `--replica-id: ${(err as Error).message}`);
    }
  }
  let auth: Authenticator | undefined;
  try {
    auth = await authenticatorFrom(values, io.cwd, typeof http === 'number' ? http : 0, host);
  } catch (err) {
    return usageError(io, (err as Error).message);
  }
  if (auth && typeof http !== 'number') return usageError(io, '--auth applies to --http; over stdio the session acts for --principal (default: the OS user)');
  if (values.console === true && typeof http !== 'number') return usageError(io, '--console applies to --http: the console is served on its listener');
  if (typeof http === 'number' && !isLoopbackHost(host) && !auth && values['insecure-no-auth'] !== true) {
    return usageError(
      io,
      `--host ${host} is reachable from other machines: give --auth tokens FILE or --auth oauth (or --insecure-no-auth to serve without authentication)`,
    );
  }
  const keyFrom = values['require-idempotency-key'] as string | undefined;
  if (keyFrom !== undefined && keyFrom !== 'off' && !isApprovalMode(keyFrom)) {
    return usageError(io, `--require-idempotency-key expects off or one of read_only, local_write, network, delegated, destructive; got '${keyFrom}'`);
  }
  const principals: Principal[] = [];
  for (const p of (values.principal as string[] | undefined) ?? []) {
    const colon = p.indexOf(':');
    const kind = p.slice(0, colon);
    if (colon <= 0 || colon === p.length - 1 || !isPrincipalKind(kind)) {
      return usageError(io, `--principal expects KIND:ID with KIND one of ${PRINCIPAL_KINDS.join(', ')}; got '${p}'`);
    }
    principals.push({ kind: kind as Principal['kind'], id: p.slice(colon + 1) });
  }
  let policy: CompiledPolicy | undefined;
  const policyFile = typeof values.policy === 'string' ? resolve(io.cwd, values.policy) : config?.policy;
  if (policyFile !== undefined) {
    try {
      policy = await loadPolicyFile(policyFile);
    } catch (err) {
      return usageError(io, (err as Error).message);
    }
  }
  const modes: Record<string, ApprovalMode> = { ...config?.modes };
  for (const m of (values.mode as string[] | undefined) ?? []) {
    const eq = m.lastIndexOf('=');
    const tool = m.slice(0, eq);
    const mode = m.slice(eq + 1);
    if (eq <= 0 || !isApprovalMode(mode))
      return usageError(io, `--mode expects TOOL=MODE with MODE one of read_only, local_write, network, delegated, destructive; got '${m}'`);
    Object.defineProperty(modes, tool, { value: mode, enumerable: true, writable: true, configurable: true });
  }

  const auditCommit = (values['audit-commit'] as string | undefined) ?? 'before-answer';
  if (auditCommit !== 'before-answer' && auditCommit !== 'background')
    return usageError(io, `--audit-commit must be before-answer or background, got '${auditCommit}'`);

  // The config file's pointers, then the flags' (added to them).
  const redactPointers: Record<string, string[]> = mergeRedactionPointers(config?.redact ?? {});
  for (const r of (values.redact as string[] | undefined) ?? []) {
    const eq = r.indexOf('=/');
    if (eq <= 0) return usageError(io, `--redact expects TOOL=POINTER with POINTER under /args or /result, got '${r}'`);
    const tool = r.slice(0, eq);
    Object.defineProperty(redactPointers, tool, {
      value: [...(redactPointers[tool] ?? []), r.slice(eq + 1)],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  if (values['no-redact'] === true && ((values.redact as string[] | undefined) ?? []).length > 0)
    return usageError(io, '--redact and --no-redact exclude each other');
  if (values['no-redact'] === true && policy?.document.redact !== undefined)
    return usageError(io, 'the --policy file redacts values (redact), which --no-redact turns off');
  const redaction = values['no-redact'] === true ? (false as const) : { pointers: redactPointers };
  try {
    if (redaction) checkRedactionOptions(redaction);
  } catch (err) {
    return usageError(io, (err as Error).message);
  }

  const observeFlags = parseObserveFlags(values);
  if (typeof observeFlags === 'string') return usageError(io, observeFlags);
  if (observeFlags.metrics === 'on' && typeof http !== 'number')
    return usageError(io, '--metrics alone serves them on the --http listener; over stdio give --metrics HOST:PORT');
  const observe = await startObserve(observeFlags, io, values['insecure-no-auth'] === true);
  if (typeof observe === 'string') return usageError(io, observe);
  auth = observe.auth(auth);
  const log = observe.log;
  const approvals = await approvalWiring(values, config?.notify, observe.event);
  if (typeof approvals === 'string') return usageError(io, approvals);

  const storeLocation =
    values['no-store'] === true
      ? undefined
      : ((values.store as string | undefined) ?? config?.store ?? (io.env.TOOL_ENVELOPE_STORE || undefined) ?? './tool-envelope.db');
  const storePath =
    storeLocation === undefined || /^postgres(ql)?:\/\//i.test(storeLocation) || storeLocation === 'memory' || storeLocation === ':memory:'
      ? storeLocation
      : resolve(io.cwd, storeLocation.replace(/^sqlite:/i, ''));
  let store: Awaited<ReturnType<typeof openStore>> | undefined;
  try {
    if (storePath !== undefined) store = observe.store(await openStore(storePath));
  } catch (err) {
    observe.fatal(`cannot open the store ${redact(storePath!)}: ${(err as Error).message}`);
    return EXIT.USAGE;
  }

  // Without a store, policy, idempotency and approvals still apply, in memory (nothing is logged).
  const governed = store ?? observe.store(createMemoryStore());
  const governance = new GatewayGovernance({
    store: governed,
    ...(policy ? { policy } : {}),
    ...(keyFrom !== undefined ? { requireIdempotencyKeyFrom: keyFrom === 'off' ? false : (keyFrom as ApprovalMode) } : {}),
    ...(principals.length > 0 ? { principalChain: principals } : {}),
    ...(typeof ttl === 'number' ? { approvalTtlMs: ttl } : {}),
    ...(typeof poll === 'number' ? { approvalPollMs: poll } : {}),
    ...(store
      ? { audit: { commit: auditCommit, redact: redaction, onError: (err: unknown) => log(`audit: ${(err as Error).message}`) } }
      : { audit: false as const }),
    onError: (err) => log(`approvals: ${(err as Error).message}`),
    onApprovalEvent: approvals.onApprovalEvent,
    ...(approvals.runWindowMs !== undefined ? { approvalRunWindowMs: approvals.runWindowMs } : {}),
  });
  let gateway: Gateway;
  try {
    gateway = await Gateway.start({
      governance,
      // Task handles live in the store (in memory with --no-store), bound to their callers.
      taskHandles: governed.taskHandles,
      upstreams,
      dialect,
      modes,
      log,
      ...(observe.governor && { governor: observe.governor }),
      ...(typeof deadline === 'number' ? { deadlineMs: deadline } : {}),
      ...(typeof preview === 'number' ? { previewLimitBytes: preview } : {}),
      ...(typeof health === 'number' ? { supervision: { healthIntervalMs: health } } : {}),
      outputSchema: upstreamFlags.outputSchema,
      ...(upstreamFlags.maxResultBytes !== undefined ? { maxResultBytes: upstreamFlags.maxResultBytes } : {}),
      ...(upstreamFlags.maxCallsInFlight !== undefined ? { maxCallsInFlight: upstreamFlags.maxCallsInFlight } : {}),
      ...(upstreamFlags.toolFailureMeta ? { toolFailureMeta: true } : {}),
    });
  } catch (err) {
    await governance.close();
    await store?.close();
    await observe.close();
    observe.fatal(isToolEnvelopeError(err) ? err.message : String(err));
    return EXIT.USAGE;
  }
  observe.watch({ upstreams: gateway.upstreams, store: governed, auditQueue: () => governance.pipeline.writer?.pending ?? 0 });
  // SIGHUP or a change of the file puts a new policy in force, or logs why not (gateway-policy-reload.ts).
  const stopReload = policy && policyFile !== undefined ? reloadPolicyOnChange(policyFile, policy, governance.pipeline, observe.event) : undefined;

  // Under `npm start` (in a clone) the command is not on PATH, but npx finds the project's own bin.
  const self = io.env.npm_lifecycle_event === 'start' ? 'npx tool-envelope' : 'tool-envelope';
  const storeArgs = storePath === undefined ? '' : `--store ${redact(storePath)}`;
  const auditNote = storePath === undefined ? 'audit log: off (--no-store)' : `audit log: ${redact(storePath)}  (${self} audit list ${storeArgs})`;
  let stop: () => Promise<void>;
  let finished: Promise<void>;
  if (typeof http === 'number') {
    let endpoint: HttpEndpoint;
    try {
      endpoint = await serveHttp((session) => gateway.createServer(session), {
        listen: gateway.subscriptions,
        toolInputSchema: (name) => gateway.toolInputSchema(name),
        port: http,
        host,
        log,
        ...(auth && { auth }),
        ...(typeof values.resource === 'string' && { resourceUrl: values.resource }),
        ...(values['allow-origin'] !== undefined && { allowedOrigins: values['allow-origin'] as string[] }),
        ...(typeof maxSessions === 'number' && { maxSessions }),
        ...(typeof sessionIdle === 'number' && { sessionIdleMs: sessionIdle }),
        ...(sessionId && { sessionId }),
        routes: [...observe.routes(), ...(values.console === true ? [consoleRoute(consoleFor(governed, auth))] : [])],
      });
      observe.watchSessions(() => endpoint.sessions);
      if (!auth && !isLoopbackHost(host))
        log(`WARNING: serving ${host} without authentication (--insecure-no-auth): anyone who can reach it acts as ${gatewayIdentity(governance)}`);
    } catch (err) {
      await gateway.close();
      await store?.close();
      observe.fatal((err as Error).message);
      return EXIT.USAGE;
    }
    io.stdout.write(
      [
        `tool-envelope gateway (${dialect}) in front of ${upstreams.map((u) => u.name + (u.url ? ` ${u.url}` : ` ${[u.command, ...(u.args ?? [])].join(' ')}`)).join(', ')}`,
        `MCP endpoint (Streamable HTTP): ${endpoint.url}`,
        ...(values.console === true ? [`Console: ${new URL('/console/', endpoint.url).href}`] : []),
        `  MCP Inspector: npx @modelcontextprotocol/inspector  → transport "Streamable HTTP", URL ${endpoint.url}`,
        auditNote,
        ...(await pausingBanner(
          gateway,
          governance,
          policy,
          typeof values.policy === 'string' ? values.policy : policyFile,
          self,
          storeArgs,
          auth !== undefined,
        )),
        'Press Ctrl-C to stop.',
        '',
      ].join('\n'),
    );
    stop = () => endpoint.close();
    finished = new Promise<void>((r) => {
      if (io.signal.aborted) r();
      io.signal.addEventListener('abort', () => r(), { once: true });
    });
  } else {
    // stdout carries the protocol: everything human goes to stderr.
    log(`serving stdio (${dialect}); ${auditNote}`);
    // Answers produced in the same tick leave in one write (see StdioServerLineTransport).
    const transport = new StdioServerLineTransport(io.stdin as NodeJS.ReadStream, io.stdout as NodeJS.WriteStream);
    // The SDK's stdio entry serves both eras on the one connection: a 2026-07-28 client's
    // server/discover, or a 2025 client's initialize (then pinned to that era).
    finished = new Promise<void>((r) => {
      if (io.signal.aborted) r();
      io.signal.addEventListener('abort', () => r(), { once: true });
      (io.stdin as NodeJS.ReadStream).once?.('end', () => r());
    });
    // A 2026-07-28 client's listen streams get their resources held upstream (see ListenAwareTransport).
    let current: Server | undefined;
    const wire = new ListenAwareTransport(transport as unknown as Transport, gateway.subscriptions, (n) => current && notifySession(current, n));
    const served = serveStdio(({ era }) => (current = gateway.createServer({ era })), { transport: wire, onerror: (err) => log(`stdio: ${err.message}`) });
    stop = () => served.close();
  }
  try {
    await observe.listen(auth);
  } catch (err) {
    await stop().catch(() => {});
    await gateway.close();
    await store?.close();
    observe.fatal(`--metrics: ${(err as Error).message}`);
    return EXIT.USAGE;
  }
  if (io.signal.aborted) await Promise.resolve();
  await finished;
  log('shutting down');
  stopReload?.();
  await stop().catch(() => {});
  await gateway.close();
  await approvals.close();
  await store?.close();
  await observe.close();
  return EXIT.OK;
}

function redact(location: string): string {
  return location.replace(/(\/\/[^:/@]+):[^@/]*@/, '$1:***@');
}

/** `--auth tokens FILE` (two values) as parseArgs options: `--auth tokens --auth-tokens-file FILE`. */
function authArgs(own: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < own.length; i++) {
    const a = own[i]!;
    if ((a === '--auth' && own[i + 1] === 'tokens') || a === '--auth=tokens') {
      if (a === '--auth') i++;
      out.push('--auth', 'tokens');
      const file = own[i + 1];
      if (file !== undefined && !file.startsWith('--')) {
        out.push('--auth-tokens-file', file);
        i++;
      }
    } else out.push(a);
  }
  return out;
}

async function authenticatorFrom(values: Record<string, unknown>, cwd: string, port: number, host: string): Promise<Authenticator | undefined> {
  const scheme = values.auth;
  if (scheme === undefined) {
    if (values['oauth-issuer'] !== undefined || values['oauth-jwks'] !== undefined) throw new Error('--oauth-issuer and --oauth-jwks need --auth oauth');
    return undefined;
  }
  if (scheme === 'tokens') {
    if (typeof values['auth-tokens-file'] !== 'string') throw new Error('--auth tokens needs a FILE: --auth tokens tokens.yaml');
    return loadTokenAuthenticator(resolve(cwd, values['auth-tokens-file']));
  }
  if (scheme === 'oauth') {
    const issuer = values['oauth-issuer'];
    if (typeof issuer !== 'string') throw new Error('--auth oauth needs --oauth-issuer URL');
    const audience = typeof values.resource === 'string' ? values.resource : `http://${host.includes(':') ? `[${host}]` : host}:${port}/mcp`;
    if (typeof values.resource !== 'string' && port === 0)
      throw new Error('--auth oauth with --http 0 needs --resource URL (the audience tokens are issued for)');
    return oauthAuthenticator({ issuer, audience, ...(typeof values['oauth-jwks'] === 'string' && { jwksUrl: values['oauth-jwks'] }) });
  }
  throw new Error(`--auth expects tokens FILE or oauth, got '${String(scheme)}'`);
}

/**
 * The banner lines on the tools that pause: under the default policy the destructive ones; under a
 * policy file what it decides for each tool, asked for a call by who unauthenticated calls act for.
 */
async function pausingBanner(
  gateway: Gateway,
  governance: GatewayGovernance,
  policy: CompiledPolicy | undefined,
  policyFile: string | undefined,
  self: string,
  storeArgs: string,
  authenticated: boolean,
): Promise<string[]> {
  const caller = authenticated ? undefined : gatewayIdentity(governance);
  if (policy === undefined) return approvalBanner(await destructiveTools(gateway).catch(() => []), self, storeArgs, caller);
  const tools = await listedTools(gateway).catch(() => []);
  const chain = governance.options.principalChain ?? [osIdentity().principal];
  const { pause, depends } = policyPauses(tools, policy, chain);
  return approvalBanner(pause, self, storeArgs, caller, { file: policyFile ?? 'given', depends });
}

function gatewayIdentity(governance: GatewayGovernance): string {
  const p = governance.options.principalChain?.[0] ?? osIdentity().principal;
  return `${p.kind}:${p.id}`;
}
