/**
 * The HTML report: one self-contained page (inline CSS and SVG, no script, no
 * network; a Content-Security-Policy forbids loading anything) with the charts
 * and tables of a {@link ReportData}.
 */
import { ERROR_CATEGORIES, type ErrorCategory } from 'tool-envelope/core';
import { AUDIT_STATUSES } from '../store/query.js';
import type { AuditStatus } from '../store/types.js';
import type { ReportCall, ReportData } from './data.js';
import { latencyBinLabels } from './data.js';
import { FAILURE_STATUSES } from './record-kind.js';
import { escapeHtml, histogramSvg, stackedBarsSvg, type Series } from './svg.js';

/** The colour of each outcome status in the charts. */
export const STATUS_COLORS: Readonly<Record<AuditStatus, string>> = {
  ok: '#2ca02c',
  completed: '#17becf',
  paused: '#ffbf00',
  blocked: '#9467bd',
  rejected: '#7f7f7f',
  error: '#d62728',
  failed: '#8c1c13',
  interrupted: '#e377c2',
  started: '#e377c2',
};

/** The colour of each error category in the charts. */
export const CATEGORY_COLORS: Readonly<Record<ErrorCategory, string>> = {
  timeout: '#ff7f0e',
  'ambiguous-selector': '#bcbd22',
  'stale-element': '#8c564b',
  'no-target': '#1f77b4',
  'invalid-argument': '#e377c2',
  'capture-blank': '#aec7e8',
  'ocr-blank': '#ffbb78',
  'ocr-no-text': '#c49c94',
  focus: '#98df8a',
  elevation: '#9467bd',
  foreground: '#c5b0d5',
  internal: '#d62728',
};

