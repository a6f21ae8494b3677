import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { isToolEnvelopeError } from '../../core/index.js';
import { AuditRowPacker, batchMessage, batchView, insertPackedRows, RowInserts, unpackRow } from './packed-rows.js';

/** The inserts of `tuple` into `columns` of table t: one row, and `per` rows with INSERT OR FAIL (as audit-sql.ts makes them). */
function inserts(db: Database.Database, columns: string, tuple: string, per: number, remainder?: 'together' | 'one by one'): RowInserts {
  return new RowInserts(db, `INSERT INTO t ${columns} VALUES ${tuple}`, `INSERT OR FAIL INTO t ${columns} VALUES ${Array(per).fill(tuple).join(', ')}`, per, {
    remainder,
  });
}

describe('packed audit rows', () => {
  it('as a view of their chunk (batchView) are the same batch as the copy (batchMessage), runs or not', () => {
    const packer = new AuditRowPacker();
    const rows = Array.from({ length: 40 }, (_, i) => packer.pack([`id-${i}`, 0, i % 3 ? 'é ✓' : null], 1, 'x'.repeat(i % 5 === 4 ? 400_000 : i * 97)));
    // Rows of more than one chunk: the 400 KB bodies fill them.
    expect(new Set(rows.map((r) => r.buf)).size).toBeGreaterThan(2);
    const slices = [rows.slice(0, 1), rows.slice(1, 2), rows.slice(2, 5), rows, [...rows.slice(5, 8), ...rows.slice(0, 2)], [rows[3]!, rows[3]!]];
    const perRow = (b: { bytes: Buffer; meta: Uint32Array }) =>
      Array.from({ length: b.meta.length / 3 }, (_, i) => [
        b.bytes.subarray(b.meta[3 * i]!, b.meta[3 * i + 1]!).toString('hex'),
        b.bytes.subarray(b.meta[3 * i + 1]!, b.meta[3 * i + 2]!).toString('latin1'),
      ]);
    for (const batch of slices) {
      const copy = batchMessage(batch);
      const view = batchView(batch);
      // The same bytes (what the chain's link signs) and the same rows in them.
      expect(view.bytes.equals(copy.bytes)).toBe(true);
      expect(perRow(view)).toEqual(perRow(copy));
      expect(Array.from(view.meta)).toEqual(Array.from(copy.meta));
    }
    // A lone row, or a run, is not copied: the view shares its chunk's memory.
    expect(batchView(rows.slice(2, 5)).bytes.buffer).toBe(rows[2]!.buf.buffer);
  });

  it('round-trip through a batch across chunks, runs and multi-row statements, any text and number', () => {
    const packer = new AuditRowPacker();
    const bodies = ['plain', 'é ✓ 日本 😀', '"quoted" \\ \n', 'x'.repeat(700_000), '\u0000nul', 'lone \ud800 surrogate'];
    const texts = ['', 'ascii', 'ü', '日本 😀', '\u007f\u0080', 'a\u0000b', 'lone \udc00'];
    const numbers = [0, -0, 1.5, -12345678, 2 ** 53 + 2, 1e300, Number.MIN_VALUE, 1796044479064.25];
    const rows = Array.from({ length: 75 }, (_, i) => {
      const body = bodies[i % bodies.length] as string;
      const values = [`id-${i}`, 'body slot', numbers[i % numbers.length], i % 2 ? null : texts[i % texts.length]];
      return { values, body, row: packer.pack(values, 1, body) };
    });
    // UTF-8 cannot hold a lone surrogate: it is stored as U+FFFD, as SQLite's own binding of a string does.
    const wellFormed = (v: unknown): unknown => (typeof v === 'string' ? (v as unknown as { toWellFormed(): string }).toWellFormed() : v);
    // Rows from more than one chunk (the 700 KB bodies fill them), and out of order: several runs.
    expect(new Set(rows.map((r) => r.row.buf)).size).toBeGreaterThan(3);
    const order = [...rows.slice(40), ...rows.slice(0, 40)];
    for (const r of order) {
      const back = unpackRow(r.row);
      expect(back).toEqual([r.values[0], wellFormed(r.body), r.values[2], wellFormed(r.values[3])]);
      expect(Object.is(back[2], r.values[2])).toBe(true);
    }

    const { bytes, meta } = batchMessage(order.map((r) => r.row));
    const expected = order.map((r) => [r.values[0], wellFormed(r.body), r.values[2] === 0 ? 0 : r.values[2], wellFormed(r.values[3]), 'text']);
    // 75 rows: nine full statements of 8, then 3 rows together or, the reference, one by one.
    for (const remainder of ['together', 'one by one'] as const) {
      const db = new Database(':memory:');
      db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT NOT NULL, body TEXT NOT NULL, x REAL, y TEXT)');
      const rowInserts = inserts(db, '(id, body, x, y)', '(?, CAST(? AS TEXT), ?, ?)', 8, remainder);
      expect(rowInserts.forRows(3) === undefined).toBe(remainder === 'one by one');
      db.transaction(() => insertPackedRows(rowInserts, bytes, meta))();
      const stored = db.prepare('SELECT id, body, x, y, typeof(body) AS t FROM t ORDER BY n').all() as {
        id: string;
        body: string;
        x: number;
        y: string | null;
        t: string;
      }[];
      expect(stored.map((s) => [s.id, s.body, s.x, s.y, s.t])).toEqual(expected);
      db.close();
    }
  });

  it('inserts every count of rows, with chain places, the same way together as one by one', () => {
    const packer = new AuditRowPacker();
    const rows = Array.from({ length: 21 }, (_, i) => packer.pack([`id-${i}`, 0, i % 3 ? `y-${i}` : null], 1, `{"i":${i}}`));
    const stored = (remainder: 'together' | 'one by one', count: number, chainPos: number | null | undefined) => {
      const db = new Database(':memory:');
      db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT NOT NULL, body TEXT NOT NULL, y TEXT, pos INTEGER)');
      const rowInserts =
        chainPos === undefined
          ? inserts(db, '(id, body, y)', '(?, CAST(? AS TEXT), ?)', 5, remainder)
          : inserts(db, '(id, body, y, pos)', '(?, CAST(? AS TEXT), ?, ?)', 5, remainder);
      const { bytes, meta } = batchMessage(rows.slice(0, count));
      db.transaction(() => insertPackedRows(rowInserts, bytes, meta, chainPos))();
      const out = db.prepare('SELECT id, body, y, pos FROM t ORDER BY n').all();
      db.close();
      return out;
    };
    for (let count = 1; count <= rows.length; count++) {
      for (const chainPos of [undefined, null, 1000]) {
        const reference = stored('one by one', count, chainPos);
        expect(reference).toHaveLength(count);
        expect(reference.at(-1)).toEqual({
          id: `id-${count - 1}`,
          body: `{"i":${count - 1}}`,
          y: (count - 1) % 3 ? `y-${count - 1}` : null,
          pos: chainPos === 1000 ? 1000 + count - 1 : null,
        });
        expect(stored('together', count, chainPos)).toEqual(reference);
      }
    }
  });

  it('inserts the rest one by one when the multi-row SQL is not equal row tuples after VALUES', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (id TEXT, body TEXT)');
    const odd = new RowInserts(db, 'INSERT INTO t VALUES (?, ?)', "INSERT OR FAIL INTO t VALUES (?, ?), (?, 'x')", 2);
    expect(odd.forRows(2)).toBe(odd.many);
    expect(odd.forRows(1)).toBeUndefined();
    const three = new RowInserts(db, 'INSERT INTO t VALUES (?, ?)', 'INSERT OR FAIL INTO t VALUES (?, ?), (?, ?), (?, ?)', 3);
    expect(three.forRows(2)?.source).toBe('INSERT OR FAIL INTO t VALUES (?, ?), (?, ?)');
    expect(three.forRows(2)).toBe(three.forRows(2));
    const wrongCount = new RowInserts(db, 'INSERT INTO t VALUES (?, ?)', 'INSERT OR FAIL INTO t VALUES (?, ?), (?, ?), (?, ?)', 4);
    expect(wrongCount.forRows(2)).toBeUndefined();
    db.close();
  });

  it('binds text as UTF-8 bytes (textAsBytes) into the same TEXT values as strings give, the reference', () => {
    const packer = new AuditRowPacker();
    const texts = ['', 'ascii', 'ü', '日本 😀', '\u007f\u0080', 'a\u0000b', 'lone \udc00', 'x'.repeat(70_000)];
    // A number under a TEXT column becomes the text the column's affinity makes of it, both ways.
    const values = [...texts, 7, 1.5, -0, 2 ** 53 + 2, null];
    const rows = values.map((v, i) =>
      packer.pack([v, 'body slot', i, i % 3 ? `k-${i}` : null], 1, `{"i":${i},"t":${JSON.stringify(texts[i % texts.length])}}`),
    );
    const { bytes, meta } = batchMessage(rows);
    const stored = (textAsBytes: boolean) => {
      const db = new Database(':memory:');
      db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, a TEXT, body TEXT NOT NULL, x REAL, y TEXT)');
      const rowInserts = inserts(db, '(a, body, x, y)', '(CAST(? AS TEXT), CAST(? AS TEXT), ?, CAST(? AS TEXT))', 4);
      db.transaction(() => insertPackedRows(rowInserts, bytes, meta, undefined, textAsBytes))();
      const out = db.prepare('SELECT a, typeof(a) AS ta, hex(a) AS ha, body, typeof(body) AS tb, x, y, typeof(y) AS ty FROM t ORDER BY n').all();
      db.close();
      return out;
    };
    const reference = stored(false);
    expect(stored(true)).toEqual(reference);
    expect(reference.map((r) => (r as { ta: string }).ta)).toEqual([...texts.map(() => 'text'), 'text', 'text', 'text', 'text', 'null']);
    expect((reference[3] as { a: string }).a).toBe('日本 😀');
    expect([(reference[8] as { a: string }).a, (reference[9] as { a: string }).a]).toEqual(['7.0', '1.5']); // packed numbers are doubles
  });

  it('stores undefined as null and refuses values a column cannot hold', () => {
    const packer = new AuditRowPacker();
    expect(unpackRow(packer.pack(['a', undefined, 'b'], 2, 'body'))).toEqual(['a', null, 'body']);
    for (const bad of [{}, [], true, 10n, () => 1, Symbol('s')]) {
      let error: unknown;
      try {
        packer.pack(['a', bad], 0, 'body');
      } catch (e) {
        error = e;
      }
      expect(isToolEnvelopeError(error, 'invalid-option')).toBe(true);
    }
  });

  it('fails a batch as a whole when one row of a multi-row statement is refused', () => {
    const packer = new AuditRowPacker();
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT NOT NULL)');
    const rowInserts = inserts(db, '(id, body)', '(?, CAST(? AS TEXT))', 4);
    // The refused row in a full statement, alone after one, and in a statement of the rows after one.
    for (const ids of [
      ['a', 'b', 'c', 'a', 'e'],
      ['a', 'b', 'c', 'd', 'a'],
      ['a', 'b', 'c', 'd', 'e', 'a', 'f'],
      ['a', 'b', 'a'],
    ]) {
      const { bytes, meta } = batchMessage(ids.map((id) => packer.pack([id, 0], 1, `body ${id}`)));
      expect(() => db.transaction(() => insertPackedRows(rowInserts, bytes, meta))()).toThrow(/UNIQUE/);
      expect(db.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 0 });
    }
    db.close();
  });
});
