import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { isToolEnvelopeError } from '../../core/index.js';
import { AuditRowPacker, batchMessage, insertPackedRows, unpackRow } from './packed-rows.js';

describe('packed audit rows', () => {
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

    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT NOT NULL, body TEXT NOT NULL, x REAL, y TEXT)');
    const cols = '(?, CAST(? AS TEXT), ?, ?)';
    const one = db.prepare(`INSERT INTO t (id, body, x, y) VALUES ${cols}`);
    const many = db.prepare(`INSERT OR FAIL INTO t (id, body, x, y) VALUES ${Array(8).fill(cols).join(', ')}`);
    const { bytes, meta } = batchMessage(order.map((r) => r.row));
    db.transaction(() => insertPackedRows(one, many, 8, bytes, meta))();
    const stored = db.prepare('SELECT id, body, x, y, typeof(body) AS t FROM t ORDER BY n').all() as {
      id: string;
      body: string;
      x: number;
      y: string | null;
      t: string;
    }[];
    expect(stored.map((s) => s.id)).toEqual(order.map((r) => r.values[0]));
    expect(stored.map((s) => s.body)).toEqual(order.map((r) => wellFormed(r.body)));
    expect(stored.map((s) => [s.x, s.y, s.t])).toEqual(order.map((r) => [r.values[2] === 0 ? 0 : r.values[2], wellFormed(r.values[3]), 'text']));
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
      const cols = '(CAST(? AS TEXT), CAST(? AS TEXT), ?, CAST(? AS TEXT))';
      const one = db.prepare(`INSERT INTO t (a, body, x, y) VALUES ${cols}`);
      const many = db.prepare(`INSERT OR FAIL INTO t (a, body, x, y) VALUES ${Array(4).fill(cols).join(', ')}`);
      db.transaction(() => insertPackedRows(one, many, 4, bytes, meta, undefined, textAsBytes))();
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
    const one = db.prepare('INSERT INTO t VALUES (?, CAST(? AS TEXT))');
    const many = db.prepare(`INSERT OR FAIL INTO t VALUES ${Array(4).fill('(?, CAST(? AS TEXT))').join(', ')}`);
    const rows = ['a', 'b', 'c', 'a', 'e'].map((id) => packer.pack([id, 0], 1, `body ${id}`));
    const { bytes, meta } = batchMessage(rows);
    expect(() => db.transaction(() => insertPackedRows(one, many, 4, bytes, meta))()).toThrow(/UNIQUE/);
    expect(db.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 0 });
    db.close();
  });
});
