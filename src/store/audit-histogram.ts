/**
 * The audit log summarised by time bucket, tool, status, category and latency bin, counted by the
 * database (one grouped scan) rather than by reading every row into JavaScript: what the console's
 * stats charts and percentiles are drawn from. Latency bins are logarithmic, eight a doubling, so a
 * percentile read from them is within 9% of the exact one.
 */
import type { ErrorCategory } from 'tool-envelope/core';
import type { AuditStatus, HistogramCell } from './types.js';

export type { HistogramCell };

/** Bins a doubling. */
const PER_DOUBLING = 8;

/** The bin of a latency: `floor(log2(ms + 1) * 8)`, negative latencies as 0. */
export function latencyBin(ms: number): number {
  return Math.floor(Math.log2(Math.max(ms, 0) + 1) * PER_DOUBLING);
}

/** The highest latency of a bin (what a percentile read from bins reports). */
export function binUpper(bin: number): number {
  return 2 ** ((bin + 1) / PER_DOUBLING) - 1;
}

/** SQL of {@link latencyBin} of a latency column. */
export function latencyBinSql(dialect: 'sqlite' | 'postgres', latency: string): string {
  return dialect === 'sqlite'
    ? `CAST(log2(MAX(${latency}, 0) + 1) * ${PER_DOUBLING} AS INTEGER)`
    : `FLOOR(LN(GREATEST(${latency}, 0) + 1) / LN(2) * ${PER_DOUBLING})::int`;
}

/** The grouped SQL of a histogram over `where` (the filter's clause), with the bucket width as the placeholder `bucket`. */
export function histogramSql(dialect: 'sqlite' | 'postgres', where: string, bucket: string): string {
  const bin = latencyBinSql(dialect, 'latency_ms');
  // better-sqlite3 binds a number as REAL: the cast keeps the division integral.
  const b = dialect === 'sqlite' ? `started_at / CAST(${bucket} AS INTEGER)` : `FLOOR(started_at::float8 / ${bucket}::float8)::bigint`;
  return `SELECT ${b} AS bucket, tool, status, category, ${bin} AS bin, COUNT(*) AS n FROM audit WHERE ${where} GROUP BY 1, 2, 3, 4, 5`;
}

/** A cell from a row of {@link histogramSql}. */
export function cellFromRow(r: Record<string, unknown>): HistogramCell {
  const status = String(r.status) as AuditStatus;
  return {
    bucket: Number(r.bucket),
    tool: String(r.tool),
    status: status === 'started' ? 'interrupted' : status,
    category: (r.category ?? null) as ErrorCategory | null,
    bin: Number(r.bin),
    count: Number(r.n),
  };
}
