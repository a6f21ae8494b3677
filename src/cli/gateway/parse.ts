/**
 * Step 1 of `tool-envelope gateway`: the command line (and the config file it names) read into one
 * value, every flag checked before anything starts. A string is a usage error.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type ApprovalMode, type ContractId, isApprovalMode, isContractId, isPrincipalKind, PRINCIPAL_KINDS, type Principal } from 'tool-envelope/core';
import { assertPolicyTests, type CompiledPolicy, loadPolicyFile } from '../../governance/policy.js';
import { type GatewayConfig, loadGatewayConfig } from '../../mcp/gateway/config.js';
import { type Authenticator, loadTokenAuthenticator, oauthAuthenticator } from '../../mcp/serve/auth.js';
import { isLoopbackHost, replicaSessionId } from '../../mcp/serve/http.js';
import type { UpstreamSpec } from '../../mcp/upstream/upstream.js';
import { checkRedactionOptions, mergeRedactionPointers } from '../../store/redact.js';
import { negativeValues, parseErrorMessage } from '../args.js';
import { withDidYouMean } from '../suggest.js';
import { CONSOLE_FLAG_OPTIONS, parseTrustProxyFlag } from '../console-mount.js';
import { type OidcFlags, parseOidcFlags } from '../console-oidc.js';
import { NOTIFY_FLAG_OPTIONS } from './approvals.js';
import { metricsArgs, OBSERVE_FLAG_OPTIONS, type ObserveFlags, parseObserveFlags } from './observe.js';
import { applyEnvFlags, parseUpstreamFlags, UPSTREAM_FLAG_OPTIONS, type UpstreamFlags } from './upstream-flags.js';
import type { CliIo } from '../io.js';
import { hidePassword, isMemoryStore } from './store-location.js';
import { MAX_TIMER_MS } from './timer-limit.js';

export type FlagValues = Record<string, string | boolean | string[] | undefined>;

/** Everything the gateway verb was asked for, checked. */
export interface GatewaySettings {
  /** The flags as parsed, for the parts that read their own (console, notify). */
  values: FlagValues;
  config: GatewayConfig | undefined;
  upstreams: UpstreamSpec[];
  upstreamFlags: UpstreamFlags;
  dialect: ContractId;
  /** The HTTP port; `undefined` serves stdio. */
  http: number | undefined;
  host: string;
  deadlineMs: number | undefined;
  previewLimitBytes: number | undefined;
  healthIntervalMs: number | undefined;
  approvalTtlMs: number | undefined;
  approvalPollMs: number | undefined;
  maxSessions: number | undefined;
  sessionIdleMs: number | undefined;
  sessionId: (() => string) | undefined;
  auth: Authenticator | undefined;
  requireIdempotencyKeyFrom: ApprovalMode | false | undefined;
  principals: Principal[];
  policy: CompiledPolicy | undefined;
  policyFile: string | undefined;
  modes: Record<string, ApprovalMode>;
  auditCommit: 'before-answer' | 'background';
  redaction: false | { pointers: Record<string, string[]> };
  observeFlags: ObserveFlags;
  /** `--console`'s OpenID Connect sign-in (`--oidc-issuer`, `--oidc-client-id`, `--public-url`). */
  consoleOidc: OidcFlags | undefined;
  /** `--console`'s trusted reverse proxies (`--trust-proxy`). */
  consoleTrustProxy: string[] | undefined;
  /** A SQLite path (resolved), a PostgreSQL URL, `memory`, or `undefined` with `--no-store`. */
  storePath: string | undefined;
}

const OPTIONS = {
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
} as const;

