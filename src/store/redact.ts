/**
 * Redaction of audit records: secrets in arguments and results are replaced before a record is
 * stored, so the database, exports, reports and summaries never hold them (the tool got the real
 * values). Replaced: values under secret-naming keys (secret-names.ts), secret formats in strings
 * (secret-formats.ts, query-secrets.ts), and extra JSON pointers per tool; `redaction.pointers` says
 * where, never what. A record is only looked over, not copied, unless something matched.
 */
import { ToolEnvelopeError, type JsonObject } from 'tool-envelope/core';
import { auditBodyText, documentsOf } from './audit-body.js';
import { redactQuerySecrets } from './query-secrets.js';
import { REDACTED, redactJwts, redactUrlPasswords } from './secret-formats.js';
import { isSecretKey } from './secret-names.js';
import { isLeanStarted } from './started-record.js';
import type { AuditRecord } from './types.js';

export interface RedactionOptions {
  /**
   * Extra JSON pointers per tool name, rooted at `/args` (the call's arguments) or `/result`
   * (its result, in the result envelope and in the outcome).
   */
  pointers?: Readonly<Record<string, readonly string[]>>;
}

export { REDACTED } from './secret-formats.js';
export { isSecretKey } from './secret-names.js';

/** Bearer tokens, replaced first (the JWT inside one goes with it). */
const BEARER = /\b[Bb]earer\s+[A-Za-z0-9._~+/-]{8,}=*/g;

/** Secret formats inside strings after bearer tokens and JWTs, before URL passwords and query strings; each match is replaced. */
const SECRET_FORMATS: readonly RegExp[] = [
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bxox[abeoprs]-[A-Za-z0-9-]{10,}/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bsk-(?:proj-|ant-|live_|test_)?[A-Za-z0-9_-]{20,}/g,
];

// Any of the formats but JWTs and query strings, loosely: every string those formats redact matches
// it. JWTs and secret parameters are looked for exactly, by their scanners: expressions for them backtrack.
const ANY_FORMAT = /[Bb]earer\s|gh[pousr]_|github_pat_|xox[abeoprs]-|A[KS]IA[0-9A-Z]{16}|sk-[\w-]{20}|:\/\/[^\s/@]+@/;
/** Nodes looked at before a record counts as possibly holding a secret anyway (bounded time). */
const LOOK_BUDGET = 5_000;

/** A string with the secret formats in it replaced; `undefined` when it has none. */
export function redactString(text: string): string | undefined {
  let out = replaceFormat(text, BEARER);
  out = redactJwts(out) ?? out;
  for (const re of SECRET_FORMATS) out = replaceFormat(out, re);
  out = redactUrlPasswords(out) ?? out;
  out = redactQuerySecrets(out) ?? out;
  return out === text ? undefined : out;
}

/** `text` with the matches of one format replaced. */
function replaceFormat(text: string, re: RegExp): string {
  re.lastIndex = 0;
  if (!re.test(text)) return text;
  re.lastIndex = 0;
  return text.replace(re, REDACTED);
}

