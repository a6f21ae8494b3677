import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { AuditRowPacker, batchMessage, insertPackedRows, unpackRow } from './packed-rows.js';

describe('packed audit rows', () => {
  it('round-trip through a batch across chunks, runs and multi-row statements, any text', () => {
    const packer = new AuditRowPacker();
    const bodies = ['plain', 'é ✓ 日本 😀', '"quoted" \\ \n', 'x'.repeat(700_000), '\u0000nul', 'lone \ud800 surrogate'];
    const rows = Array.from({ length: 75 }, (_, i) => {
      const body = bodies[i % bodies.length] as string;
      return { values: [`id-${i}`, 0, i * 1.5, i % 2 ? null : 'ü'], body, row: packer.pack(JSON.stringify([`id-${i}`, 0, i * 1.5, i % 2 ? null : 'ü']), body) };
    });
    // Rows from more than one chunk (the 700 KB bodies fill them), and out of order: several runs.
    expect(new Set(rows.map((r) => r.row.buf)).size).toBeGreaterThan(3);
    const order = [...rows.slice(40), ...rows.slice(0, 40)];
    for (const r of order) expect(unpackRow(r.row, 1)).toEqual([r.values[0], r.body.replace('\ud800', '\ufffd'), r.values[2], r.values[3]]);

    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT NOT NULL, body TEXT NOT NULL, x REAL, y TEXT)');
    const cols = '(?, CAST(? AS TEXT), ?, ?)';
    const one = db.prepare(`INSERT INTO t (id, body, x, y) VALUES ${cols}`);
    const many = db.prepare(`INSERT OR FAIL INTO t (id, body, x, y) VALUES ${Array(8).fill(cols).join(', ')}`);
    const { bytes, meta } = batchMessage(order.map((r) => r.row));
    db.transaction(() => insertPackedRows(one, many, 8, bytes, meta, 1))();
    const stored = db.prepare('SELECT id, body, x, y, typeof(body) AS t FROM t ORDER BY n').all() as { id: string; body: string; x: number; y: string | null; t: string }[];
    expect(stored.map((s) => s.id)).toEqual(order.map((r) => r.values[0]));
    expect(stored.map((s) => s.body)).toEqual(order.map((r) => r.body.replace('\ud800', '\ufffd')));
    expect(stored.map((s) => [s.x, s.y, s.t])).toEqual(order.map((r) => [r.values[2], r.values[3], 'text']));
    db.close();
  });

  it('fails a batch as a whole when one row of a multi-row statement is refused', () => {
    const packer = new AuditRowPacker();
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT NOT NULL)');
    const one = db.prepare('INSERT INTO t VALUES (?, CAST(? AS TEXT))');
    const many = db.prepare(`INSERT OR FAIL INTO t VALUES ${Array(4).fill('(?, CAST(? AS TEXT))').join(', ')}`);
    const rows = ['a', 'b', 'c', 'a', 'e'].map((id) => packer.pack(JSON.stringify([id, 0]), `body ${id}`));
    const { bytes, meta } = batchMessage(rows);
    expect(() => db.transaction(() => insertPackedRows(one, many, 4, bytes, meta, 1))()).toThrow(/UNIQUE/);
    expect(db.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 0 });
    db.close();
  });
});
