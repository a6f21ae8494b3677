/**
 * The gateway config file (JSON or YAML): several upstreams with tool-name
 * prefixes, per-tool approval modes and the gateway's own settings.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  ToolEnvelopeError,
  isToolEnvelopeError,
  type Issue,
  isJsonObject,
  isApprovalMode,
  type ApprovalMode,
  isContractId,
  compileFailureRules,
  type CompiledFailureRules,
} from 'tool-envelope/core';
import { type NotifyTarget, parseNotifyTargets } from '../../governance/notify/notify-target.js';
import { parseYamlWithin } from '../../governance/yaml-depth.js';
import { hidePassword } from '../../store/hide-url-secrets.js';
import { checkRedactionOptions } from '../../store/redact.js';
import type { Dialect } from '../envelope.js';
import type { UpstreamSpec } from '../upstream/upstream.js';

/** A parsed config file. Every setting also has a command-line flag; flags win. */
export interface GatewayConfig {
  upstreams: UpstreamSpec[];
  dialect?: Dialect;
  deadlineMs?: number;
  previewLimitBytes?: number;
  /** Store location: a SQLite path or a PostgreSQL URL. */
  store?: string;
  /** Serve over Streamable HTTP on this port. */
  http?: number;
  /** Approval modes by gateway tool name (with prefix). */
  modes?: Record<string, ApprovalMode>;
  /** Policy file (JSON or YAML, see docs/governance.md), resolved against the config file's directory. */
  policy?: string;
  /** Extra JSON pointers to redact in the audit log, by gateway tool name: `{ "<tool>": ["/args/...", "/result/..."] }` (what `--redact` adds to). */
  redact?: Record<string, string[]>;
  /** Webhooks told of approval requests (`notify:` entries `{ url, format: json|slack, secretFile }`; `--notify` adds to them). */
  notify?: NotifyTarget[];
  /** How long a paused call is held open for its decision, in ms (`--approval-wait` wins). */
  approvalWaitMs?: number;
}

function redactRecord(value: unknown, where: string): Record<string, string[]> {
  if (!isJsonObject(value)) fail(where, 'must be an object mapping tool names to lists of JSON pointers under /args or /result');
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(value)) {
    if (!Array.isArray(v) || !v.every((p) => typeof p === 'string')) fail(`${where}.${k}`, 'must be a list of JSON pointers (strings)');
    Object.defineProperty(out, k, { value: [...v], enumerable: true, writable: true, configurable: true });
  }
  try {
    checkRedactionOptions({ pointers: out });
  } catch (e) {
    fail(where, (e as Error).message);
  }
  return out;
}

function fail(path: string, message: string, issues: Issue[] = []): never {
  throw new ToolEnvelopeError('invalid-option', `${path}: ${message}`, { issues });
}

/** The settings at the top of the file, and those of an upstream (by kind: a command or a URL). */
const TOP_KEYS = ['upstreams', 'dialect', 'deadlineMs', 'previewLimitBytes', 'store', 'http', 'modes', 'policy', 'redact', 'notify', 'approvalWaitMs'] as const;
const UPSTREAM_KEYS = ['name', 'prefix', 'modes', 'failureRules', 'isolation', 'era', 'strict', 'maxRequestBytes', 'maxInstances'] as const;
const COMMAND_KEYS = ['command', 'args', 'env', 'cwd'] as const;
const URL_KEYS = ['url', 'headers'] as const;

/**
 * Refuses a key the level does not know: a misspelt `polcy:` ignored would run the gateway without
 * its policy. The issue's `params` carry the key and the expected ones (the CLI adds a did-you-mean).
 */
function knownKeys(obj: Record<string, unknown>, expected: readonly string[], where: string, note?: (key: string) => string | undefined): void {
  for (const key of Object.keys(obj)) {
    if (expected.includes(key)) continue;
    const message = note?.(key) ?? `unknown key (expected one of ${expected.join(', ')})`;
    fail(`${where}.${key}`, message, [{ code: 'unknown-key', path: `${where}.${key}`, message, params: { key, expected: [...expected] } }]);
  }
}

