/**
 * The MCEC failure summary of a session: what a bug report needs, from the
 * audit log alone (no rerun): the failing call with its envelopes, the last
 * good observation, the calls before it and the artifacts involved.
 */
import { contracts, isJsonObject, type JsonObject, type JsonValue, type ToolOutcome, isSuccessStatus } from 'tool-envelope/core';
import type { AuditRecord, Store } from '../store/types.js';
import { boundedJson } from './data.js';
import { printable, printableJson } from '../store/printable.js';
import { isFailureStatus } from './record-kind.js';

export interface FailureSummaryOptions {
  /** The failing call to summarise: an audit id or a tool call id (default: the session's latest failure). */
  call?: string;
  /** How many earlier calls of the session to list (default 10). */
  before?: number;
  /** Bytes of each JSON block kept (default 16 384). */
  maxJsonBytes?: number;
  now?: number;
}

/** A built summary: the Markdown, and the records it is about. */
export interface FailureSummary {
  markdown: string;
  failing: AuditRecord;
  before: AuditRecord[];
  /** The last good observation, and where it came from. */
  lastObservation: { value: JsonValue; source: 'envelope' | 'prior-call'; record?: AuditRecord } | null;
  artifacts: string[];
}

/** True for records that count as failures (anything but `ok`, `completed` and `paused`). */
export function isFailureRecord(r: Pick<AuditRecord, 'status'>): boolean {
  return isFailureStatus(r.status);
}