const CSS = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#666;margin-bottom:16px}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:10px 14px;min-width:120px}
.card b{display:block;font-size:20px}
.grid{display:flex;flex-wrap:wrap;gap:12px}.panel{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:8px;min-width:0;max-width:100%;box-sizing:border-box}
.panel svg.stacked{display:block;width:100%;height:auto}.panel svg.histogram{display:block;max-width:100%;height:auto}
table{border-collapse:collapse;background:#fff;font-size:13px}th,td{border:1px solid #e3e3e3;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
details summary{cursor:pointer}pre{background:#f6f8fa;border:1px solid #e3e3e3;padding:8px;max-height:420px;overflow:auto;font-size:12px;white-space:pre-wrap;word-break:break-all}
.chart-title{font:600 13px system-ui,sans-serif;fill:#222}.axis{font:10px system-ui,sans-serif;fill:#555}.axis-line{stroke:#999;stroke-width:1}
.status{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:12px}
.empty{color:#777;font-style:italic}
`;

function fmtTime(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
}

function bucketLabel(ms: number, bucketMs: number): string {
  const iso = new Date(ms).toISOString();
  if (bucketMs >= 86_400_000) return iso.slice(0, 10);
  if (bucketMs >= 60_000) return iso.slice(5, 16).replace('T', ' ');
  return iso.slice(11, 19);
}

function pct(part: number, whole: number): string {
  return whole === 0 ? '0%' : `${((100 * part) / whole).toFixed(part === whole || part === 0 ? 0 : 2)}%`;
}

function statusBadge(status: AuditStatus): string {
  return `<span class="status" style="background:${STATUS_COLORS[status] ?? '#555'}">${escapeHtml(status)}</span>`;
}

function callsTable(id: string, calls: readonly ReportCall[]): string {
  if (calls.length === 0) return `<p class="empty" id="${id}">No calls.</p>`;
  const rows = calls.map(
    (c) =>
      `<tr class="call-row" data-id="${escapeHtml(c.id)}"><td>${escapeHtml(fmtTime(c.startedAt))}</td><td>${escapeHtml(c.tool)}</td><td>${statusBadge(c.status)}</td>` +
      `<td>${escapeHtml(c.category ?? '')}${c.errorCode ? ` <small>${escapeHtml(c.errorCode)}</small>` : ''}</td><td class="num">${c.latencyMs}</td>` +
      `<td><details><summary>${escapeHtml(c.id)}</summary><p>session ${escapeHtml(c.sessionId ?? '(none)')}, tool call ${escapeHtml(c.toolCallId)}</p>` +
      `<p>Call envelope</p><pre>${escapeHtml(c.callEnvelope)}</pre><p>Result envelope</p><pre>${escapeHtml(c.resultEnvelope)}</pre></details></td></tr>`,
  );
  return `<table id="${id}"><thead><tr><th>started (UTC)</th><th>tool</th><th>status</th><th>category / code</th><th>latency ms</th><th>envelopes</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/** Tools drawn as small-multiple histograms; the rest are listed in the table only. */
const MAX_HISTOGRAMS = 24;

/** Renders the report page. */
export function renderHtmlReport(data: ReportData): string {
  const errors = FAILURE_STATUSES.reduce((n, s) => n + (data.byStatus[s] ?? 0), 0);
  const labels = data.timeline.map((b) => bucketLabel(b.start, data.bucketMs));
  const statusSeries: Series[] = AUDIT_STATUSES.filter((s) => (data.byStatus[s] ?? 0) > 0).map((s) => ({
    name: s,
    color: STATUS_COLORS[s],
    values: data.timeline.map((b) => b.byStatus[s] ?? 0),
  }));
  const categorySeries: Series[] = ERROR_CATEGORIES.filter((c) => (data.byCategory[c] ?? 0) > 0).map((c) => ({
    name: c,
    color: CATEGORY_COLORS[c],
    values: data.timeline.map((b) => b.byCategory[c] ?? 0),
  }));
  const binLabels = latencyBinLabels();
  const drawn = [...data.tools].sort((a, b) => b.count - a.count).slice(0, MAX_HISTOGRAMS);
  const histograms = drawn.map(
    (t) =>
      `<div class="panel">${histogramSvg({ title: `${t.tool} (${t.count} ${t.count === 1 ? 'call' : 'calls'}, p95 ${t.latencyMs.p95} ms)`, labels: binLabels, counts: t.histogram, color: '#1f77b4' })}</div>`,
  );
  const toolRows = data.tools.map((t) => {
    const failed = t.failures;
    const cats = Object.entries(t.failuresByCategory)
      .sort((a, b) => (b[1] ?? 0) - (a[1] ?? 0))
      .map(([c, n]) => `${escapeHtml(c)} ${n}`)
      .join(', ');
    return (
      `<tr class="tool-row" data-tool="${escapeHtml(t.tool)}"><td>${escapeHtml(t.tool)}</td><td class="num">${t.count}</td><td class="num">${t.replays}</td><td class="num">${t.paused}</td><td class="num">${pct(failed, t.count)}</td><td>${cats}</td>` +
      `<td class="num">${t.latencyMs.p50}</td><td class="num">${t.latencyMs.p95}</td><td class="num">${t.latencyMs.p99}</td><td class="num">${t.latencyMs.max}</td></tr>`
    );
  });
  const range = data.range ? `${fmtTime(data.range.from)} – ${fmtTime(data.range.to)}` : 'no calls';
  const body = [
    `<h1>${escapeHtml(data.title)}</h1>`,
    `<div class="meta">${escapeHtml(data.source)}${data.source ? ' · ' : ''}${escapeHtml(range)} · generated ${escapeHtml(fmtTime(data.generatedAt))}</div>`,
    `<div class="cards"><div class="card">calls<b id="total-calls">${data.total}</b></div><div class="card">tools<b>${data.tools.length}</b></div>` +
      `<div class="card">failed<b id="failed-calls">${errors}</b></div><div class="card">failure rate<b>${pct(errors, data.total)}</b></div>` +
      `<div class="card">replays<b id="replays">${data.replays}</b></div><div class="card">paused<b id="paused">${data.paused}</b></div></div>`,
    `<h2>Outcomes over time</h2>`,
    data.total === 0
      ? '<p class="empty">No calls.</p>'
      : `<div class="panel" id="outcomes-chart">${stackedBarsSvg({ title: `Calls per ${data.bucketMs / 1000} s by status`, xLabels: labels, series: statusSeries })}</div>`,
    `<h2>Error categories over time</h2>`,
    categorySeries.length === 0
      ? '<p class="empty" id="categories-chart">No failures.</p>'
      : `<div class="panel" id="categories-chart">${stackedBarsSvg({ title: `Failures per ${data.bucketMs / 1000} s by category`, xLabels: labels, series: categorySeries })}</div>`,
    `<h2>Latency distribution per tool</h2>`,
    data.tools.length > drawn.length ? `<p>The ${drawn.length} busiest of ${data.tools.length} tools are drawn; every tool is in the table.</p>` : '',
    `<div class="grid" id="latency-charts">${histograms.join('')}</div>`,
    `<h2>Tools</h2>`,
    `<table id="tools-table"><thead><tr><th>tool</th><th>calls</th><th>replays</th><th>paused</th><th>error rate</th><th>errors by category</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>max ms</th></tr></thead><tbody>${toolRows.join('')}</tbody></table>`,
    `<h2>Slowest calls</h2>`,
    callsTable('slowest-table', data.slowest),
    `<h2>Failing calls</h2>`,
    data.failingTotal > data.failing.length ? `<p>The latest ${data.failing.length} of ${data.failingTotal} failing calls.</p>` : '',
    callsTable('failing-table', data.failing),
  ];
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(data.title)}</title><style>${CSS}</style></head>` +
    `<body>${body.join('\n')}</body></html>\n`
  );
}