function stringRecord(value: unknown, where: string): Record<string, string> {
  if (!isJsonObject(value)) fail(where, 'must be an object of strings');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') fail(`${where}.${k}`, 'must be a string');
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function modesRecord(value: unknown, where: string): Record<string, ApprovalMode> {
  if (!isJsonObject(value)) fail(where, 'must be an object mapping tool names to approval modes');
  const out: Record<string, ApprovalMode> = {};
  for (const [k, v] of Object.entries(value)) {
    if (!isApprovalMode(v)) fail(`${where}.${k}`, `'${String(v)}' is not an approval mode (read_only, local_write, network, delegated, destructive)`);
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function positiveInt(value: unknown, where: string, allowZero = false): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < (allowZero ? 0 : 1)) {
    fail(where, `must be a ${allowZero ? 'non-negative' : 'positive'} integer`);
  }
  return value;
}

/**
 * An upstream's plain-failure rules: a rule file inline, or the path of one (JSON, or YAML for
 * any other extension; relative to the config file). Compiled here, so a bad pattern stops the
 * gateway at start with the rule's pointer, never a call. The rule set is named
 * `upstream:<name>` (what envelopes report as the `ruleSet` of a match).
 */
function failureRules(value: unknown, baseDir: string, where: string, upstream: string): CompiledFailureRules {
  let doc = value;
  let file: string | undefined;
  if (typeof value === 'string') {
    file = resolve(baseDir, value);
    try {
      const text = readFileSync(file, 'utf8');
      doc = file.endsWith('.json') ? JSON.parse(text) : parseYamlWithin(text);
    } catch (err) {
      fail(where, `cannot read the rule file ${file}: ${(err as Error).message}`);
    }
  } else if (!isJsonObject(value)) fail(where, 'must be a rule file ({ format, rules }) or the path of one');
  try {
    return compileFailureRules(doc, `upstream:${upstream}`);
  } catch (err) {
    fail(where, `${file ? `${file}: ` : ''}${(err as Error).message}`, (err as { issues?: Issue[] }).issues ?? []);
  }
}

/** Validates a config object (already parsed from JSON or YAML). */
export function parseGatewayConfig(doc: unknown, baseDir: string, source = 'config'): GatewayConfig {
  if (!isJsonObject(doc)) fail(source, 'must be an object with an `upstreams` list');
  knownKeys(doc, TOP_KEYS, source);
  const ups = doc.upstreams;
  if (!Array.isArray(ups) || ups.length === 0) fail(`${source}.upstreams`, 'must be a non-empty list');
  const names = new Set<string>();
  const upstreams = ups.map((u, i): UpstreamSpec => {
    const where = `${source}.upstreams[${i}]`;
    if (!isJsonObject(u)) fail(where, 'must be an object');
    const byCommand = u.command !== undefined;
    const ownKeys = [...UPSTREAM_KEYS, ...(byCommand ? COMMAND_KEYS : u.url !== undefined ? URL_KEYS : [...COMMAND_KEYS, ...URL_KEYS])];
    const otherKind = (key: string): string | undefined =>
      (byCommand ? (URL_KEYS as readonly string[]) : u.url !== undefined ? COMMAND_KEYS : []).includes(key)
        ? `applies to ${byCommand ? 'a `url` upstream, not a `command` one' : 'a `command` upstream, not a `url` one'}`
        : undefined;
    knownKeys(u, ownKeys, where, otherKind);
    const name = u.name ?? `upstream${i + 1}`;
    if (typeof name !== 'string' || name === '') fail(`${where}.name`, 'must be a non-empty string');
    if (names.has(name)) fail(`${where}.name`, `duplicate upstream name '${name}'`);
    names.add(name);
    if ((u.command === undefined) === (u.url === undefined)) fail(where, 'needs exactly one of `command` (stdio) or `url` (Streamable HTTP)');
    const spec: UpstreamSpec = { name };
    if (u.prefix !== undefined) {
      if (typeof u.prefix !== 'string') fail(`${where}.prefix`, 'must be a string');
      spec.prefix = u.prefix;
    }
    if (u.command !== undefined) {
      if (typeof u.command !== 'string' || u.command === '') fail(`${where}.command`, 'must be a non-empty string');
      spec.command = u.command;
      if (u.args !== undefined) {
        if (!Array.isArray(u.args) || !u.args.every((a) => typeof a === 'string')) fail(`${where}.args`, 'must be a list of strings');
        spec.args = u.args as string[];
      }
      if (u.env !== undefined) spec.env = stringRecord(u.env, `${where}.env`);
      if (u.cwd !== undefined) {
        if (typeof u.cwd !== 'string') fail(`${where}.cwd`, 'must be a string');
        spec.cwd = resolve(baseDir, u.cwd);
      }
    } else {
      if (typeof u.url !== 'string') fail(`${where}.url`, 'must be a string');
      try {
        new URL(u.url);
      } catch {
        fail(`${where}.url`, `'${hidePassword(u.url)}' is not a URL`);
      }
      spec.url = u.url;
      if (u.headers !== undefined) spec.headers = stringRecord(u.headers, `${where}.headers`);
    }
    if (u.modes !== undefined) spec.modes = modesRecord(u.modes, `${where}.modes`);
    if (u.failureRules !== undefined) spec.failureRules = failureRules(u.failureRules, baseDir, `${where}.failureRules`, name);
    if (u.isolation !== undefined) {
      if (u.isolation !== 'shared' && u.isolation !== 'tenant' && u.isolation !== 'session') fail(`${where}.isolation`, 'must be shared, tenant or session');
      spec.isolation = u.isolation;
    }
    if (u.era !== undefined) {
      if (u.era !== 'auto' && u.era !== 'legacy' && u.era !== 'modern') fail(`${where}.era`, 'must be auto, legacy or modern');
      spec.era = u.era;
    }
    if (u.strict !== undefined) {
      if (typeof u.strict !== 'boolean') fail(`${where}.strict`, 'must be true or false');
      spec.strict = u.strict;
    }
    for (const k of ['maxRequestBytes', 'maxInstances'] as const) {
      const v = u[k];
      if (v === undefined) continue;
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) fail(`${where}.${k}`, 'must be a positive integer');
      spec[k] = v;
    }
    return spec;
  });
  const prefixes = upstreams.map((u) => u.prefix ?? '');
  if (upstreams.length > 1 && prefixes.some((p, i) => prefixes.some((q, j) => i !== j && q.startsWith(p)))) {
    fail(`${source}.upstreams`, 'with several upstreams, every upstream needs a prefix and no prefix may start another');
  }
  const cfg: GatewayConfig = { upstreams };
  if (doc.dialect !== undefined) {
    if (!isContractId(doc.dialect)) fail(`${source}.dialect`, 'must be mcec, dw, contextos, mcec@2026-07 or dw@14');
    cfg.dialect = doc.dialect;
  }
  if (doc.deadlineMs !== undefined) cfg.deadlineMs = positiveInt(doc.deadlineMs, `${source}.deadlineMs`);
  if (doc.previewLimitBytes !== undefined) cfg.previewLimitBytes = positiveInt(doc.previewLimitBytes, `${source}.previewLimitBytes`, true);
  if (doc.http !== undefined) cfg.http = positiveInt(doc.http, `${source}.http`, true);
  if (doc.store !== undefined) {
    if (typeof doc.store !== 'string' || doc.store === '') fail(`${source}.store`, 'must be a path or a postgres:// URL');
    cfg.store = doc.store;
  }
  if (doc.modes !== undefined) cfg.modes = modesRecord(doc.modes, `${source}.modes`);
  if (doc.policy !== undefined) {
    if (typeof doc.policy !== 'string' || doc.policy === '') fail(`${source}.policy`, 'must be the path of a policy file');
    cfg.policy = resolve(baseDir, doc.policy);
  }
  if (doc.redact !== undefined) cfg.redact = redactRecord(doc.redact, `${source}.redact`);
  if (doc.notify !== undefined) cfg.notify = parseNotifyTargets(doc.notify, baseDir, `${source}.notify`);
  if (doc.approvalWaitMs !== undefined) cfg.approvalWaitMs = positiveInt(doc.approvalWaitMs, `${source}.approvalWaitMs`, true);
  return cfg;
}

/**
 * Reads and validates a config file; `.json` is JSON, anything else is YAML (a superset of JSON).
 *
 * @example
 * ```ts
 * const config = await loadGatewayConfig('./gateway.yaml');
 * ```
 */
export async function loadGatewayConfig(path: string): Promise<GatewayConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ToolEnvelopeError('invalid-option', `cannot read config file ${path}: ${(err as Error).message}`, { cause: err });
  }
  let doc: unknown;
  try {
    doc = path.endsWith('.json') ? JSON.parse(text) : parseYamlWithin(text);
  } catch (err) {
    if (isToolEnvelopeError(err, 'too-deep')) throw new ToolEnvelopeError('too-deep', `config file ${path}: ${err.message}`, { cause: err });
    throw new ToolEnvelopeError('invalid-json', `config file ${path} is not valid ${path.endsWith('.json') ? 'JSON' : 'YAML'}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return parseGatewayConfig(doc, resolve(path, '..'), path);
}
