/**
 * What `audit verify` reads from a SQLite store (see `../chain.ts`): its writers, links and
 * records in chain order, each record re-packed exactly as it was when its link was signed.
 */
import type Database from 'better-sqlite3';
import { linkFromRow, writerFromRow, type ChainReader } from '../chain.js';
import { AuditRowPacker, type PackedRow } from './packed-rows.js';

/** The chain reader of a SQLite store: `columns` are the packed row's columns (the body at `bodyIndex`). */
export function sqliteChainReader(db: Database.Database, columns: readonly string[], bodyIndex: number): ChainReader {
  return {
    origin: async () => (db.prepare('SELECT MAX(seq) AS s FROM audit_chain_origin').get() as { s: number | null }).s ?? 0,
    writers: async () => (db.prepare('SELECT * FROM audit_writers ORDER BY writer').all() as Record<string, unknown>[]).map(writerFromRow),
    links: async () => (db.prepare('SELECT * FROM audit_chain ORDER BY writer, first_n').all() as Record<string, unknown>[]).map(linkFromRow),
    async *unchained() {
      for (const r of db.prepare('SELECT seq, id FROM audit WHERE chain_pos IS NULL ORDER BY seq').iterate() as IterableIterator<{ seq: number; id: string }>)
        yield r;
    },
    async *chained(): AsyncIterable<{ seq: number; id: string; pos: number; row: PackedRow }> {
      const packer = new AuditRowPacker();
      const stmt = db.prepare(`SELECT seq, chain_pos, ${columns.join(', ')} FROM audit WHERE chain_pos IS NOT NULL ORDER BY chain_pos, seq`).raw();
      for (const r of stmt.iterate() as IterableIterator<unknown[]>) {
        const values = r.slice(2);
        // The row exactly as it was packed when written: the bytes its link signed.
        yield { seq: Number(r[0]), id: String(values[0]), pos: Number(r[1]), row: packer.pack(values, bodyIndex, String(values[bodyIndex])) };
      }
    },
  };
}