/** Reads the command line; `help` names the flags a misspelt one is matched against. */
export async function parseGatewayArgs(args: string[], io: CliIo, help: string): Promise<GatewaySettings | string> {
  const dash = args.indexOf('--');
  const command = dash === -1 ? [] : args.slice(dash + 1);
  let values: FlagValues;
  try {
    ({ values } = parseArgs({
      args: negativeValues(metricsArgs(authArgs(dash === -1 ? args : args.slice(0, dash))), OPTIONS),
      options: OPTIONS,
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    const flags = [...new Set(help.match(/--[a-z][a-z-]*/g) ?? [])];
    return parseErrorMessage(err, flags, (arg) => `put the upstream command after '--', as in: tool-envelope gateway [options] -- ${arg} ...`);
  }
  let config: GatewayConfig | undefined;
  try {
    if (typeof values.config === 'string') config = await loadGatewayConfig(resolve(io.cwd, values.config));
  } catch (err) {
    return withDidYouMean(err);
  }
  const upstreams = upstreamsOf(values, command, config, io.cwd);
  if (typeof upstreams === 'string') return upstreams;
  const upstreamFlags = parseUpstreamFlags(values);
  if (typeof upstreamFlags === 'string') return upstreamFlags;
  const dialect = (values.dialect as string | undefined) ?? config?.dialect ?? 'mcec';
  if (!isContractId(dialect)) return `--dialect must be mcec, dw, contextos, mcec@2026-07 or dw@14, got '${dialect}'`;
  const numbers = numbersOf(values, config);
  if (typeof numbers === 'string') return numbers;
  const listener = await listenerOf(values, numbers.http, io.cwd);
  if (typeof listener === 'string') return listener;
  const governance = await governanceOf(values, config, io.cwd);
  if (typeof governance === 'string') return governance;
  const audit = auditOf(values, config, governance.policy);
  if (typeof audit === 'string') return audit;
  const consoleOidc = consoleOidcOf(values, io);
  if (typeof consoleOidc === 'string') return consoleOidc;
  const consoleTrustProxy = parseTrustProxyFlag(values);
  if (typeof consoleTrustProxy === 'string') return consoleTrustProxy;
  if (consoleTrustProxy && values.console !== true) return '--trust-proxy applies to --console';
  // A console without a sign-in signs everyone in as admin: off loopback it needs one, whatever
  // --insecure-no-auth says (that flag covers the MCP endpoint only), as the console verb's --listen.
  if (values.console === true && !isLoopbackHost(listener.host) && !listener.auth && !consoleOidc)
    return `--console on --host ${listener.host} is reachable from other machines and would sign anyone in as admin: give --auth tokens FILE, --auth oauth or --oidc-issuer URL for its sign-in (--insecure-no-auth covers the MCP endpoint only, never the console)`;
  const observeFlags = parseObserveFlags(values);
  if (typeof observeFlags === 'string') return observeFlags;
  if (observeFlags.metrics === 'on' && typeof numbers.http !== 'number')
    return '--metrics alone serves them on the --http listener; over stdio give --metrics HOST:PORT';
  const store = storePathOf(values, config, io);
  if (typeof store === 'string') return store;
  return {
    values,
    config,
    upstreams: applyEnvFlags(upstreams, upstreamFlags),
    upstreamFlags,
    dialect,
    ...numbers,
    ...listener,
    ...governance,
    ...audit,
    consoleOidc,
    consoleTrustProxy,
    observeFlags,
    ...store,
  };
}

function upstreamsOf(values: FlagValues, command: string[], config: GatewayConfig | undefined, cwd: string): UpstreamSpec[] | string {
  const sources = [command.length > 0, typeof values.url === 'string', config !== undefined].filter(Boolean).length;
  if (sources !== 1) return 'give exactly one upstream: `-- COMMAND [ARGS...]`, `--url URL` or `--config FILE`';
  if (config) return config.upstreams;
  const spec: UpstreamSpec =
    typeof values.url === 'string' ? { name: 'upstream', url: values.url } : { name: 'upstream', command: command[0]!, args: command.slice(1), cwd };
  if (typeof values.prefix === 'string') spec.prefix = values.prefix;
  return [spec];
}

type Numbers = Pick<
  GatewaySettings,
  'http' | 'deadlineMs' | 'previewLimitBytes' | 'healthIntervalMs' | 'approvalTtlMs' | 'approvalPollMs' | 'maxSessions' | 'sessionIdleMs'
>;

/** The highest TCP port. */
const MAX_PORT = 65_535;

function numbersOf(values: FlagValues, config: GatewayConfig | undefined): Numbers | string {
  const int = (name: string, allowZero: boolean) => intOption(values[name] as string | undefined, `--${name}`, allowZero);
  const ms = (name: string, allowZero: boolean) => intOption(values[name] as string | undefined, `--${name}`, allowZero, MAX_TIMER_MS);
  const found = {
    http: int('http', true) ?? config?.http,
    deadlineMs: ms('deadline', false) ?? timerMs(config?.deadlineMs, "the config file's deadlineMs"),
    previewLimitBytes: int('preview-limit', true) ?? config?.previewLimitBytes,
    healthIntervalMs: ms('health-interval', true),
    // A date (now + TTL), not a timer: any safe integer.
    approvalTtlMs: int('approval-ttl', false),
    approvalPollMs: ms('approval-poll', true),
    maxSessions: int('max-sessions', false),
    sessionIdleMs: ms('session-idle', true),
  };
  // Checked here, before any upstream starts (the listener would refuse it only after).
  if (found.http instanceof Error || (typeof found.http === 'number' && found.http > MAX_PORT))
    return `--http must be a port number from 0 to ${MAX_PORT}, got '${values.http ?? found.http}'`;
  for (const v of Object.values(found)) if (v instanceof Error) return v.message;
  return found as Numbers;
}

/** A duration from the config file (already a positive integer) checked against the timer limit. */
function timerMs(value: number | undefined, name: string): number | undefined | Error {
  if (value === undefined || value <= MAX_TIMER_MS) return value;
  return new Error(`${name} must be at most ${MAX_TIMER_MS} ms (about 24.8 days), got ${value}`);
}

/** `max`: a duration in ms that a timer waits, at most {@link MAX_TIMER_MS}. */
function intOption(value: string | undefined, name: string, allowZero: boolean, max?: number): number | undefined | Error {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || (!allowZero && n === 0))
    return new Error(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer, got '${value}'`);
  if (max !== undefined && n > max) return new Error(`${name} must be at most ${max} ms (about 24.8 days), got '${value}'`);
  return n;
}

/** Where the gateway listens and who may call it. */
async function listenerOf(values: FlagValues, http: number | undefined, cwd: string): Promise<Pick<GatewaySettings, 'host' | 'sessionId' | 'auth'> | string> {
  const host = typeof values.host === 'string' ? values.host : '127.0.0.1';
  const replica = values['replica-id'] as string | undefined;
  let sessionId: (() => string) | undefined;
  if (replica !== undefined) {
    if (typeof http !== 'number') return '--replica-id applies to --http';
    try {
      sessionId = replicaSessionId(replica);
    } catch (err) {
      return `--replica-id: ${(err as Error).message}`;
    }
  }
  let auth: Authenticator | undefined;
  try {
    auth = await authenticatorFrom(values, cwd, typeof http === 'number' ? http : 0, host);
  } catch (err) {
    return withDidYouMean(err);
  }
  if (auth && typeof http !== 'number') return '--auth applies to --http; over stdio the session acts for --principal (default: the OS user)';
  if (values.console === true && typeof http !== 'number') return '--console applies to --http: the console is served on its listener';
  if (typeof http === 'number' && !isLoopbackHost(host) && !auth && values['insecure-no-auth'] !== true)
    return `--host ${host} is reachable from other machines: give --auth tokens FILE or --auth oauth (or --insecure-no-auth to serve without authentication)`;
  return { host, sessionId, auth };
}

/** The console's OpenID Connect flags, parsed as the `console` verb's; they need `--console`. */
function consoleOidcOf(values: FlagValues, io: CliIo): OidcFlags | undefined | string {
  const oidc = parseOidcFlags(values, io.env);
  if (typeof oidc === 'string') return oidc;
  if ((oidc !== undefined || values['public-url'] !== undefined) && values.console !== true) return '--oidc-issuer and --public-url apply to --console';
  return oidc;
}

/** What the governance is given: who calls act for, the policy, the modes, when a key is required. */
async function governanceOf(
  values: FlagValues,
  config: GatewayConfig | undefined,
  cwd: string,
): Promise<Pick<GatewaySettings, 'requireIdempotencyKeyFrom' | 'principals' | 'policy' | 'policyFile' | 'modes'> | string> {
  const keyFrom = values['require-idempotency-key'] as string | undefined;
  if (keyFrom !== undefined && keyFrom !== 'off' && !isApprovalMode(keyFrom))
    return `--require-idempotency-key expects off or one of read_only, local_write, network, delegated, destructive; got '${keyFrom}'`;
  const principals: Principal[] = [];
  for (const p of (values.principal as string[] | undefined) ?? []) {
    const colon = p.indexOf(':');
    const kind = p.slice(0, colon);
    if (colon <= 0 || colon === p.length - 1 || !isPrincipalKind(kind))
      return `--principal expects KIND:ID with KIND one of ${PRINCIPAL_KINDS.join(', ')}; got '${p}'`;
    principals.push({ kind: kind as Principal['kind'], id: p.slice(colon + 1) });
  }
  let policy: CompiledPolicy | undefined;
  const policyFile = typeof values.policy === 'string' ? resolve(cwd, values.policy) : config?.policy;
  try {
    if (policyFile !== undefined) {
      policy = await loadPolicyFile(policyFile);
      // As a reload would: a policy whose own test cases fail is never put in force.
      assertPolicyTests(policy, policyFile);
    }
  } catch (err) {
    return (err as Error).message;
  }
  const modes: Record<string, ApprovalMode> = { ...config?.modes };
  for (const m of (values.mode as string[] | undefined) ?? []) {
    const eq = m.lastIndexOf('=');
    const mode = m.slice(eq + 1);
    if (eq <= 0 || !isApprovalMode(mode))
      return `--mode expects TOOL=MODE with MODE one of read_only, local_write, network, delegated, destructive; got '${m}'`;
    Object.defineProperty(modes, m.slice(0, eq), { value: mode, enumerable: true, writable: true, configurable: true });
  }
  const requireIdempotencyKeyFrom = keyFrom === undefined ? undefined : keyFrom === 'off' ? false : (keyFrom as ApprovalMode);
  return { requireIdempotencyKeyFrom, principals, policy, policyFile, modes };
}

/** How the audit log commits and what it redacts: the config file's pointers, then the flags' (added to them). */
function auditOf(
  values: FlagValues,
  config: GatewayConfig | undefined,
  policy: CompiledPolicy | undefined,
): Pick<GatewaySettings, 'auditCommit' | 'redaction'> | string {
  const auditCommit = (values['audit-commit'] as string | undefined) ?? 'before-answer';
  if (auditCommit !== 'before-answer' && auditCommit !== 'background') return `--audit-commit must be before-answer or background, got '${auditCommit}'`;
  const pointers: Record<string, string[]> = mergeRedactionPointers(config?.redact ?? {});
  const flags = (values.redact as string[] | undefined) ?? [];
  for (const r of flags) {
    const eq = r.indexOf('=/');
    if (eq <= 0) return `--redact expects TOOL=POINTER with POINTER under /args or /result, got '${r}'`;
    const tool = r.slice(0, eq);
    Object.defineProperty(pointers, tool, { value: [...(pointers[tool] ?? []), r.slice(eq + 1)], enumerable: true, writable: true, configurable: true });
  }
  if (values['no-redact'] === true && flags.length > 0) return '--redact and --no-redact exclude each other';
  if (values['no-redact'] === true && policy?.document.redact !== undefined) return 'the --policy file redacts values (redact), which --no-redact turns off';
  const redaction = values['no-redact'] === true ? (false as const) : { pointers };
  try {
    if (redaction) checkRedactionOptions(redaction);
  } catch (err) {
    return (err as Error).message;
  }
  return { auditCommit, redaction };
}

/** The store location, resolved; a string is the usage error (an empty one, an unknown scheme). */
function storePathOf(values: FlagValues, config: GatewayConfig | undefined, io: CliIo): { storePath: string | undefined } | string {
  if (values['no-store'] === true) return { storePath: undefined };
  const location = (values.store as string | undefined) ?? config?.store ?? (io.env.TOOL_ENVELOPE_STORE || undefined) ?? './tool-envelope.db';
  const what = 'a SQLite file (or sqlite:PATH), a postgres:// or postgresql:// URL, or memory';
  if (location.trim() === '') return `--store needs a location: ${what} (or --no-store)`;
  if (/^postgres(ql)?:\/\//i.test(location) || isMemoryStore(location)) return { storePath: location };
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(location)?.[1];
  if (scheme !== undefined && scheme.toLowerCase() !== 'sqlite') return `--store ${hidePassword(location)}: unknown scheme '${scheme}://'; give ${what}`;
  return { storePath: resolve(io.cwd, location.replace(/^sqlite:/i, '')) };
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
