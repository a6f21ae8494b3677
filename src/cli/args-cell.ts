/**
 * A call's arguments as a table cell an approver can read at any width: `key=value` pairs, each
 * value cut on its own (in the middle, both ends kept), so that every key and the start of every
 * value show; `{"path":"/srv/s…content":"wr...` hid the path behind the first cut. Keys and values
 * that are not plain words are JSON-quoted, so a value holding ` other=x` cannot pass for a key.
 */
import { printable } from './audit-common.js';
import { type FitCell, shorten } from './table.js';

/** Text shown without quotes: it cannot hold a space, '=' or a quote. */
const PLAIN = /^[A-Za-z0-9_./:@+,~%#-]+$/;
/** Each value keeps at least this many characters (or all of a shorter one) before pairs are left out. */
const VALUE_FLOOR = 6;
const length = (s: string): number => [...s].length;

function word(text: string): string {
  return printable(PLAIN.test(text) ? text : JSON.stringify(text));
}

function valueText(v: unknown): string {
  if (typeof v === 'string') return word(v);
  return printable(JSON.stringify(v) ?? String(v));
}

/** The arguments cell of a table (see the file's comment). */
export function argsCell(args: unknown): FitCell {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    const text = valueText(args ?? {});
    return { text, fit: (w) => shorten(text, w) };
  }
  const pairs = Object.entries(args as Record<string, unknown>).map(([k, v]) => ({ key: `${word(k)}=`, value: valueText(v) }));
  const text = pairs.map((p) => p.key + p.value).join(' ');
  return { text, fit: (width) => fitPairs(pairs, width) };
}

function fitPairs(pairs: readonly { key: string; value: string }[], width: number): string {
  // Leave out trailing pairs (marked ' …') until the kept ones fit with every value at its floor.
  for (let n = pairs.length; n > 0; n--) {
    const kept = pairs.slice(0, n);
    const more = n < pairs.length ? 2 : 0;
    const fixed = kept.reduce((a, p) => a + length(p.key), 0) + (n - 1) + more;
    const widths = kept.map((p) => length(p.value));
    const floors = widths.map((w) => Math.min(w, VALUE_FLOOR));
    if (fixed + floors.reduce((a, b) => a + b, 0) > width) continue;
    let excess = fixed + widths.reduce((a, b) => a + b, 0) - width;
    while (excess > 0) {
      // The longest value gives, down to the next longest (or its floor).
      const i = widths.reduce(
        (best, w, k) => (w - floors[k]! > 0 && w >= widths[best]! ? k : best),
        widths.findIndex((w, k) => w > floors[k]!),
      );
      const next = Math.max(floors[i]!, ...widths.filter((_, k) => k !== i));
      const give = Math.min(excess, widths[i]! - floors[i]!, Math.max(1, widths[i]! - next));
      widths[i] = widths[i]! - give;
      excess -= give;
    }
    return kept.map((p, k) => p.key + shorten(p.value, widths[k]!)).join(' ') + (more ? ' …' : '');
  }
  return shorten(pairs.map((p) => p.key + p.value).join(' '), width);
}