const escapePointer = (k: string): string => k.replace(/~/g, '~0').replace(/\//g, '~1');

/** Redacts a JSON value in place (its containers), noting the pointer of each replaced value. */
function walk(value: unknown, pointer: string, found: string[], seen: Set<object>): void {
  if (typeof value !== 'object' || value === null || seen.has(value)) return;
  // A document held twice (an outcome's result is its result envelope's output) is redacted once.
  seen.add(value);
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  for (const [k, v] of entries) {
    const at = `${pointer}/${escapePointer(String(k))}`;
    const container = value as Record<string | number, unknown>;
    if (typeof k === 'string' && isSecretKey(k) && v !== null && typeof v !== 'boolean' && v !== REDACTED) {
      container[k] = REDACTED;
      found.push(at);
    } else if (typeof v === 'string') {
      const r = redactString(v);
      if (r !== undefined) {
        container[k] = r;
        found.push(at);
      }
    } else walk(v, at, found, seen);
  }
}

function parsePointer(p: string): string[] {
  if (!p.startsWith('/')) throw new ToolEnvelopeError('invalid-option', `redaction pointer must start with /args or /result, got ${JSON.stringify(p)}`);
  return p
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Replaces the value at `path` under `root` (when present); returns true when it did. */
function redactAt(root: unknown, path: readonly string[]): boolean {
  let node: unknown = root;
  for (let i = 0; i < path.length - 1; i++) {
    if (typeof node !== 'object' || node === null) return false;
    node = (node as Record<string, unknown>)[path[i] as string];
  }
  const last = path[path.length - 1] as string;
  if (typeof node !== 'object' || node === null || !Object.hasOwn(node, last)) return false;
  const holder = node as Record<string, unknown>;
  if (holder[last] === REDACTED) return false;
  holder[last] = REDACTED;
  return true;
}

/** Looks at one value: true on a secret key or string, or when the budget is spent. */
function look(value: unknown, budget: { n: number }): boolean {
  if (typeof value === 'string') {
    return (
      ANY_FORMAT.test(value) || (value.includes('eyJ') && redactJwts(value) !== undefined) || (value.includes('=') && redactQuerySecrets(value) !== undefined)
    );
  }
  if (typeof value !== 'object' || value === null) return false;
  if (--budget.n < 0) return true;
  if (Array.isArray(value)) {
    for (const v of value) if (look(v, budget)) return true;
    return false;
  }
  for (const k in value) {
    const v = (value as Record<string, unknown>)[k];
    if (v !== null && typeof v !== 'boolean' && isSecretKey(k)) return true;
    if (look(v, budget)) return true;
  }
  return false;
}

/** True when the caller- or tool-supplied parts of a record may hold a secret. */
function mayHoldSecret(r: AuditRecord): boolean {
  const budget = { n: LOOK_BUDGET };
  const call = r.callEnvelope as Record<string, unknown>;
  const res = r.resultEnvelope as Record<string, unknown>;
  const out = r.outcome as Record<string, unknown>;
  if (look(call?.args, budget) || look(call?.metadata, budget) || look(call?.auth_ref, budget)) return true;
  if (look(res?.output, budget) || look(res?.error, budget) || look(res?.mutations, budget) || look(res?.citations, budget) || look(res?.artifacts, budget))
    return true;
  // The outcome's result is usually the envelope's output, already looked at.
  if (out?.result !== res?.output && look(out?.result, budget)) return true;
  return look(out?.error, budget) || look(out?.warnings, budget) || look(out?.metadata, budget);
}

/** Checks redaction options (pointers rooted at `/args` or `/result`); throws `invalid-option`. */
export function checkRedactionOptions(options: RedactionOptions): void {
  for (const [tool, list] of Object.entries(options.pointers ?? {})) {
    if (!Array.isArray(list)) throw new ToolEnvelopeError('invalid-option', `redaction pointers of ${tool} must be a list`);
    for (const p of list) {
      const [root, ...rest] = parsePointer(p);
      if ((root !== 'args' && root !== 'result') || rest.length === 0) {
        throw new ToolEnvelopeError('invalid-option', `redaction pointer of ${tool} must start with /args/ or /result/, got ${JSON.stringify(p)}`);
      }
    }
  }
}

/**
 * Redaction pointers of several sources (policy file, gateway config, flags) as one object: each
 * tool's pointers in order, without duplicates. Always a fresh object (safe to add to).
 */
export function mergeRedactionPointers(...sources: readonly (Readonly<Record<string, readonly string[]>> | undefined)[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const source of sources) {
    for (const [tool, list] of Object.entries(source ?? {})) {
      const merged = [...new Set([...(Object.hasOwn(out, tool) ? (out[tool] as string[]) : []), ...list])];
      // defineProperty: a tool named `__proto__` is an own key like any other.
      Object.defineProperty(out, tool, { value: merged, enumerable: true, writable: true, configurable: true });
    }
  }
  return out;
}

/**
 * Makes the function the audit writer applies to each record before storing it: the record
 * itself when there is nothing to redact, else a copy with the secrets replaced and
 * `redaction.pointers` set. `false` gives a function that marks records `redaction: { off: true }`.
 *
 * @example
 * ```ts
 * const redact = createRedactor();
 * redact(record).redaction; // { pointers: ['/callEnvelope/args/password'] } when it had one
 * ```
 */
export function createRedactor(options: RedactionOptions | false = {}): (record: AuditRecord) => AuditRecord {
  if (options === false) return (record) => ({ ...record, redaction: { off: true } });
  checkRedactionOptions(options);
  const extra = new Map<string, string[][]>();
  for (const [tool, list] of Object.entries(options.pointers ?? {})) extra.set(tool, list.map(parsePointer));
  return (record) => {
    const paths = extra.get(record.tool);
    if (paths === undefined && !mayHoldSecret(record)) return record;
    // Redacted from the record as serialised (frozen) when it was submitted, never the caller's objects.
    const docs = documentsOf(auditBodyText(record), record);
    const found: string[] = [];
    for (const path of paths ?? []) {
      const [root, ...rest] = path;
      const targets: [unknown, string][] =
        root === 'args'
          ? [[docs.callEnvelope.args, '/callEnvelope/args']]
          : [
              [docs.resultEnvelope.output, '/resultEnvelope/output'],
              [(docs.outcome as JsonObject).result, '/outcome/result'],
            ];
      for (const [target, base] of targets) {
        if (redactAt(target, rest)) found.push(`${base}/${rest.map(escapePointer).join('/')}`);
      }
    }
    const seen = new Set<object>();
    walk(docs.callEnvelope, '/callEnvelope', found, seen);
    walk(docs.resultEnvelope, '/resultEnvelope', found, seen);
    walk(docs.outcome, '/outcome', found, seen);
    walk(docs.policyDecision, '/policyDecision', found, seen);
    if (found.length === 0) return record;
    const redaction = { pointers: [...new Set(found)] };
    // A started record's own result envelope and outcome (only its ids) stay, and its body lean, when nothing was redacted in them.
    if (isLeanStarted(record) && !found.some((p) => p.startsWith('/resultEnvelope/') || p.startsWith('/outcome/'))) {
      return { ...record, callEnvelope: docs.callEnvelope, principalChain: docs.principalChain, policyDecision: docs.policyDecision, redaction };
    }
    return { ...record, ...docs, redaction };
  };
}
