/**
 * Queued audit rows packed off-heap (a binary header of column values, then the UTF-8 JSON body, in
 * 1 MiB chunks): nothing for young-generation GCs to copy while a row waits, and a batch reaches the
 * worker as one transferred buffer. The format and its reader: packed-format.ts.
 */
import { ToolEnvelopeError } from 'tool-envelope/core';
import { decodeRow, TAG } from './packed-format.js';

export { decodeRow, insertPackedRows, RowInserts } from './packed-format.js';

const CHUNK_BYTES = 1 << 20;

/** A prepared audit row: header in `buf[s, h)`, body in `buf[h, e)`. */
export interface PackedRow {
  readonly buf: Buffer;
  readonly s: number;
  readonly h: number;
  readonly e: number;
}

/**
 * Packs rows into chunks, a new chunk when the current one is full; a chunk is freed by the GC
 * once no queued row refers to it.
 */
export class AuditRowPacker {
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;

  /**
   * Packs column values (strings, numbers, null; undefined is stored as null)
   * with `body` in place of the value at `bodyIndex`. Throws `invalid-option` for other values.
   */
  pack(values: readonly unknown[], bodyIndex: number, body: string): PackedRow {
    // An upper bound of the bytes: at most 3 UTF-8 bytes per UTF-16 unit, or for long text
    // (where 3x could be a lot of memory) its exact UTF-8 length.
    let bound = 2 + utf8Bound(body);
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (i === bodyIndex) bound += 1;
      else if (typeof v === 'string') bound += 5 + utf8Bound(v);
      else if (typeof v === 'number' || v === null || v === undefined) bound += 9;
      else throw new ToolEnvelopeError('invalid-option', `audit row value ${i} must be a string, a number or null, got ${typeof v}`);
    }
    if (this.pos + bound > this.buf.length) {
      this.buf = Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, bound));
      this.pos = 0;
    }
    const buf = this.buf;
    const s = this.pos;
    let p = s;
    buf[p++] = values.length & 0xff;
    buf[p++] = values.length >> 8;
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (i === bodyIndex) buf[p++] = TAG.BODY;
      else if (typeof v === 'string') p = writeString(buf, p, v);
      else if (typeof v === 'number') {
        buf[p] = TAG.NUMBER;
        if (LITTLE_ENDIAN) {
          // Byte by byte from a float64 scratch: cheaper than writeDoubleLE's checks, per value.
          F64[0] = v;
          for (let b = 0; b < 8; b++) buf[p + 1 + b] = F64_BYTES[b]!;
        } else buf.writeDoubleLE(v, p + 1);
        p += 9;
      } else buf[p++] = TAG.NULL;
    }
    const h = p;
    const e = h + buf.write(body, h);
    this.pos = e;
    return { buf, s, h, e };
  }
}

function utf8Bound(text: string): number {
  return text.length > 65_536 ? Buffer.byteLength(text, 'utf8') : 3 * text.length;
}

const F64 = new Float64Array(1);
const F64_BYTES = new Uint8Array(F64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function writeString(buf: Buffer, at: number, v: string): number {
  const start = at + 5;
  let p = start;
  let tag: number = TAG.ASCII;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c > 0x7f) {
      tag = TAG.UTF8;
      p = start + buf.write(v, start);
      break;
    }
    buf[p++] = c;
  }
  const n = p - start;
  buf[at] = tag;
  buf[at + 1] = n;
  buf[at + 2] = n >>> 8;
  buf[at + 3] = n >>> 16;
  buf[at + 4] = n >>> 24;
  return p;
}

/** The column values of a packed row, with the body as a string. */
export function unpackRow(row: PackedRow): unknown[] {
  const values: unknown[] = [];
  decodeRow(row.buf, row.s, row.h, row.e, values, 0);
  const at = values.findIndex((v) => v instanceof Uint8Array);
  if (at >= 0) values[at] = row.buf.toString('utf8', row.h, row.e);
  return values;
}

/**
 * The same batch as {@link batchMessage} gives, for a commit on this thread: when the rows sit one
 * after another in one chunk (a lone record's row always does), a view of their bytes there
 * instead of a copy into a new buffer (which, made to be transferred, is an `ArrayBuffer` of its
 * own each time). Never to be transferred: the view's buffer is the packer's whole chunk. Pays for
 * `gateway (audit commit)`, `SQLite log added latency, one call at a time (HTTP)` (figures in
 * bench/README.md); reference: {@link batchMessage}, which a store without its writer thread
 * (`auditWorker: false`) commits from, and which the store suite runs too.
 */
export function batchView(rows: readonly PackedRow[]): { bytes: Buffer; meta: Uint32Array } {
  const first = rows[0];
  if (first === undefined) return batchMessage(rows);
  const start = first.s;
  let end = start;
  for (const row of rows) {
    if (row.buf !== first.buf || row.s !== end) return batchMessage(rows);
    end = row.e;
  }
  const meta = new Uint32Array(rows.length * 3);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as PackedRow;
    meta[3 * i] = row.s - start;
    meta[3 * i + 1] = row.h - start;
    meta[3 * i + 2] = row.e - start;
  }
  return { bytes: first.buf.subarray(start, end), meta };
}

/**
 * A batch of packed rows as one buffer (the rows' bytes, in order) and per row `[s, h, e]`
 * within it: the message that carries a batch to the audit worker (both are transferable).
 */
export function batchMessage(rows: readonly PackedRow[]): { bytes: Buffer; meta: Uint32Array } {
  let total = 0;
  for (const row of rows) total += row.e - row.s;
  const bytes = Buffer.allocUnsafeSlow(total);
  const meta = new Uint32Array(rows.length * 3);
  let at = 0;
  // Rows queued one after another sit one after another in a chunk: copy such runs at once.
  let runBuf: Buffer | undefined;
  let runStart = 0;
  let runEnd = 0;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as PackedRow;
    if (row.buf !== runBuf || row.s !== runEnd) {
      if (runBuf) at += runBuf.copy(bytes, at, runStart, runEnd);
      runBuf = row.buf;
      runStart = row.s;
    }
    runEnd = row.e;
    const base = at + (row.s - runStart);
    meta[3 * i] = base;
    meta[3 * i + 1] = base + (row.h - row.s);
    meta[3 * i + 2] = base + (row.e - row.s);
  }
  if (runBuf) runBuf.copy(bytes, at, runStart, runEnd);
  return { bytes, meta };
}
