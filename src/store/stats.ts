/** Per-tool audit statistics (counts by status and category, replays, latency percentiles). */
import type { ErrorCategory } from 'tool-envelope/core';
import type { AuditStatus, ToolAuditStats } from './types.js';

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] as number;
}

/** Computes per-tool stats from `(tool, status, category, replay, latencyMs)` tuples. */
export function computeStats(
  rows: Iterable<{ tool: string; status: AuditStatus; category: ErrorCategory | null; replay: boolean; latencyMs: number }>,
): ToolAuditStats[] {
  const byTool = new Map<string, { stats: ToolAuditStats; latencies: number[] }>();
  for (const r of rows) {
    let entry = byTool.get(r.tool);
    if (!entry) {
      entry = {
        stats: { tool: r.tool, count: 0, byStatus: {}, byCategory: {}, replays: 0, latencyMs: { min: 0, max: 0, mean: 0, p50: 0, p95: 0, p99: 0 } },
        latencies: [],
      };
      byTool.set(r.tool, entry);
    }
    const s = entry.stats;
    s.count++;
    const status: AuditStatus = r.status === 'started' ? 'interrupted' : r.status;
    s.byStatus[status] = (s.byStatus[status] ?? 0) + 1;
    if (r.category !== null) s.byCategory[r.category] = (s.byCategory[r.category] ?? 0) + 1;
    if (r.replay) s.replays++;
    entry.latencies.push(r.latencyMs);
  }
  const out: ToolAuditStats[] = [];
  for (const { stats, latencies } of byTool.values()) {
    latencies.sort((a, b) => a - b);
    const sum = latencies.reduce((a, b) => a + b, 0);
    stats.latencyMs = {
      min: latencies[0] ?? 0,
      max: latencies[latencies.length - 1] ?? 0,
      mean: latencies.length ? sum / latencies.length : 0,
      p50: percentile(latencies, 50),
      p95: percentile(latencies, 95),
      p99: percentile(latencies, 99),
    };
    out.push(stats);
  }
  return out.sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
}
