/**
 * Inline SVG charts for the HTML report, drawn on the Node side so that the
 * page needs no script and no network: a histogram and a stacked bar chart.
 * Every text that reaches the markup goes through {@link escapeHtml}.
 */

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;'));
}

/** One named, coloured series of a stacked chart. */
export interface Series {
  name: string;
  color: string;
  values: readonly number[];
}

/** Rounds to 0.1 px: enough for a chart, and keeps the markup short. */
function px(n: number): string {
  return String(Math.round(n * 10) / 10);
}

/** A short count label: 1234 → `1.2k`, 2500000 → `2.5M`. */
export function shortCount(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(n >= 1e4 ? 0 : 1)}k`;
  return String(n);
}

/**
 * A histogram: one bar per bin, labelled below. Bars carry `data-count` so
 * that what is drawn can be checked against the data.
 */
export function histogramSvg(spec: {
  title: string;
  labels: readonly string[];
  counts: readonly number[];
  color: string;
  width?: number;
  height?: number;
}): string {
  const width = spec.width ?? 420;
  const height = spec.height ?? 170;
  const left = 36;
  const bottom = 34;
  const top = 22;
  const plotW = width - left - 8;
  const plotH = height - top - bottom;
  const max = Math.max(1, ...spec.counts);
  const slot = plotW / Math.max(1, spec.counts.length);
  const parts: string[] = [];
  parts.push(`<text class="chart-title" x="${left}" y="14">${escapeHtml(spec.title)}</text>`);
  parts.push(`<text class="axis" x="${left - 4}" y="${top + 4}" text-anchor="end">${shortCount(max)}</text>`);
  parts.push(`<line class="axis-line" x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}"/>`);
  spec.counts.forEach((count, i) => {
    const h = (count / max) * plotH;
    const x = left + i * slot + 1;
    const label = spec.labels[i] ?? '';
    if (count > 0) {
      // A bar of one call must stay visible next to a bar of 100 000.
      const shown = Math.max(h, 1);
      parts.push(
        `<rect class="bar" data-count="${count}" x="${px(x)}" y="${px(top + plotH - shown)}" width="${px(Math.max(1, slot - 2))}" height="${px(shown)}" fill="${spec.color}"><title>${escapeHtml(label)} ms: ${count}</title></rect>`,
      );
    }
    if (i % Math.ceil(spec.counts.length / 8) === 0) {
      parts.push(`<text class="axis" x="${px(x + slot / 2)}" y="${top + plotH + 12}" text-anchor="middle">${escapeHtml(label)}</text>`);
    }
  });
  parts.push(`<text class="axis" x="${left + plotW / 2}" y="${height - 4}" text-anchor="middle">latency (ms, upper bound of bin)</text>`);
  return `<svg class="chart histogram" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(spec.title)}">${parts.join('')}</svg>`;
}

/**
 * A stacked bar chart over time buckets with a legend. Each segment is a
 * `rect.bar` with `data-series` and `data-count`.
 */
export function stackedBarsSvg(spec: { title: string; xLabels: readonly string[]; series: readonly Series[]; width?: number; height?: number }): string {
  const width = spec.width ?? 960;
  const height = spec.height ?? 240;
  const left = 44;
  const right = 150;
  const top = 24;
  const bottom = 30;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const n = spec.xLabels.length;
  const totals = new Array<number>(n).fill(0);
  for (const s of spec.series) {
    s.values.forEach((v, i) => {
      totals[i] = (totals[i] ?? 0) + v;
    });
  }
  const max = Math.max(1, ...totals);
  const slot = plotW / Math.max(1, n);
  const parts: string[] = [];
  parts.push(`<text class="chart-title" x="${left}" y="15">${escapeHtml(spec.title)}</text>`);
  parts.push(`<text class="axis" x="${left - 4}" y="${top + 4}" text-anchor="end">${shortCount(max)}</text>`);
  parts.push(`<text class="axis" x="${left - 4}" y="${top + plotH}" text-anchor="end">0</text>`);
  parts.push(`<line class="axis-line" x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}"/>`);
  for (let i = 0; i < n; i++) {
    let y = top + plotH;
    const x = left + i * slot;
    for (const s of spec.series) {
      const v = s.values[i] ?? 0;
      if (v <= 0) continue;
      const h = Math.max((v / max) * plotH, 0.5);
      y -= h;
      parts.push(
        `<rect class="bar" data-series="${escapeHtml(s.name)}" data-count="${v}" x="${px(x + 0.5)}" y="${px(y)}" width="${px(Math.max(0.8, slot - 1))}" height="${px(h)}" fill="${s.color}"><title>${escapeHtml(spec.xLabels[i] ?? '')} ${escapeHtml(s.name)}: ${v}</title></rect>`,
      );
    }
  }
  const ticks = Math.min(n, 6);
  for (let t = 0; t < ticks; t++) {
    const i = ticks === 1 ? 0 : Math.round((t * (n - 1)) / (ticks - 1));
    parts.push(
      `<text class="axis" x="${px(left + i * slot + slot / 2)}" y="${top + plotH + 14}" text-anchor="middle">${escapeHtml(spec.xLabels[i] ?? '')}</text>`,
    );
  }
  spec.series.forEach((s, k) => {
    const ly = top + k * 16;
    const sum = s.values.reduce((a, b) => a + b, 0);
    parts.push(
      `<g class="legend-item" data-series="${escapeHtml(s.name)}"><rect x="${left + plotW + 12}" y="${ly}" width="10" height="10" fill="${s.color}"/><text class="axis" x="${left + plotW + 26}" y="${ly + 9}">${escapeHtml(s.name)} (${shortCount(sum)})</text></g>`,
    );
  });
  return `<svg class="chart stacked" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(spec.title)}">${parts.join('')}</svg>`;
}
