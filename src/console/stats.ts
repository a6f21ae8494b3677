/**
 * The stats page: calls and errors over time by category, and latency percentiles per tool, for
 * the audit list's filters over a time window, drawn from the store's histogram as inline SVG. The
 * histogram reads the store's audit rollup (counts per minute, kept current off the write path by
 * the catch-up this page starts, stats-rollup.ts) plus the records not folded into it yet, so it is
 * exact whatever the rollup's mark. The window is the last hour by default (figures in
 * docs/console.md). Records count as `audit stats` counts them (report/record-kind.ts): a call is
 * an executed record, neither a pause (a paused-then-approved call counts once, its final record)
 * nor a replay, and failed by its status. Percentiles come from logarithmic latency bins (within
 * 9%); the CLI's `audit stats` gives exact ones.
 */
import { ERROR_CATEGORIES, type ErrorCategory } from 'tool-envelope/core';
import { binUpper, type HistogramCell } from '../store/audit-histogram.js';
import { auditFilterFrom } from '../store/audit-filter.js';
import { isFailureStatus, recordKind } from '../report/record-kind.js';
import { FIELDS, filterText } from './audit-list.js';
import type { Store } from '../store/types.js';
import { groupedBars, type Series, stackedColumns } from './charts.js';
import type { ConsoleIdentity } from './identity.js';
import { inert } from './inert.js';
import { page, type PageView } from './layout.js';
import { keepRolledUp } from './stats-rollup.js';
import { scopedFilter } from './tenancy.js';
import { utc } from './time.js';

const DAY = 86_400_000;
const WIDTHS = [60_000, 300_000, 900_000, 3_600_000, 10_800_000, 21_600_000, DAY, 7 * DAY];
const MAX_COLUMNS = 60;
/** The window when the query names no `since`. */
const DEFAULT_WINDOW = '1h';
/** Tools charted (the busiest); the table lists up to {@link TABLE_TOOLS}. */
const CHART_TOOLS = 15;
const TABLE_TOOLS = 200;
const CATEGORY_COLORS = ['#b3261e', '#e07b00', '#8e44ad', '#c2185b', '#6d4c41', '#00838f', '#5d6d7e', '#d4ac0d', '#2e86c1', '#7d3c98', '#a04000', '#1d2330'];
const colorOf = (c: ErrorCategory): string => CATEGORY_COLORS[ERROR_CATEGORIES.indexOf(c) % CATEGORY_COLORS.length]!;
const OK_COLOR = '#1b7a3a';
const FAILED_COLOR = '#b3261e';
const PERCENTILES = [
  { name: 'p50', color: '#9bb7e0', p: 0.5 },
  { name: 'p95', color: '#1f5fbf', p: 0.95 },
  { name: 'p99', color: '#18202e', p: 0.99 },
];

/** The p-th percentile of a latency histogram (bin → count): the upper bound of the bin holding it. */
function percentile(bins: Map<number, number>, total: number, p: number): number {
  if (total === 0) return 0;
  const want = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (const bin of [...bins.keys()].sort((a, b) => a - b)) {
    seen += bins.get(bin)!;
    if (seen >= want) return binUpper(bin);
  }
  return 0;
}

interface ToolRow {
  tool: string;
  count: number;
  errors: number;
  bins: Map<number, number>;
}

/**
 * The stats page, or `{ bad }` for a filter the store refuses.
 *
 * @example
 * ```ts
 * const html = await statsPage(store, view, queryOf(req));
 * ```
 */