/** A fence longer than any run of backticks in `text`, so JSON cannot close it early. */
function fenced(json: string, lang = 'json'): string {
  const text = printableJson(json);
  const longest = Math.max(2, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${lang}\n${text}\n${fence}`;
}

/**
 * Stored text in running Markdown (a heading, a table cell): terminal escapes and newlines become
 * `?` (the summary is printed too), and '<' cannot open HTML in a viewer that renders it.
 */
function inline(text: string): string {
  return printable(text).replace(/</g, '&lt;');
}

/** Table cells: pipes would also break the row. */
function cell(text: string): string {
  return inline(text).replace(/\\/g, '\\\\').replace(/\|/g, '\\|');
}

/** Stored text in a code span: a backtick would close it. */
function code(text: string): string {
  return printable(text).replace(/`/g, "'");
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function errorOf(r: AuditRecord): JsonObject | undefined {
  const e = r.outcome.error;
  return isJsonObject(e) ? e : undefined;
}

function str(v: JsonValue | undefined): string | undefined {
  return typeof v === 'string' ? v : v === undefined || v === null ? undefined : JSON.stringify(v);
}

function artifactsOf(r: AuditRecord): string[] {
  const a = r.outcome.artifacts;
  return Array.isArray(a) ? a.filter((x): x is string => typeof x === 'string') : [];
}

/** Paths a summarised observation points at (`{ kind, size, path }` and the like). */
function observationPaths(v: JsonValue): string[] {
  if (!isJsonObject(v)) return [];
  return ['path', 'artifact', 'file', 'uri'].map((k) => v[k]).filter((x): x is string => typeof x === 'string');
}

function mcecEnvelope(r: AuditRecord): JsonObject | undefined {
  try {
    return contracts.mcec.encode(r.outcome as unknown as ToolOutcome) as unknown as JsonObject;
  } catch {
    // An outcome written by an older or foreign writer; the ContextOS envelope is still shown.
    return undefined;
  }
}

/**
 * Builds the failure summary of `sessionId`, or `undefined` when the session has
 * no failing call (or not the one asked for).
 */
export async function buildFailureSummary(
  store: Pick<Store, 'iterateAudit'>,
  sessionId: string,
  options: FailureSummaryOptions = {},
): Promise<FailureSummary | undefined> {
  const keep = options.before ?? 10;
  const maxBytes = options.maxJsonBytes ?? 16_384;
  const window: AuditRecord[] = [];
  let failing: AuditRecord | undefined;
  let before: AuditRecord[] = [];
  let lastGood: AuditRecord | undefined;
  let lastGoodAtFailure: AuditRecord | undefined;
  let failingCount = 0;
  for await (const r of store.iterateAudit({ sessionId }, 500)) {
    const chosen = options.call === undefined ? isFailureRecord(r) : r.id === options.call || r.toolCallId === options.call;
    if (chosen) {
      failing = r;
      before = window.slice();
      lastGoodAtFailure = lastGood;
      failingCount++;
      if (options.call !== undefined) break;
    }
    window.push(r);
    if (window.length > keep) window.shift();
    if (r.status !== 'interrupted' && r.status !== 'started' && isSuccessStatus(r.status)) lastGood = r;
  }
  if (!failing) return undefined;

  const err = errorOf(failing);
  const fromEnvelope = err?.lastObservation;
  const lastObservation: FailureSummary['lastObservation'] =
    fromEnvelope !== undefined && fromEnvelope !== null
      ? { value: fromEnvelope, source: 'envelope' }
      : lastGoodAtFailure
        ? { value: lastGoodAtFailure.outcome.result ?? null, source: 'prior-call', record: lastGoodAtFailure }
        : null;
  const artifacts = [
    ...new Set([...artifactsOf(failing), ...(lastObservation ? observationPaths(lastObservation.value) : []), ...before.flatMap(artifactsOf)]),
  ];

  const lines: string[] = [];
  const title = `${failing.tool} ${failing.status}${failing.category ? ` (${failing.category}${failing.errorCode ? `/${failing.errorCode}` : ''})` : ''}`;
  lines.push(`# Failure summary: ${inline(title)}`, '');
  lines.push(`Session \`${code(sessionId)}\`, generated ${iso(options.now ?? Date.now())} from the audit log.`);
  if (options.call === undefined && failingCount > 1) lines.push(`The session has ${failingCount} failing calls; this is the latest.`);
  lines.push('');
  lines.push('| | |', '|---|---|');
  const facts: [string, string | undefined][] = [
    ['tool', failing.tool],
    ['status', failing.status],
    ['category', failing.category ?? undefined],
    ['code', failing.errorCode ?? undefined],
    ['detail', str(err?.detail)],
    ['retryable', str(err?.retryable)],
    ['remediation', str(err?.remediation)],
    ['started', iso(failing.startedAt)],
    ['latency', `${failing.latencyMs} ms`],
    ['audit id', failing.id],
    ['tool call id', failing.toolCallId],
    ['run id', failing.runId],
    ['trace id', failing.traceId],
    ['approval id', failing.approvalId ?? undefined],
    ['policy decision', failing.policyDecision ? `${failing.policyDecision.effect}: ${failing.policyDecision.reason}` : undefined],
  ];
  for (const [k, v] of facts) if (v !== undefined && v !== '') lines.push(`| ${k} | ${cell(v)} |`);
  lines.push('');

  lines.push('## The failing call', '');
  lines.push('Arguments (from the ContextOS call envelope):', '');
  const args = failing.callEnvelope.args;
  lines.push(fenced(boundedJson(isJsonObject(args) ? args : { args: args ?? null }, maxBytes)), '');
  const mcec = mcecEnvelope(failing);
  if (mcec) lines.push('MCEC envelope:', '', fenced(boundedJson(mcec, maxBytes)), '');
  lines.push('ContextOS result envelope:', '', fenced(boundedJson(failing.resultEnvelope, maxBytes)), '');
  lines.push('<details><summary>ContextOS call envelope</summary>', '', fenced(boundedJson(failing.callEnvelope, maxBytes)), '', '</details>', '');

  lines.push('## Last good observation', '');
  if (!lastObservation) lines.push('None: no earlier call of this session succeeded.', '');
  else {
    lines.push(
      lastObservation.source === 'envelope'
        ? 'Carried by the failing envelope (`error.lastObservation`):'
        : `From the last successful call before the failure: \`${code(lastObservation.record!.tool)}\` at ${iso(lastObservation.record!.startedAt)} (audit id \`${code(lastObservation.record!.id)}\`):`,
      '',
    );
    lines.push(fenced(boundedJson(isJsonObject(lastObservation.value) ? lastObservation.value : { value: lastObservation.value }, maxBytes)), '');
  }

  lines.push(`## Calls before it (${before.length}, oldest first)`, '');
  if (before.length === 0) lines.push('None: the failing call was the first of the session.', '');
  else {
    lines.push('| # | started | tool | status | category / code | latency ms | audit id |', '|---|---|---|---|---|---|---|');
    before.forEach((r, i) => {
      const cat = r.category ? `${r.category}${r.errorCode ? ` / ${r.errorCode}` : ''}` : '';
      lines.push(`| ${i + 1} | ${iso(r.startedAt)} | ${cell(r.tool)} | ${cell(r.status)} | ${cell(cat)} | ${r.latencyMs} | ${cell(r.id)} |`);
    });
    lines.push('');
  }

  lines.push('## Artifacts', '');
  if (artifacts.length === 0) lines.push('None recorded.', '');
  else for (const a of artifacts) lines.push(`- \`${code(a)}\``);
  if (artifacts.length) lines.push('');

  lines.push('## More', '');
  lines.push(`- Full record: \`tool-envelope audit show ${code(failing.id)} --store <store>\``);
  lines.push(`- Whole session: \`tool-envelope audit list --session ${code(sessionId)} --store <store>\``, '');

  return { markdown: lines.join('\n'), failing, before, lastObservation, artifacts };
}
