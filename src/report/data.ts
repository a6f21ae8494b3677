/**
 * What the HTML report shows, aggregated on the Node side in one pass over the
 * audit log: latency histograms per tool, outcomes and error categories per
 * time bucket, and a bounded set of the slowest and failing calls. The page
 * then holds aggregates only, so 100 000 calls or 10 million make a page of
 * about the same size.
 */
import type { ErrorCategory, JsonObject } from 'tool-envelope/core';
import type { AuditFilter, AuditRecord, AuditStatus, Store } from '../store/types.js';
import { isFailureStatus, type RecordKind, recordKind } from './record-kind.js';
import { statsCounts, type ToolStatsRow } from './stats-counts.js';

/** Upper bounds (ms) of the latency histogram bins; the last bin is open-ended. */
export const LATENCY_BINS_MS: readonly number[] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000];

/** The label of each latency bin (`≤1`, ..., `>60000`). */
export function latencyBinLabels(): string[] {
  return [...LATENCY_BINS_MS.map((b) => `≤${b}`), `>${LATENCY_BINS_MS[LATENCY_BINS_MS.length - 1]}`];
}

/** The index of the bin `latencyMs` falls in. */
export function latencyBin(latencyMs: number): number {
  let lo = 0;
  let hi = LATENCY_BINS_MS.length;
  // Binary search for the first bound >= latency.
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (latencyMs <= (LATENCY_BINS_MS[mid] as number)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** One call shown in the report's tables, with its envelopes (cut when huge). */
export interface ReportCall {
  id: string;
  tool: string;
  status: AuditStatus;
  category: ErrorCategory | null;
  errorCode: string | null;
  startedAt: number;
  latencyMs: number;
  sessionId: string | null;
  toolCallId: string;
  /** Pretty-printed JSON, cut to `maxEnvelopeBytes` with a note when longer. */
  callEnvelope: string;
  resultEnvelope: string;
}

/** Counts per time bucket. */
export interface TimeBucket {
  start: number;
  byStatus: Partial<Record<AuditStatus, number>>;
  /** Failures by error category. */
  byCategory: Partial<Record<ErrorCategory, number>>;
}

/** Everything the HTML report renders. */
export interface ReportData {
  title: string;
  /** Where the data came from (store location, redacted). */
  source: string;
  generatedAt: number;
  filter: AuditFilter;
  /** Calls: executed records, neither replays nor pauses (record-kind.ts), as `audit stats` counts them. */
  total: number;
  /** Replays: outcomes returned again for a repeated idempotency key, the tool not run. */
  replays: number;
  /** Pauses: records of calls that waited for an approver (a decided one also has its call). */
  paused: number;
  /** First and last `startedAt` of any record, or null when there are none. */
  range: { from: number; to: number } | null;
  byStatus: Partial<Record<AuditStatus, number>>;
  /** Failures (see {@link FAILURE_STATUSES}) by error category. */
  byCategory: Partial<Record<ErrorCategory, number>>;
  /**
   * Per tool: `audit stats`'s row (calls, replays, pauses, latencies over calls), a latency histogram
   * of its calls over {@link LATENCY_BINS_MS}, and its failures by category.
   */
  tools: (ToolStatsRow & { histogram: number[]; failures: number; failuresByCategory: Partial<Record<ErrorCategory, number>> })[];
  bucketMs: number;
  timeline: TimeBucket[];
  slowest: ReportCall[];
  failing: ReportCall[];
  /** Calls that failed in all (the table shows the latest `failing.length`). */
  failingTotal: number;
}

export interface ReportDataOptions {
  title?: string;
  source?: string;
  /** Time buckets of the timeline charts (default 60). */
  buckets?: number;
  /** Slowest calls kept (default 20). */
  slowest?: number;
  /** Latest failing calls kept (default 50). */
  failing?: number;
  /** Bytes of each pretty-printed envelope kept (default 16 384). */
  maxEnvelopeBytes?: number;
  /** Called once per record read (progress). */
  onRecord?: () => void;
  now?: number;
}

/** Bucket widths a timeline snaps to, so labels read as round times. */
const NICE_BUCKETS_MS = [
  1000, 5000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000, 86_400_000,
];

function bucketWidth(spanMs: number, buckets: number): number {
  const raw = Math.max(1, spanMs / buckets);
  for (const b of NICE_BUCKETS_MS) if (b >= raw) return b;
  return Math.ceil(raw / 86_400_000) * 86_400_000;
}

/** Pretty-prints JSON, keeping at most `maxBytes` bytes of UTF-8 text. */
export function boundedJson(value: JsonObject, maxBytes: number): string {
  const text = JSON.stringify(value, null, 2);
  const size = Buffer.byteLength(text, 'utf8');
  if (size <= maxBytes) return text;
  // Cut on a character boundary: decoding a byte prefix drops a split trailing character.
  const head = Buffer.from(text, 'utf8')
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${head}\n… (cut: ${size} bytes in all)`;
}

function toReportCall(r: AuditRecord, maxBytes: number): ReportCall {
  return {
    id: r.id,
    tool: r.tool,
    status: r.status,
    category: r.category,
    errorCode: r.errorCode,
    startedAt: r.startedAt,
    latencyMs: r.latencyMs,
    sessionId: r.sessionId,
    toolCallId: r.toolCallId,
    callEnvelope: boundedJson(r.callEnvelope, maxBytes),
    resultEnvelope: boundedJson(r.resultEnvelope, maxBytes),
  };
}

function bump<K extends string>(counts: Partial<Record<K, number>>, key: K): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

/** Reads the audit records matching `filter` once and aggregates what the report shows. */
export async function collectReportData(
  store: Pick<Store, 'listAudit' | 'iterateAudit' | 'auditStats'>,
  filter: AuditFilter = {},
  options: ReportDataOptions = {},
): Promise<ReportData> {
  const maxBytes = options.maxEnvelopeBytes ?? 16_384;
  const keepSlowest = options.slowest ?? 20;
  const keepFailing = options.failing ?? 50;
  const [first, last, stats] = await Promise.all([
    store.listAudit(filter, { limit: 1, order: 'asc' }),
    store.listAudit(filter, { limit: 1, order: 'desc' }),
    statsCounts(store, filter),
  ]);
  const from = first.records[0]?.startedAt;
  const to = last.records[0]?.startedAt;
  const range = from === undefined || to === undefined ? null : { from: Math.min(from, to), to: Math.max(from, to) };
  const bucketMs = range ? bucketWidth(range.to - range.from + 1, options.buckets ?? 60) : 60_000;
  const origin = range ? Math.floor(range.from / bucketMs) * bucketMs : 0;
  const nBuckets = range ? Math.floor((range.to - origin) / bucketMs) + 1 : 0;
  const timeline: TimeBucket[] = Array.from({ length: nBuckets }, (_, i) => ({ start: origin + i * bucketMs, byStatus: {}, byCategory: {} }));

  type PerTool = { histogram: number[]; failures: number; failuresByCategory: Partial<Record<ErrorCategory, number>> };
  const fresh = (): PerTool => ({ histogram: new Array<number>(LATENCY_BINS_MS.length + 1).fill(0), failures: 0, failuresByCategory: {} });
  const perTool = new Map<string, PerTool>(stats.map((s) => [s.tool, fresh()]));
  const byStatus: ReportData['byStatus'] = {};
  const byCategory: ReportData['byCategory'] = {};
  // Slowest: kept sorted descending, at most keepSlowest; failing: a ring of the latest.
  const slowest: AuditRecord[] = [];
  const failing: AuditRecord[] = [];
  let failingTotal = 0;
  const kinds: Record<RecordKind, number> = { call: 0, replay: 0, paused: 0 };

  for await (const r of store.iterateAudit(filter, 1000)) {
    options.onRecord?.();
    const kind = recordKind(r);
    kinds[kind]++;
    // A replay ran nothing: no outcome, latency or failure of its own to show.
    if (kind === 'replay') continue;
    bump(byStatus, r.status);
    const failed = isFailureStatus(r.status);
    let t = perTool.get(r.tool);
    if (!t) {
      // A record written after statsCounts ran.
      t = fresh();
      perTool.set(r.tool, t);
    }
    // The histogram is of calls, as the latency percentiles beside it are.
    if (kind === 'call') t.histogram[latencyBin(r.latencyMs)]!++;
    const b = timeline[Math.floor((r.startedAt - origin) / bucketMs)];
    if (b) bump(b.byStatus, r.status);
    if (failed) {
      t.failures++;
      const category = r.category ?? 'internal';
      bump(byCategory, category);
      bump(t.failuresByCategory, category);
      if (b) bump(b.byCategory, category);
    }
    if (kind === 'call' && keepSlowest > 0 && (slowest.length < keepSlowest || r.latencyMs > slowest[slowest.length - 1]!.latencyMs)) {
      let i = slowest.length;
      while (i > 0 && slowest[i - 1]!.latencyMs < r.latencyMs) i--;
      slowest.splice(i, 0, r);
      if (slowest.length > keepSlowest) slowest.pop();
    }
    if (failed) {
      failingTotal++;
      if (keepFailing > 0) {
        failing.push(r);
        if (failing.length > keepFailing) failing.shift();
      }
    }
  }

  return {
    title: options.title ?? 'tool-envelope call report',
    source: options.source ?? '',
    generatedAt: options.now ?? Date.now(),
    filter,
    total: kinds.call,
    replays: kinds.replay,
    paused: kinds.paused,
    range,
    byStatus,
    byCategory,
    tools: stats.map((s) => ({ ...s, ...perTool.get(s.tool)! })),
    bucketMs,
    timeline,
    slowest: slowest.map((r) => toReportCall(r, maxBytes)),
    failing: failing.reverse().map((r) => toReportCall(r, maxBytes)),
    failingTotal,
  };
}
