/**
 * Aligned terminal tables that fit a width (100 columns by default). When the natural table is
 * wider, its optional columns are left out first (in the order given), then the widest
 * shortenable columns give way, their long cells cut in the middle with '…' (both ends stay
 * readable) or, for columns whose end matters most (times), at the start. Columns a user copies
 * from (ids) are never cut. `Infinity` as the width (the CLI's `--wide`) prints every column and
 * every cell whole.
 */

/** The width terminal tables fit unless `--wide` is given. */
export const TABLE_WIDTH = 100;

export interface TableOptions {
  /** Columns (by header) aligned right: numbers. */
  right?: ReadonlySet<string>;
  /** Columns (by header) never shortened. */
  keep?: ReadonlySet<string>;
  /** Columns (by header) shortened at their start, keeping the end ('…09:44:24.627'). */
  cutStart?: ReadonlySet<string>;
  /** Columns (by header) left out, in this order, while the table is wider than the width. */
  optional?: readonly string[];
  /** The widest a line may be (default {@link TABLE_WIDTH}). */
  width?: number;
}

/** `text` cut to `width` characters with '…' in the middle (unchanged when it fits). */
export function shorten(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  if (width <= 1) return '…'.slice(0, width);
  const head = Math.ceil((width - 1) / 2);
  return `${chars.slice(0, head).join('')}…${chars.slice(chars.length - (width - 1 - head)).join('')}`;
}

const length = (s: string): number => [...s].length;

/**
 * A cell that shortens itself: `text` when it fits, else `fit(width)` (at most `width` characters),
 * for a cell whose parts must each stay readable (arguments: every key and the start of every value).
 */
export interface FitCell {
  readonly text: string;
  fit(width: number): string;
}

/** A table cell: printable text, or a {@link FitCell}. */
export type Cell = string | FitCell;

const textOf = (c: Cell | undefined): string => (c === undefined ? '' : typeof c === 'string' ? c : c.text);

/** Formats rows (already printable) as a header, a rule and one line per row, fitting `width`. */
export function fitTable(header: readonly string[], rows: readonly (readonly Cell[])[], options: TableOptions = {}): string {
  const right = options.right ?? new Set<string>();
  const keep = options.keep ?? new Set<string>();
  const cutStart = options.cutStart ?? new Set<string>();
  const limit = options.width ?? TABLE_WIDTH;
  const natural = header.map((h, i) => Math.max(length(h), ...rows.map((r) => length(textOf(r[i])))));
  const total = (cols: readonly number[]): number => cols.reduce((a, i) => a + natural[i]!, 0) + 2 * (cols.length - 1);
  let cols = header.map((_, i) => i);
  for (const name of options.optional ?? []) {
    if (total(cols) <= limit) break;
    cols = cols.filter((i) => header[i] !== name);
  }
  const widths = cols.map((i) => natural[i]!);
  const floor = cols.map((i, k) => (keep.has(header[i]!) || right.has(header[i]!) ? widths[k]! : Math.min(widths[k]!, Math.max(length(header[i]!), 10))));
  let excess = total(cols) - limit;
  while (excess > 0) {
    // Times give first (they lose the date); then the widest column that can still give way gives
    // down to the next widest (ties: the rightmost).
    const can = (k: number): boolean => widths[k]! > floor[k]!;
    const firsts = cols.map((_, k) => k).filter((k) => can(k) && cutStart.has(header[cols[k]!]!));
    const pool = firsts.length > 0 ? firsts : cols.map((_, k) => k).filter(can);
    if (pool.length === 0) break;
    const widest = pool.reduce((a, k) => (widths[k]! >= widths[a]! ? k : a));
    const next = Math.max(0, ...pool.filter((k) => k !== widest).map((k) => widths[k]!));
    const give = Math.min(excess, widths[widest]! - floor[widest]!, Math.max(1, widths[widest]! - next));
    widths[widest] = widths[widest]! - give;
    excess -= give;
  }
  const line = (r: readonly Cell[]): string =>
    cols
      .map((i, k) => {
        const given = r[i];
        const text = textOf(given);
        const w = widths[k]!;
        const cell =
          typeof given === 'object' && length(text) > w
            ? shorten(given.fit(w), w)
            : cutStart.has(header[i]!) && length(text) > w
              ? `…${[...text].slice(length(text) - w + 1).join('')}`
              : shorten(text, w);
        if (right.has(header[i]!)) return cell.padStart(w);
        return k === cols.length - 1 ? cell : cell + ' '.repeat(w - length(cell));
      })
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n') + '\n';
}
