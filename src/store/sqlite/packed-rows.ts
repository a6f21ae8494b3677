/**
 * Audit rows packed into off-heap memory while they wait for their batch: each prepared row is
 * its column values in a small binary form (the header) followed by its body (UTF-8 JSON), in a
 * 1 MiB chunk. A queued record then holds no strings or arrays on the JS heap (nothing for
 * young-generation GCs to copy while it waits), and a batch reaches the audit worker as one
 * transferred buffer and its offsets: a few large copies, no structured clone of its values.
 * (Shared chunks would save that copy, but a fresh SharedArrayBuffer costs several times more
 * to allocate and fault in than the copy, measured.) The header form is cheaper to write and to
 * read than JSON (about 2 µs less per row across both threads, measured): per value a tag byte,
 * then a float64, or a uint32 byte length and the bytes of a string (Latin-1 when it is ASCII,
 * else UTF-8).
 */
import type { Statement } from 'better-sqlite3';
import { ToolEnvelopeError } from '../../core/index.js';

const CHUNK_BYTES = 1 << 20;
// Header tags; the same numbers are spelled out in decodeRow, which cannot refer to these.
const T_NULL = 0;
const T_NUMBER = 1;
const T_ASCII = 2;
const T_UTF8 = 3;
/** The body's place among the column values. */
const T_BODY = 4;

/**
 * A prepared audit row: header in `buf[s, h)`, body in `buf[h, e)`.
 *
 * @example
 * ```ts
 * const row: PackedRow = new AuditRowPacker().pack(['a', null, 4], 1, '[]');
 * ```
 */
export interface PackedRow {
  readonly buf: Buffer;
  readonly s: number;
  readonly h: number;
  readonly e: number;
}

/**
 * Packs rows into chunks, a new chunk when the current one is full; a chunk is freed by the GC
 * once no queued row refers to it.
 *
 * @example
 * ```ts
 * const packer = new AuditRowPacker();
 * const row = packer.pack(['id', 0, null], 1, '[1,2]');
 * unpackRow(row); // ['id', '[1,2]', null]
 * ```
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
      if (i === bodyIndex) buf[p++] = T_BODY;
      else if (typeof v === 'string') p = writeString(buf, p, v);
      else if (typeof v === 'number') {
        buf[p] = T_NUMBER;
        if (LITTLE_ENDIAN) {
          // Byte by byte from a float64 scratch: cheaper than writeDoubleLE's checks, per value.
          F64[0] = v;
          for (let b = 0; b < 8; b++) buf[p + 1 + b] = F64_BYTES[b]!;
        } else buf.writeDoubleLE(v, p + 1);
        p += 9;
      } else buf[p++] = T_NULL;
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
  let tag = T_ASCII;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c > 0x7f) {
      tag = T_UTF8;
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

/**
 * The column values of a packed row, with the body as a string.
 *
 * @example
 * ```ts
 * unpackRow(new AuditRowPacker().pack(['x', 0], 1, 'body')); // ['x', 'body']
 * ```
 */
export function unpackRow(row: PackedRow): unknown[] {
  const values: unknown[] = [];
  decodeRow(row.buf, row.s, row.h, row.e, values, 0);
  const at = values.findIndex((v) => v instanceof Uint8Array);
  if (at >= 0) values[at] = row.buf.toString('utf8', row.h, row.e);
  return values;
}

/**
 * Decodes the header at `bytes[s, h)` into `out` from index `k`, the body as `bytes[h, e)`
 * (a Buffer view); returns the index after the row's last value.
 *
 * The audit worker runs this function (its source is sent along with the worker's), so it must
 * not refer to anything outside itself, nor define nested functions.
 *
 * @example
 * ```ts
 * const out: unknown[] = [];
 * decodeRow(row.buf, row.s, row.h, row.e, out, 0);
 * ```
 */
export function decodeRow(bytes: Buffer, s: number, h: number, e: number, out: unknown[], k: number): number {
  const count = bytes[s]! | (bytes[s + 1]! << 8);
  let p = s + 2;
  for (let c = 0; c < count; c++) {
    const tag = bytes[p++];
    if (tag === 1) {
      out[k++] = bytes.readDoubleLE(p);
      p += 8;
    } else if (tag === 2 || tag === 3) {
      const end = p + 4 + (bytes[p]! + bytes[p + 1]! * 0x100 + bytes[p + 2]! * 0x10000 + bytes[p + 3]! * 0x1000000);
      out[k++] = bytes.toString(tag === 2 ? 'latin1' : 'utf8', p + 4, end);
      p = end;
    } else if (tag === 4) {
      // The body is bound as bytes (CAST to TEXT in the statement): no string is made for it.
      out[k++] = bytes.subarray(h, e);
    } else out[k++] = null;
  }
  return k;
}

/**
 * A batch of packed rows as one buffer (the rows' bytes, in order) and per row `[s, h, e]`
 * within it: the message that carries a batch to the audit worker (both are transferable).
 *
 * @example
 * ```ts
 * const { bytes, meta } = batchMessage(rows);
 * worker.postMessage({ bytes, meta }, [bytes.buffer, meta.buffer]);
 * ```
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

/**
 * Inserts a batch of packed rows (as made by {@link batchMessage}): `perStatement` rows per
 * execution of `many` (a multi-row INSERT of that many rows), the rest one by one through `one`.
 * Call it inside a transaction.
 *
 * The audit worker runs this function and {@link decodeRow} (their source is sent along with
 * the worker's), so it must not refer to anything else outside itself, nor define nested functions.
 *
 * @example
 * ```ts
 * db.transaction(() => insertPackedRows(one, many, 32, bytes, meta)).immediate();
 * ```
 */
export function insertPackedRows(one: Statement, many: Statement, perStatement: number, bytes: Buffer, meta: Uint32Array, chainPos?: number | null): void {
  const n = (meta.length / 3) | 0;
  const grouped = n - (n % perStatement);
  const params: unknown[] = [];
  let k = 0;
  for (let i = 0; i < n; i++) {
    const s = meta[3 * i]!;
    const h = meta[3 * i + 1]!;
    const e = meta[3 * i + 2]!;
    // Values passed as arguments rather than as one array: better-sqlite3 then reads them
    // straight from the call instead of one property lookup per value (~1 µs less per row).
    // Each row's place in the writer's chain follows its values (null: no chain; undefined: no such column).
    const pos = chainPos === undefined || chainPos === null ? chainPos : chainPos + i;
    if (i >= grouped) {
      const row: unknown[] = [];
      const end = decodeRow(bytes, s, h, e, row, 0);
      if (pos !== undefined) row[end] = pos;
      one.run(...row);
      continue;
    }
    k = decodeRow(bytes, s, h, e, params, k);
    if (pos !== undefined) params[k++] = pos;
    if ((i + 1) % perStatement === 0) {
      many.run(...params);
      k = 0;
    }
  }
}
