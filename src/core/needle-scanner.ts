/**
 * Which groups of literal needles occur in a text, in one pass: an Aho–Corasick automaton over the
 * UTF-8 bytes with ASCII letters folded, finding whatever an `i` regular expression would for an ASCII
 * needle. A rule's pattern is tried only when its needles occur. A speed trick (bench/README.md); its
 * reference, `classifyPlainFailureReference`, must agree (plain-failure.test.ts).
 */

/** Columns of the transition table: ASCII. */
const COLUMNS = 128;
const SHIFT = 7;
/** The trie's size bound (a table of 2 bytes x 128 columns per state: 1 MiB); groups beyond it are always candidates. */
const MAX_STATES = 4096;
const ENCODER = new TextEncoder();

function fold(c: number): number {
  return c >= 65 && c <= 90 ? c + 32 : c;
}

/**
 * See the module documentation: groups of needles, built once; {@link NeedleScanner.scan} a text,
 * then ask {@link NeedleScanner.has} per group. Not reentrant (one scan's answers at a time),
 * which a synchronous caller never notices.
 */
export class NeedleScanner {
  /** `table[(state << SHIFT) | byte]` is the next state (SHIFT is 7, written as a literal in `run`); states numbered from `outFrom` on end a needle. */
  private readonly table: Uint16Array;
  private readonly outFrom: number;
  /** The groups each output state completes (index: state - outFrom). */
  private readonly outs: readonly Uint32Array[];
  private readonly start: number;
  /** `stamp[group] === generation` when the last scanned text holds one of the group's needles. */
  private readonly stamp: Uint32Array;
  private readonly always: Uint8Array;
  private generation = 0;
  /** The scanned text's UTF-8 bytes, read four at a time through `words` (little-endian on any platform). */
  private bytes = new Uint8Array(256);
  private words = new DataView(this.bytes.buffer);

  /** `groups[i]` is group i's needles (printable ASCII, at least one character each); `null`: always a candidate. */
  constructor(groups: readonly (readonly string[] | null)[]) {
    const kids: Map<number, number>[] = [new Map()];
    const ends: number[][] = [[]];
    this.always = new Uint8Array(groups.length);
    this.stamp = new Uint32Array(groups.length);
    groups.forEach((needles, g) => {
      if (needles === null || needles.length === 0 || !needles.every(isScannable) || kids.length + chars(needles) > MAX_STATES) {
        this.always[g] = 1;
        return;
      }
      for (const needle of needles) {
        let s = 0;
        for (let i = 0; i < needle.length; i++) {
          const c = fold(needle.charCodeAt(i));
          let t = kids[s]!.get(c);
          if (t === undefined) {
            t = kids.length;
            kids[s]!.set(c, t);
            kids.push(new Map());
            ends.push([]);
          }
          s = t;
        }
        ends[s]!.push(g);
      }
    });
    // Breadth first: a state's failure link is shallower, so its row and its ends are final when read.
    const n = kids.length;
    const next = new Int32Array(n * COLUMNS);
    const failure = new Int32Array(n);
    const queue = [0];
    for (let q = 0; q < queue.length; q++) {
      const s = queue[q]!;
      if (s !== 0) ends[s] = [...new Set([...ends[s]!, ...ends[failure[s]!]!])];
      for (let c = 0; c < COLUMNS; c++) {
        const t = kids[s]!.get(fold(c));
        const viaFailure = s === 0 ? 0 : next[failure[s]! * COLUMNS + fold(c)]!;
        if (t === undefined) next[s * COLUMNS + c] = viaFailure;
        else {
          next[s * COLUMNS + c] = t;
          if (c === fold(c)) {
            failure[t] = viaFailure;
            queue.push(t);
          }
        }
      }
    }
    // Renumbered so that one comparison per byte says whether a needle ended there.
    const number = new Int32Array(n);
    let k = 0;
    for (let s = 0; s < n; s++) if (ends[s]!.length === 0) number[s] = k++;
    this.outFrom = k;
    for (let s = 0; s < n; s++) if (ends[s]!.length > 0) number[s] = k++;
    this.table = new Uint16Array(n * COLUMNS);
    const outs: Uint32Array[] = new Array(n - this.outFrom);
    for (let s = 0; s < n; s++) {
      for (let c = 0; c < COLUMNS; c++) this.table[(number[s]! << SHIFT) | c] = number[next[s * COLUMNS + c]!]!;
      if (ends[s]!.length > 0) outs[number[s]! - this.outFrom] = Uint32Array.from(ends[s]!);
    }
    this.outs = outs;
    this.start = number[0]!;
  }

  /** Scans `text`, replacing the previous answers. */
  scan(text: string): void {
    if (++this.generation === 0xffffffff) {
      this.stamp.fill(0);
      this.generation = 1;
    }
    // A multiple of four, so that the last word read is inside the buffer.
    if (this.bytes.length < text.length * 3 + 4) {
      this.bytes = new Uint8Array((text.length * 3 + 7) & ~3);
      this.words = new DataView(this.bytes.buffer);
    }
    const bytes = this.bytes;
    const length = ENCODER.encodeInto(text, bytes).written;
    // Padded with NUL to a whole word: NUL is in no needle, so it ends none.
    const end = (length + 3) & ~3;
    for (let i = length; i < end; i++) bytes[i] = 0;
    this.run(this.words, end, this.table, this.outFrom, this.generation);
  }

  // Four bytes a step through one DataView read: TurboFan hoists no check out of a loop, so a step per
  // byte paid the array checks and the non-ASCII mask for each byte (and the literal 7: the bundle's
  // module-level `var SHIFT` was read each time). Figures: bench/README.md, the NeedleScanner row.
  private run(words: DataView, end: number, table: Uint16Array, outFrom: number, generation: number): void {
    let s = this.start | 0;
    for (let k = 0; k < end; k += 4) {
      let w = words.getInt32(k, true);
      // A byte over 0x7f (part of a non-ASCII character) reads as NUL, which no needle holds: back to the root.
      const high = w & 0x80808080;
      if (high !== 0) w &= ~(high | (high - (high >>> 7)));
      s = table[(s << 7) | (w & 0x7f)]!;
      if (s >= outFrom) this.mark(s - outFrom, generation);
      s = table[(s << 7) | ((w >> 8) & 0x7f)]!;
      if (s >= outFrom) this.mark(s - outFrom, generation);
      s = table[(s << 7) | ((w >> 16) & 0x7f)]!;
      if (s >= outFrom) this.mark(s - outFrom, generation);
      s = table[(s << 7) | (w >>> 24)]!;
      if (s >= outFrom) this.mark(s - outFrom, generation);
    }
  }

  private mark(out: number, generation: number): void {
    const groups = this.outs[out]!;
    for (let j = 0; j < groups.length; j++) this.stamp[groups[j]!] = generation;
  }

  /** Whether the last scanned text holds one of group `g`'s needles (always true for a group without needles). */
  has(g: number): boolean {
    return this.stamp[g] === this.generation || this.always[g] === 1;
  }
}

function isScannable(needle: string): boolean {
  if (needle.length === 0) return false;
  for (let i = 0; i < needle.length; i++) {
    const c = needle.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

function chars(needles: readonly string[]): number {
  let n = 0;
  for (const needle of needles) n += needle.length;
  return n;
}
