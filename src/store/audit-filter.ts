/**
 * An audit filter from text (the CLI's `--tool`, `--status`, ... flags and the console's query):
 * one parser so both accept the same values and say the same about a bad one.
 */
import { ERROR_CATEGORIES, type ErrorCategory } from 'tool-envelope/core';
import { AUDIT_STATUSES } from './query.js';
import type { AuditFilter, AuditStatus } from './types.js';

const AGE = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * Parses a time: an age (`15m`, `2h`, `7d`: that long before `now`), epoch
 * milliseconds, or an ISO date/time. Returns `undefined` when it is none of them.
 */
export function parseTime(text: string, now = Date.now()): number | undefined {
  const t = text.trim();
  const age = AGE.exec(t);
  if (age) return now - Number(age[1]) * UNIT_MS[age[2]!]!;
  if (/^\d{10,}$/.test(t)) return Number(t);
  if (!/^\d{4}-\d{2}-\d{2}/.test(t)) return undefined;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
}

function listOf(value: unknown): string[] {
  const items = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return items
    .flatMap((v) => String(v).split(','))
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** The filter's values as text, each a string or a list (comma-separated lists are split). */
export interface AuditFilterText {
  tool?: unknown;
  status?: unknown;
  category?: unknown;
  session?: unknown;
  run?: unknown;
  since?: unknown;
  until?: unknown;
}

/** Builds an {@link AuditFilter}, or says which value is wrong (`flag` prefixes the value's name: `--` for the CLI). */
export function auditFilterFrom(values: AuditFilterText, flag = '', now = Date.now()): AuditFilter | { error: string } {
  const filter: AuditFilter = {};
  const tools = listOf(values.tool);
  if (tools.length) filter.tool = tools;
  const statuses = listOf(values.status);
  const badStatus = statuses.find((s) => !(AUDIT_STATUSES as readonly string[]).includes(s));
  if (badStatus !== undefined) return { error: `unknown ${flag}status '${badStatus}' (one of ${AUDIT_STATUSES.join(', ')})` };
  if (statuses.length) filter.status = statuses as AuditStatus[];
  const categories = listOf(values.category);
  const badCategory = categories.find((c) => !(ERROR_CATEGORIES as readonly string[]).includes(c));
  if (badCategory !== undefined) return { error: `unknown ${flag}category '${badCategory}' (one of ${ERROR_CATEGORIES.join(', ')})` };
  if (categories.length) filter.category = categories as ErrorCategory[];
  if (typeof values.session === 'string') filter.sessionId = values.session;
  if (typeof values.run === 'string') filter.runId = values.run;
  for (const name of ['since', 'until'] as const) {
    const v = values[name];
    if (typeof v !== 'string') continue;
    const t = parseTime(v, now);
    if (t === undefined) return { error: `${flag}${name} '${v}' is not a time (ISO date/time, epoch ms, or an age like 15m, 2h, 7d)` };
    filter[name] = t;
  }
  return filter;
}
