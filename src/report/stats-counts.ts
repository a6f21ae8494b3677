/**
 * What `audit stats` and the HTML report count per tool, by the rule of record-kind.ts: calls
 * (a paused-then-approved call is one call, its final record), with replays and pauses counted
 * apart, asked of the store so that no record is read.
 */
import { AUDIT_STATUSES } from '../store/query.js';
import type { AuditFilter, AuditStatus, Store, ToolAuditStats } from '../store/types.js';
import { FAILURE_STATUSES, recordKind } from './record-kind.js';

/** One tool's row: the store's stats over its calls, with its replays, pauses and failures by category beside them. */
export interface ToolStatsRow extends ToolAuditStats {
  /** Records of calls paused for an approver (each decided one also has its final record, the call). */
  paused: number;
  /** Failures by category, over the failure statuses only (a pause carries a category without failing). */
  failures: ToolAuditStats['byCategory'];
}

const EMPTY_LATENCY: ToolAuditStats['latencyMs'] = { min: 0, max: 0, mean: 0, p50: 0, p95: 0, p99: 0 };

/** The statuses of `filter` (all when it names none) that `keep` keeps; `undefined` when none is left. */
function statusesOf(filter: AuditFilter, keep: (s: AuditStatus) => boolean): AuditStatus[] | undefined {
  const asked = filter.status === undefined ? AUDIT_STATUSES : Array.isArray(filter.status) ? filter.status : [filter.status];
  const kept = asked.filter(keep);
  return kept.length === 0 ? undefined : kept;
}

/**
 * Per tool, sorted by name: calls (executed, not replayed, not paused records) with their status
 * counts and latencies, and replays, pauses and failures by category apart. A tool with only
 * replays or pauses in the window has a row with 0 calls.
 */
export async function statsCounts(store: Pick<Store, 'auditStats'>, filter: AuditFilter): Promise<ToolStatsRow[]> {
  const executed = { ...filter, replay: false };
  const callStatuses = statusesOf(filter, (s) => recordKind({ status: s, replay: false }) === 'call');
  const pauseStatuses = statusesOf(filter, (s) => recordKind({ status: s, replay: false }) === 'paused');
  const failureStatuses = statusesOf(filter, (s) => FAILURE_STATUSES.includes(s));
  const none = Promise.resolve([] as ToolAuditStats[]);
  const [calls, replayed, paused, failed] = await Promise.all([
    callStatuses ? store.auditStats({ ...executed, status: callStatuses }) : none,
    store.auditStats({ ...filter, replay: true }),
    pauseStatuses ? store.auditStats({ ...executed, status: pauseStatuses }) : none,
    failureStatuses ? store.auditStats({ ...executed, status: failureStatuses }) : none,
  ]);
  const rows = new Map<string, ToolStatsRow>(calls.map((s) => [s.tool, { ...s, replays: 0, paused: 0, failures: {} }]));
  const rowOf = (tool: string): ToolStatsRow => {
    let row = rows.get(tool);
    if (!row) {
      row = { tool, count: 0, byStatus: {}, byCategory: {}, replays: 0, latencyMs: { ...EMPTY_LATENCY }, paused: 0, failures: {} };
      rows.set(tool, row);
    }
    return row;
  };
  for (const r of replayed) rowOf(r.tool).replays = r.count;
  for (const p of paused) rowOf(p.tool).paused = p.count;
  for (const f of failed) rowOf(f.tool).failures = f.byCategory;
  return [...rows.values()].sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
}
