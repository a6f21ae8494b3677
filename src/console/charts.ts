/**
 * Charts drawn on the server as inline SVG: no script and no `style` attribute (the console's CSP
 * allows neither inline), colours as SVG presentation attributes (`fill`), which CSP does not
 * govern. Every label is made inert: tool names come from the log.
 */
import { inert } from './inert.js';

/**
 * A series of a stacked column chart: its name, colour and one value per column.
 *
 * @example
 * ```ts
 * const s: Series = { name: 'ok', color: '#1b7a3a', values: [3, 5, 0] };
 * ```
 */
export interface Series {
  name: string;
  color: string;
  values: number[];
}

const W = 960;
const LEFT = 56;
const BOTTOM = 22;

/** A round axis maximum at or above `max`. */
function niceMax(max: number): number {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

const num = (n: number): string => (Number.isInteger(n) ? String(n) : n.toPrecision(3));

/**
 * Columns stacked by series, one per time bucket, with a y axis and a few x labels.
 *
 * @example
 * ```ts
 * stackedColumns('Calls', ['00:00', '01:00'], [{ name: 'ok', color: '#1b7a3a', values: [3, 5] }]);
 * ```
 */
export function stackedColumns(title: string, labels: readonly string[], series: readonly Series[], height = 220): string {
  const n = labels.length;
  const totals = labels.map((_, i) => series.reduce((s, x) => s + (x.values[i] ?? 0), 0));
  const top = niceMax(Math.max(0, ...totals));
  const plotH = height - BOTTOM - 8;
  const colW = (W - LEFT) / Math.max(n, 1);
  const y = (v: number): number => 8 + plotH - (v / top) * plotH;
  const parts: string[] = [];
  for (const f of [0, 0.5, 1]) {
    parts.push(`<line x1="${LEFT}" x2="${W}" y1="${y(top * f).toFixed(1)}" y2="${y(top * f).toFixed(1)}" stroke="#d7dbe3"/>`);
    parts.push(`<text x="${LEFT - 6}" y="${(y(top * f) + 4).toFixed(1)}" text-anchor="end" font-size="11" fill="#5b6475">${num(top * f)}</text>`);
  }
  for (let i = 0; i < n; i++) {
    let acc = 0;
    for (const s of series) {
      const v = s.values[i] ?? 0;
      if (v <= 0) continue;
      const y1 = y(acc + v);
      parts.push(
        `<rect x="${(LEFT + i * colW + 1).toFixed(1)}" y="${y1.toFixed(1)}" width="${Math.max(colW - 2, 1).toFixed(1)}" height="${(y(acc) - y1).toFixed(1)}" fill="${s.color}"><title>${inert(labels[i], 100)}: ${inert(s.name, 200)} ${v}</title></rect>`,
      );
      acc += v;
    }
  }
  const every = Math.max(1, Math.ceil(n / 8));
  for (let i = 0; i < n; i += every) {
    parts.push(`<text x="${(LEFT + i * colW).toFixed(1)}" y="${height - 6}" font-size="11" fill="#5b6475">${inert(labels[i], 40)}</text>`);
  }
  return figure(title, height, parts, legend(series));
}

/**
 * One row per item, a bar per measure (e.g. p50, p95, p99 of each tool), on one linear scale.
 *
 * @example
 * ```ts
 * groupedBars('Latency (ms)', [{ label: 'fs.read', values: [1, 4, 9] }], [{ name: 'p50', color: '#9bb7e0' }]);
 * ```
 */
export function groupedBars(
  title: string,
  rows: readonly { label: string; values: number[] }[],
  measures: readonly { name: string; color: string }[],
  unit: string,
): string {
  const label = 220;
  const barH = 7;
  const rowH = measures.length * barH + 8;
  const height = rows.length * rowH + 24;
  const top = niceMax(Math.max(0, ...rows.flatMap((r) => r.values)));
  const x = (v: number): number => label + (v / top) * (W - label - 60);
  const parts: string[] = [];
  rows.forEach((r, i) => {
    const y0 = 4 + i * rowH;
    parts.push(
      `<text x="${label - 8}" y="${y0 + rowH / 2 + 3}" text-anchor="end" font-size="12" fill="#1d2330">${inert(short(r.label))}<title>${inert(r.label, 500)}</title></text>`,
    );
    measures.forEach((m, j) => {
      const v = r.values[j] ?? 0;
      parts.push(
        `<rect x="${label}" y="${y0 + j * barH}" width="${Math.max(x(v) - label, 0.5).toFixed(1)}" height="${barH - 1}" fill="${m.color}"><title>${inert(r.label, 200)} ${m.name}: ${num(v)} ${unit}</title></rect>`,
      );
    });
    const last = r.values[r.values.length - 1] ?? 0;
    parts.push(`<text x="${(x(last) + 4).toFixed(1)}" y="${y0 + rowH / 2 + 3}" font-size="11" fill="#5b6475">${num(last)} ${unit}</text>`);
  });
  parts.push(`<text x="${label}" y="${height - 4}" font-size="11" fill="#5b6475">0</text>`);
  parts.push(`<text x="${W - 60}" y="${height - 4}" text-anchor="end" font-size="11" fill="#5b6475">${num(top)} ${unit}</text>`);
  return figure(title, height, parts, legend(measures));
}

/** A label cut to fit its column (the whole one is in its tooltip). */
function short(label: string): string {
  const chars = Array.from(label);
  return chars.length > 30 ? `${chars.slice(0, 29).join('')}…` : label;
}

function legend(items: readonly { name: string; color: string }[]): string {
  return `<ul class="legend">${items
    .map((s) => `<li><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="${s.color}"/></svg> ${inert(s.name, 100)}</li>`)
    .join('')}</ul>`;
}

function figure(title: string, height: number, parts: string[], after: string): string {
  return `<figure class="chart"><figcaption>${inert(title)}</figcaption><svg viewBox="0 0 ${W} ${height}" width="100%" role="img" aria-label="${inert(title)}">${parts.join('')}</svg>${after}</figure>`;
}
