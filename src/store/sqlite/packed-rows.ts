/**
 * Audit rows packed into off-heap memory while they wait for their batch: each prepared row is
 * its column values as a small JSON array (the header) followed by its body, both UTF-8, in a
 * 1 MiB chunk. A queued record then holds no strings or arrays on the JS heap (nothing for
 * young-generation GCs to copy while it waits), and a batch reaches the audit worker as one
 * transferred buffer and its offsets: a few large copies, no structured clone of its values.
 * (Shared chunks would save that copy, but a fresh SharedArrayBuffer costs several times more
 * to allocate and fault in than the copy, measured.)
 */
import type { Statement } from 'better-sqlite3';

const CHUNK_BYTES = 1 << 20;

/**
 * A prepared audit row: header JSON in `buf[s, h)`, body in `buf[h, e)`.
 *
 * @example
 * ```ts
 * const row: PackedRow = new AuditRowPacker().pack('["a",0]', '[]');
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
 * const row = packer.pack(JSON.stringify(['id', 0]), '[1,2]');
 * unpackRow(row, 1); // ['id', '[1,2]']
 * ```
 */
export class AuditRowPacker {
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;

  pack(header: string, body: string): PackedRow {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit: a bound without measuring the text.
    const bound = 3 * (header.length + body.length);
    if (this.pos + bound > this.buf.length) {
      this.buf = Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, bound));
      this.pos = 0;
    }
    const buf = this.buf;
    const s = this.pos;
    const h = s + buf.write(header, s);
    const e = h + buf.write(body, h);
    this.pos = e;
    return { buf, s, h, e };
  }
}

/**
 * The column values of a packed row, with the body (at `bodyIndex`) as a string.
 *
 * @example
 * ```ts
 * unpackRow(new AuditRowPacker().pack('["x",0]', 'body'), 1); // ['x', 'body']
 * ```
 */
export function unpackRow(row: PackedRow, bodyIndex: number): unknown[] {
  const values = JSON.parse(row.buf.toString('utf8', row.s, row.h)) as unknown[];
  values[bodyIndex] = row.buf.toString('utf8', row.h, row.e);
  return values;
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
export function batchMessage(rows: readonly PackedRow[]): { bytes: Buffer; meta: Int32Array } {
  let total = 0;
  for (const row of rows) total += row.e - row.s;
  const bytes = Buffer.allocUnsafeSlow(total);
  const meta = new Int32Array(rows.length * 3);
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
 * The audit worker runs this same function (its source is sent along with the worker's), so it
 * must not refer to anything outside itself, nor define nested functions.
 *
 * @example
 * ```ts
 * db.transaction(() => insertPackedRows(one, many, 32, bytes, meta, bodyIndex)).immediate();
 * ```
 */
export function insertPackedRows(one: Statement, many: Statement, perStatement: number, bytes: Buffer, meta: Int32Array, bodyIndex: number): void {
  const n = (meta.length / 3) | 0;
  const grouped = n - (n % perStatement);
  const params: unknown[] = [];
  let k = 0;
  for (let i = 0; i < n; i++) {
    const h = meta[3 * i + 1]!;
    const row = JSON.parse(bytes.toString('utf8', meta[3 * i]!, h)) as unknown[];
    // The body is bound as bytes (CAST to TEXT in the statement): no string is made for it.
    row[bodyIndex] = bytes.subarray(h, meta[3 * i + 2]!);
    // Values passed as arguments rather than as one array: better-sqlite3 then reads them
    // straight from the call instead of one property lookup per value (~1 µs less per row).
    if (i >= grouped) {
      one.run(...row);
      continue;
    }
    for (let c = 0; c < row.length; c++) params[k++] = row[c];
    if ((i + 1) % perStatement === 0) {
      many.run(...params);
      k = 0;
    }
  }
}
