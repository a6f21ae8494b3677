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
import { isContractId } from '../core/contract.js';
import { isToolEnvelopeError } from '../core/errors.js';
import { isApprovalMode, type ApprovalMode } from '../core/taxonomy.js';
import { loadGatewayConfig, type GatewayConfig } from '../mcp/config.js';
import { Gateway } from '../mcp/gateway.js';
import { serveHttp } from '../mcp/http.js';
import { StdioServerLineTransport } from '../mcp/stdio.js';
import { GatewayGovernance } from '../mcp/governance.js';
import type { UpstreamSpec } from '../mcp/upstream.js';
import type { Principal } from '../core/model.js';
import { loadPolicyFile, type CompiledPolicy } from '../runtime/policy.js';
import { createMemoryStore, openStore } from '../store/index.js';
import { EXIT, type CliIo } from './io.js';
import { UPSTREAM_FLAG_HELP, UPSTREAM_FLAG_OPTIONS, applyEnvFlags, parseUpstreamFlags } from './gateway-upstream-flags.js';

/** `--help` text. */
export const help = `Usage: tool-envelope gateway [options] -- UPSTREAM_COMMAND [ARGS...]
       tool-envelope gateway [options] --url http://HOST:PORT/mcp
       tool-envelope gateway [options] --config gateway.yaml

Serves MCP in front of one or more upstream MCP servers. Every request and
notification is forwarded; every tool result keeps the upstream's content
blocks and gains an envelope of the chosen contract as structuredContent.
Each call is recorded in the store's audit log.

Options:
  --dialect mcec|dw|contextos   contract of the envelopes (default mcec)
  --http PORT                   serve Streamable HTTP on 127.0.0.1:PORT/mcp (0 = a free port);
                                without it the gateway serves stdio
  --host ADDR                   interface for --http (default 127.0.0.1)
  --store PATH|URL              SQLite file or postgres:// URL (default ./tool-envelope.db)
  --no-store                    record nothing
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
                                pause for an approver, delegated calls need a user and evidence)
  --require-idempotency-key MODE
                                calls at MODE or above need _meta["tool-envelope/idempotency-key"]
                                (default: off)
  --principal KIND:ID           principal chain of calls whose _meta gives none (repeatable,
                                originating principal first; default: the client as agent:NAME)
  --approval-ttl MS             how long an approval request stays open (default 86400000)
  --approval-poll MS            how often approved requests are picked up, 0 = never (default 500)
${UPSTREAM_FLAG_HELP}  --quiet                       no diagnostics on stderr

Paused calls: approve with 'tool-envelope audit approvals approve ID --approver NAME --store ...';
this gateway then runs the call once and records its final envelope.

Examples:
  tool-envelope gateway -- npx -y @modelcontextprotocol/server-everything
  tool-envelope gateway --dialect dw --http 3333 -- node my-server.js
  tool-envelope gateway --config gateway.yaml --store postgres://app@localhost/agents
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
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || (!allowZero && n === 0)) return new Error(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer, got '${value}'`);
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
  const own = dash === -1 ? args : args.slice(0, dash);
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
        ...UPSTREAM_FLAG_OPTIONS,
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    return usageError(io, (err as Error).message);
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
    const spec: UpstreamSpec = typeof values.url === 'string' ? { name: 'upstream', url: values.url } : { name: 'upstream', command: command[0]!, args: command.slice(1), cwd: io.cwd };
    if (typeof values.prefix === 'string') spec.prefix = values.prefix;
    upstreams = [spec];
  }
  const upstreamFlags = parseUpstreamFlags(values);
  if (typeof upstreamFlags === 'string') return usageError(io, upstreamFlags);
  upstreams = applyEnvFlags(upstreams, upstreamFlags);

  const dialect = (values.dialect as string | undefined) ?? config?.dialect ?? 'mcec';
  if (!isContractId(dialect)) return usageError(io, `--dialect must be mcec, dw or contextos, got '${dialect}'`);
  const http = intOption(values.http as string | undefined, '--http', true) ?? config?.http;
  const deadline = intOption(values.deadline as string | undefined, '--deadline', false) ?? config?.deadlineMs;
  const preview = intOption(values['preview-limit'] as string | undefined, '--preview-limit', true) ?? config?.previewLimitBytes;
  const health = intOption(values['health-interval'] as string | undefined, '--health-interval', true);
  const ttl = intOption(values['approval-ttl'] as string | undefined, '--approval-ttl', false);
  const poll = intOption(values['approval-poll'] as string | undefined, '--approval-poll', true);
  for (const v of [http, deadline, preview, health, ttl, poll]) if (v instanceof Error) return usageError(io, v.message);
  const keyFrom = values['require-idempotency-key'] as string | undefined;
  if (keyFrom !== undefined && keyFrom !== 'off' && !isApprovalMode(keyFrom)) {
    return usageError(io, `--require-idempotency-key expects off or one of read_only, local_write, network, delegated, destructive; got '${keyFrom}'`);
  }
  const principals: Principal[] = [];
  for (const p of (values.principal as string[] | undefined) ?? []) {
    const colon = p.indexOf(':');
    const kind = p.slice(0, colon);
    if (colon <= 0 || colon === p.length - 1 || !['user', 'service', 'agent', 'automation'].includes(kind)) {
      return usageError(io, `--principal expects KIND:ID with KIND one of user, service, agent, automation; got '${p}'`);
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
    if (eq <= 0 || !isApprovalMode(mode)) return usageError(io, `--mode expects TOOL=MODE with MODE one of read_only, local_write, network, delegated, destructive; got '${m}'`);
    Object.defineProperty(modes, tool, { value: mode, enumerable: true, writable: true, configurable: true });
  }

  const quiet = values.quiet === true;
  const log = (line: string): void => {
    if (!quiet) io.stderr.write(`tool-envelope gateway: ${line}\n`);
  };

  const storeLocation = values['no-store'] === true ? undefined : ((values.store as string | undefined) ?? config?.store ?? './tool-envelope.db');
  const storePath =
    storeLocation === undefined || /^postgres(ql)?:\/\//i.test(storeLocation) || storeLocation === 'memory' || storeLocation === ':memory:'
      ? storeLocation
      : resolve(io.cwd, storeLocation.replace(/^sqlite:/i, ''));
  let store: Awaited<ReturnType<typeof openStore>> | undefined;
  try {
    if (storePath !== undefined) store = await openStore(storePath);
  } catch (err) {
    io.stderr.write(`tool-envelope gateway: cannot open the store ${redact(storePath!)}: ${(err as Error).message}\n`);
    return EXIT.USAGE;
  }

  // Without a store, policy, idempotency and approvals still apply, in memory (nothing is logged).
  const governance = new GatewayGovernance({
    store: store ?? createMemoryStore(),
    ...(policy ? { policy } : {}),
    ...(keyFrom !== undefined ? { requireIdempotencyKeyFrom: keyFrom === 'off' ? false : (keyFrom as ApprovalMode) } : {}),
    ...(principals.length > 0 ? { principalChain: principals } : {}),
    ...(typeof ttl === 'number' ? { approvalTtlMs: ttl } : {}),
    ...(typeof poll === 'number' ? { approvalPollMs: poll } : {}),
    ...(store ? { audit: { onError: (err: unknown) => log(`audit: ${(err as Error).message}`) } } : { audit: false as const }),
    onError: (err) => log(`approvals: ${(err as Error).message}`),
  });
  let gateway: Gateway;
  try {
    gateway = await Gateway.start({
      governance,
      upstreams,
      dialect,
      modes,
      log,
      ...(typeof deadline === 'number' ? { deadlineMs: deadline } : {}),
      ...(typeof preview === 'number' ? { previewLimitBytes: preview } : {}),
      ...(typeof health === 'number' ? { supervision: { healthIntervalMs: health } } : {}),
      outputSchema: upstreamFlags.outputSchema,
      ...(upstreamFlags.maxResultBytes !== undefined ? { maxResultBytes: upstreamFlags.maxResultBytes } : {}),
    });
  } catch (err) {
    await governance.close();
    await store?.close();
    io.stderr.write(`tool-envelope gateway: ${isToolEnvelopeError(err) ? err.message : String(err)}\n`);
    return EXIT.USAGE;
  }

  const auditNote = storePath === undefined ? 'audit log: off (--no-store)' : `audit log: ${redact(storePath)}  (tool-envelope audit list --store ${redact(storePath)})`;
  let stop: () => Promise<void>;
  let finished: Promise<void>;
  if (typeof http === 'number') {
    let endpoint;
    try {
      endpoint = await serveHttp(() => gateway.createServer(), { port: http, ...(typeof values.host === 'string' ? { host: values.host } : {}), log });
    } catch (err) {
      await gateway.close();
      await store?.close();
      io.stderr.write(`tool-envelope gateway: ${(err as Error).message}\n`);
      return EXIT.USAGE;
    }
    io.stdout.write(
      [
        `tool-envelope gateway (${dialect}) in front of ${upstreams.map((u) => u.name + (u.url ? ` ${u.url}` : ` ${[u.command, ...(u.args ?? [])].join(' ')}`)).join(', ')}`,
        `MCP endpoint (Streamable HTTP): ${endpoint.url}`,
        `  MCP Inspector: npx @modelcontextprotocol/inspector  → transport "Streamable HTTP", URL ${endpoint.url}`,
        auditNote,
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
    const server = gateway.createServer();
    finished = new Promise<void>((r) => {
      const cleanup = server.onclose;
      server.onclose = () => {
        cleanup?.();
        r();
      };
      if (io.signal.aborted) r();
      io.signal.addEventListener('abort', () => r(), { once: true });
      (io.stdin as NodeJS.ReadStream).once?.('end', () => r());
    });
    await server.connect(transport);
    stop = () => server.close();
  }
  if (io.signal.aborted) await Promise.resolve();
  await finished;
  log('shutting down');
  await stop().catch(() => {});
  await gateway.close();
  await store?.close();
  return EXIT.OK;
}

function redact(location: string): string {
  return location.replace(/(\/\/[^:/@]+):[^@/]*@/, '$1:***@');
}
