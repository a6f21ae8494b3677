/**
 * The reading side of the packed audit row format (see packed-rows.ts for the writing side): the
 * header tags, the decoder and the batch insert. The audit writer thread (audit-thread.ts) and
 * the calling thread both use this module, so it imports nothing but types.
 *
 * A row is a header (a little-endian uint16 value count, then per value a tag byte: a float64,
 * or a uint32 byte length and the bytes of a string, Latin-1 when it is ASCII, else UTF-8) and
 * then its body (UTF-8 JSON).
 *
 * @example
 * ```ts
 * const out: unknown[] = [];
 * decodeRow(row.buf, row.s, row.h, row.e, out, 0);
 * ```
 */
import type { Statement } from 'better-sqlite3';

/**
 * The header tag of each kind of value.
 *
 * @example
 * ```ts
 * buf[p] = TAG.NUMBER; // then 8 bytes of float64
 * ```
 */
export const TAG = {
  NULL: 0,
  NUMBER: 1,
  ASCII: 2,
  UTF8: 3,
  /** The body's place among the column values. */
  BODY: 4,
} as const;

/**
 * Decodes the header at `bytes[s, h)` into `out` from index `k`, the body as `bytes[h, e)`
 * (a Buffer view); returns the index after the row's last value. `textAsBytes`: strings too are
 * given as views of their UTF-8 bytes (for statements that CAST them to TEXT), not as strings.
 *
 * @example
 * ```ts
 * const out: unknown[] = [];
 * decodeRow(row.buf, row.s, row.h, row.e, out, 0);
 * ```
 */
export function decodeRow(bytes: Buffer, s: number, h: number, e: number, out: unknown[], k: number, textAsBytes = false): number {
  const count = bytes[s]! | (bytes[s + 1]! << 8);
  let p = s + 2;
  for (let c = 0; c < count; c++) {
    const tag = bytes[p++];
    if (tag === TAG.NUMBER) {
      out[k++] = bytes.readDoubleLE(p);
      p += 8;
    } else if (tag === TAG.ASCII || tag === TAG.UTF8) {
      const end = p + 4 + (bytes[p]! + bytes[p + 1]! * 0x100 + bytes[p + 2]! * 0x10000 + bytes[p + 3]! * 0x1000000);
      // A plain Uint8Array view (better-sqlite3 binds any ArrayBufferView as a blob): no string
      // made here and none converted back to UTF-8 by the binding, only the blob's copy.
      out[k++] = textAsBytes
        ? new Uint8Array(bytes.buffer, bytes.byteOffset + p + 4, end - p - 4)
        : bytes.toString(tag === TAG.ASCII ? 'latin1' : 'utf8', p + 4, end);
      p = end;
    } else if (tag === TAG.BODY) {
      // The body is bound as bytes (CAST to TEXT in the statement): no string is made for it.
      out[k++] = bytes.subarray(h, e);
    } else out[k++] = null;
  }
  return k;
}

/**
 * Inserts a batch of packed rows (as made by `batchMessage`): `perStatement` rows per execution
 * of `many` (a multi-row INSERT of that many rows), the rest one by one through `one`. Call it
 * inside a transaction. `chainPos`: each row's place in the writer's chain is bound after its
 * values, from this number on (null: the column is bound null; undefined: there is no such column).
 * `textAsBytes`: string values are bound as their UTF-8 bytes, for statements that CAST every
 * parameter that may be a string to TEXT (see audit-sql.ts); the stored values are the same.
 *
 * @example
 * ```ts
 * db.transaction(() => insertPackedRows(one, many, 32, bytes, meta)).immediate();
 * ```
 */
export function insertPackedRows(
  one: Statement,
  many: Statement,
  perStatement: number,
  bytes: Buffer,
  meta: Uint32Array,
  chainPos?: number | null,
  textAsBytes = false,
): void {
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
    const pos = chainPos === undefined || chainPos === null ? chainPos : chainPos + i;
    if (i >= grouped) {
      const row: unknown[] = [];
      const end = decodeRow(bytes, s, h, e, row, 0, textAsBytes);
      if (pos !== undefined) row[end] = pos;
      one.run(...row);
      continue;
    }
    k = decodeRow(bytes, s, h, e, params, k, textAsBytes);
    if (pos !== undefined) params[k++] = pos;
    if ((i + 1) % perStatement === 0) {
      many.run(...params);
      k = 0;
    }
  }
}
