/**
 * Bounds how many lines of one kind reach the operator's log: an upstream that writes a gigabyte
 * of output that is not MCP would otherwise write a log line for every line of it. The first
 * `perWindow` lines of each window are logged; the rest are counted, and the count is logged with
 * the next line after the window, or when the source ends ({@link LineLimit.flush}).
 */

/** A budget of log lines per time window, for one source and kind of line. */
export class LineLimit {
  private windowStart = Number.NEGATIVE_INFINITY;
  private shown = 0;
  private held = 0;

  constructor(
    /** What the lines are, plural: the count reads `(N more <what> not shown)`. */
    private readonly what: string,
    private readonly perWindow = 10,
    private readonly windowMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The lines to log for one more line of this kind: none once the window's budget is spent. */
  take(line: string): string[] {
    const t = this.now();
    const out: string[] = [];
    if (t - this.windowStart >= this.windowMs) {
      out.push(...this.flush());
      this.windowStart = t;
      this.shown = 0;
    }
    if (this.shown < this.perWindow) {
      this.shown++;
      out.push(line);
    } else this.held++;
    return out;
  }

  /** The count of lines held back so far, as a line (none when nothing was). */
  flush(): string[] {
    if (this.held === 0) return [];
    const line = `(${this.held} more ${this.what} not shown)`;
    this.held = 0;
    return [line];
  }
}
