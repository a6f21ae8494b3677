/**
 * The reading side of the packed audit row format (see packed-rows.ts for the writing side): the
 * header tags, the decoder and the batch insert. The audit writer thread (audit-thread.ts) and
 * the calling thread both use this module, so it imports nothing but types.
 *
 * A row is a header (a little-endian uint16 value count, then per value a tag byte: a float64,
 * or a uint32 byte length and the bytes of a string, Latin-1 when it is ASCII, else UTF-8) and
 * then its body (UTF-8 JSON).
 */
import type { Statement } from 'better-sqlite3';

/** The header tag of each kind of value. */
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
 * The SQL of a multi-row INSERT of any count of rows, cut from the SQL of one of `perStatement`
 * rows (a head ending in ` VALUES `, then `perStatement` equal row tuples joined by `, `);
 * undefined when the SQL is not of that shape.
 */
function rowsSql(manySql: string, perStatement: number): ((rows: number) => string) | undefined {
  const at = manySql.indexOf(' VALUES ');
  if (at < 0 || perStatement < 2) return undefined;
  const head = manySql.slice(0, at + 8);
  const tuples = manySql.slice(at + 8);
  const length = (tuples.length - 2 * (perStatement - 1)) / perStatement;
  const tuple = tuples.slice(0, length);
  if (!Number.isInteger(length) || Array(perStatement).fill(tuple).join(', ') !== tuples) return undefined;
  return (rows) => head + Array(rows).fill(tuple).join(', ');
}

/**
 * The statements {@link insertPackedRows} runs on one connection: the insert of one row, the
 * insert of `perStatement` rows (`many`), and, for the rows of a batch left after its last full
 * `many`, a multi-row insert of exactly that many, prepared the first time a batch leaves that
 * count. The small batches that callers wait on (about 20 rows from 32 calls in flight) are all
 * such a remainder: one statement for them instead of one per row is about a tenth less CPU per
 * commit, measured. Pays for `gateway (audit commit)` (`stdio, SQLite: commit before answer,
 * median latency`); reference: `remainder: 'one by one'`, which the tests compare it with.
 */
export class RowInserts {
  /** The insert of one row. */
  readonly one: Statement;
  /** The insert of {@link perStatement} rows. */
  readonly many: Statement;
  private readonly sized: (Statement | undefined)[] = [];
  private readonly sqlFor: ((rows: number) => string) | undefined;

  constructor(
    private readonly db: { prepare(sql: string): Statement },
    insertSql: string,
    insertManySql: string,
    readonly perStatement: number,
    options: { remainder?: 'together' | 'one by one' } = {},
  ) {
    this.one = db.prepare(insertSql);
    this.many = db.prepare(insertManySql);
    this.sqlFor = options.remainder === 'one by one' ? undefined : rowsSql(insertManySql, perStatement);
  }

  /** The statement that inserts `rows` (1 to {@link perStatement}) rows at once, or undefined when they go one by one. */
  forRows(rows: number): Statement | undefined {
    if (rows === this.perStatement) return this.many;
    if (rows === 1 || this.sqlFor === undefined) return undefined;
    return (this.sized[rows] ??= this.db.prepare(this.sqlFor(rows)));
  }
}

/**
 * Inserts a batch of packed rows (as made by `batchMessage`): `perStatement` rows per execution
 * of `many`, the rest with one statement of that many rows when {@link RowInserts} has one, else
 * one by one. Call it inside a transaction. `chainPos`: each row's place in the writer's chain is
 * bound after its values, from this number on (null: the column is bound null; undefined: there
 * is no such column). `textAsBytes`: string values are bound as their UTF-8 bytes, for statements
 * that CAST every parameter that may be a string to TEXT (see audit-sql.ts); the stored values
 * are the same.
 */
export function insertPackedRows(inserts: RowInserts, bytes: Buffer, meta: Uint32Array, chainPos?: number | null, textAsBytes = false): void {
  const n = (meta.length / 3) | 0;
  const perStatement = inserts.perStatement;
  const rest = n % perStatement;
  const grouped = n - rest;
  const together = rest > 1 ? inserts.forRows(rest) : undefined;
  const params: unknown[] = [];
  let k = 0;
  for (let i = 0; i < n; i++) {
    const s = meta[3 * i]!;
    const h = meta[3 * i + 1]!;
    const e = meta[3 * i + 2]!;
    // Values passed as arguments rather than as one array: better-sqlite3 then reads them
    // straight from the call instead of one property lookup per value (~1 µs less per row).
    const pos = chainPos === undefined || chainPos === null ? chainPos : chainPos + i;
    if (i >= grouped && together === undefined) {
      const row: unknown[] = [];
      const end = decodeRow(bytes, s, h, e, row, 0, textAsBytes);
      if (pos !== undefined) row[end] = pos;
      inserts.one.run(...row);
      continue;
    }
    k = decodeRow(bytes, s, h, e, params, k, textAsBytes);
    if (pos !== undefined) params[k++] = pos;
    if ((i + 1) % perStatement === 0) {
      inserts.many.run(...params);
      k = 0;
    } else if (i === n - 1 && together) {
      // The same array held the last full `many`'s values: only this statement's count goes.
      params.length = k;
      together.run(...params);
    }
  }
}