export async function statsPage(
  store: Store,
  view: PageView & { who: ConsoleIdentity },
  query: URLSearchParams,
  now = Date.now(),
): Promise<string | { bad: string }> {
  const text = filterText(query);
  const filter = auditFilterFrom({ since: DEFAULT_WINDOW, ...text }, '', now);
  if ('error' in filter) return { bad: filter.error };
  const since = filter.since!;
  const until = filter.until ?? now;
  if (until <= since) return { bad: 'until must be after since' };
  // Past 60 weeks, whole days: a width the rollup reads and the page can name.
  const width = WIDTHS.find((w) => (until - since) / w <= MAX_COLUMNS) ?? Math.ceil((until - since) / MAX_COLUMNS / DAY) * DAY;
  let cells: HistogramCell[];
  let replayed: HistogramCell[];
  try {
    const scoped = scopedFilter(view.who, { ...filter, since, until });
    // Replays are taken back out of the whole histogram (which the rollup answers, replays and all):
    // the rollup keeps no replay flag, and replays are few.
    [cells, replayed] = await Promise.all([store.auditHistogram(scoped, width), store.auditHistogram({ ...scoped, replay: true }, width)]);
  } catch (e) {
    return { bad: (e as Error).message };
  }
  keepRolledUp(store);
  const first = Math.floor(since / width);
  const columns = Math.max(1, Math.floor((until - 1) / width) - first + 1);
  const ok = new Array<number>(columns).fill(0);
  const failed = new Array<number>(columns).fill(0);
  const byCategory = new Map<ErrorCategory, number[]>();
  const tools = new Map<string, ToolRow>();
  const all: ToolRow = { tool: 'all tools', count: 0, errors: 0, bins: new Map() };
  const cellKey = (c: HistogramCell): string => JSON.stringify([c.bucket, c.tool, c.status, c.category || null, c.bin]);
  const replays = new Map<string, number>();
  for (const c of replayed) replays.set(cellKey(c), (replays.get(cellKey(c)) ?? 0) + c.count);
  let replayCount = 0;
  let pausedCount = 0;
  for (const cell of cells) {
    const i = cell.bucket - first;
    if (i < 0 || i >= columns) continue;
    const replay = Math.min(cell.count, replays.get(cellKey(cell)) ?? 0);
    replayCount += replay;
    const c = { ...cell, count: cell.count - replay };
    if (c.count === 0) continue;
    if (recordKind({ status: c.status, replay: false }) === 'paused') {
      pausedCount += c.count;
      continue;
    }
    const error = isFailureStatus(c.status);
    (error ? failed : ok)[i]! += c.count;
    if (error && c.category !== null) {
      let s = byCategory.get(c.category);
      if (!s) byCategory.set(c.category, (s = new Array<number>(columns).fill(0)));
      s[i]! += c.count;
    }
    let t = tools.get(c.tool);
    if (!t) tools.set(c.tool, (t = { tool: c.tool, count: 0, errors: 0, bins: new Map() }));
    for (const row of [t, all]) {
      row.count += c.count;
      if (error) row.errors += c.count;
      row.bins.set(c.bin, (row.bins.get(c.bin) ?? 0) + c.count);
    }
  }
  const labels = Array.from({ length: columns }, (_, i) => {
    const at = utc((first + i) * width);
    return width >= 86_400_000 ? at.slice(5, 10) : width >= 3_600_000 ? at.slice(5, 16) : at.slice(11, 16);
  });
  const busiest = [...tools.values()].sort((a, b) => b.count - a.count || (a.tool < b.tool ? -1 : 1));
  const pct = (r: ToolRow): number[] => PERCENTILES.map((p) => percentile(r.bins, r.count, p.p));
  const calls: Series[] = [
    { name: 'succeeded', color: OK_COLOR, values: ok },
    { name: 'failed (any category)', color: FAILED_COLOR, values: failed },
  ];
  const errors: Series[] = [...byCategory].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, values]) => ({ name, color: colorOf(name), values }));
  const filterInputs = FIELDS.map(
    (f) => `<input name="${f}" placeholder="${f === 'since' ? `since (${DEFAULT_WINDOW})` : f}" aria-label="${f}" value="${inert(text[f] ?? '', 500)}">`,
  ).join('');
  const fmt = (n: number): string => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0));
  const rows = busiest
    .slice(0, TABLE_TOOLS)
    .map((r) => {
      const [p50, p95, p99] = pct(r);
      const list = new URLSearchParams({ ...text, tool: r.tool });
      return `<tr><td title="${inert(r.tool, 500)}"><a href="${view.base}/audit?${inert(list.toString(), 2000)}">${inert(r.tool, 200)}</a></td><td>${r.count}</td><td>${r.errors}</td><td>${r.count ? ((100 * r.errors) / r.count).toFixed(1) : '0.0'} %</td><td>${fmt(p50!)}</td><td>${fmt(p95!)}</td><td>${fmt(p99!)}</td></tr>`;
    })
    .join('\n');
  const [a50, a95, a99] = pct(all);
  const body = `<h1>Audit stats</h1>
<form class="filters" method="get" action="${view.base}/stats">${filterInputs}<button type="submit">Show</button></form>
<p class="muted" id="stats-summary">${utc(since)} to ${utc(until)}, one column per ${inert(widthName(width))}. ${
    all.count === 0
      ? 'No calls in this range.'
      : `${all.count} calls, ${all.errors} failed; latency p50 ${fmt(a50!)} ms, p95 ${fmt(a95!)} ms, p99 ${fmt(a99!)} ms (percentiles from latency bins, within 9%).`
  }${apart(pausedCount, replayCount)}</p>
<section class="card">${stackedColumns('Calls over time', labels, calls)}</section>
<section class="card">${errors.length ? stackedColumns('Failures over time by error category', labels, errors) : '<p class="muted">No failures in this window.</p>'}</section>
<section class="card">${
    busiest.length
      ? groupedBars(
          `Latency per tool (the ${Math.min(CHART_TOOLS, busiest.length)} busiest)`,
          busiest.slice(0, CHART_TOOLS).map((r) => ({ label: r.tool, values: pct(r) })),
          PERCENTILES,
          'ms',
        )
      : '<p class="muted">No calls in this window.</p>'
  }</section>
<table class="stats"><thead><tr><th>tool</th><th>calls</th><th>failed</th><th>failure rate</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th></tr></thead>
<tbody>${rows}</tbody></table>
${busiest.length > TABLE_TOOLS ? `<p class="muted">${busiest.length - TABLE_TOOLS} more tools not listed: filter by tool.</p>` : ''}`;
  return page(view, 'Audit stats', 'audit', body);
}

/** The records not counted as calls, as `audit stats` shows them apart. */
function apart(paused: number, replays: number): string {
  const parts = [
    paused ? `${paused} paused (waiting for an approver, not failed)` : '',
    replays ? `${replays} replays (the stored outcome returned again)` : '',
  ].filter(Boolean);
  return parts.length ? ` Not counted as calls: ${parts.join(', ')}.` : '';
}

function widthName(ms: number): string {
  return ms % 86_400_000 === 0 ? `${ms / 86_400_000} d` : ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${Math.round(ms / 60_000)} min`;
}
