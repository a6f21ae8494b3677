/**
 * Committing a batch of audit rows as one link of the writer's chain (see `../chain.ts`), on
 * SQLite: registers the writer with its first batch, inserts the rows with their places, the link
 * and the signed head, all in the caller's transaction.
 *
 * The audit worker runs {@link commitChained} (its source is sent along with the worker's), so it
 * refers to nothing outside itself: what it needs comes in `deps`.
 *
 * @example
 * ```ts
 * const next = db.transaction(() => commitChained(stmts, state, 32, bytes, meta, deps)).immediate();
 * ```
 */
import type { createHmac, KeyObject } from 'node:crypto';
import type Database from 'better-sqlite3';
import { linkFromRow, writerFromRow, type ChainReader } from '../chain.js';
import { AuditRowPacker, type PackedRow } from './packed-rows.js';

/**
 * SQL of the chain statements, prepared on each connection that commits audit batches.
 *
 * @example
 * ```ts
 * const addLink = db.prepare(CHAIN_SQL.addLink);
 * ```
 */
export const CHAIN_SQL = {
  addWriter: "INSERT INTO audit_writers (key_id, created_at, mac, head_n, head_mac, head_sig) VALUES (?, ?, '', 0, '', '')",
  signWriter: 'UPDATE audit_writers SET mac = ? WHERE writer = ?',
  addLink: 'INSERT INTO audit_chain (writer, first_n, last_n, digests, mac) VALUES (?, ?, ?, ?, ?)',
  setHead: 'UPDATE audit_writers SET head_n = ?, head_mac = ?, head_sig = ? WHERE writer = ?',
} as const;

/** Prepared statements: the two row inserts and {@link CHAIN_SQL}. */
export interface ChainStatements {
  one: unknown;
  many: unknown;
  addWriter: { run(...a: unknown[]): { lastInsertRowid: number | bigint } };
  signWriter: { run(...a: unknown[]): unknown };
  addLink: { run(...a: unknown[]): unknown };
  setHead: { run(...a: unknown[]): unknown };
}

/** The functions {@link commitChained} calls (passed in so that it stands alone). */
export interface ChainDeps {
  hmac: typeof createHmac;
  crc: ((data: Uint8Array) => number) | undefined;
  chainLink: (...a: never[]) => { mac: string; digests: string; lastN: number };
  chainSign: (...a: never[]) => string;
  insertPackedRows: (...a: never[]) => void;
}

/**
 * Inserts a batch as one link and returns the writer's next state (standalone; call it in a
 * transaction, and keep the state it returns only once that committed).
 *
 * @example
 * ```ts
 * state = { ...state, ...db.transaction(() => commitChained(stmts, state, 32, bytes, meta, deps)).immediate() };
 * ```
 */
export function commitChained(
  st: ChainStatements,
  state: { key: KeyObject; keyId: string; writer: number; n: number; prev: string },
  perStatement: number,
  bytes: Buffer,
  meta: Uint32Array,
  deps: ChainDeps,
): { writer: number; n: number; prev: string } {
  const d = deps as unknown as {
    hmac: typeof createHmac;
    crc: ((data: Uint8Array) => number) | undefined;
    chainLink: (
      h: unknown,
      c: unknown,
      k: KeyObject,
      w: number,
      p: string,
      f: number,
      b: Buffer,
      m: Uint32Array,
    ) => { mac: string; digests: string; lastN: number };
    chainSign: (h: unknown, k: KeyObject, t: string) => string;
    insertPackedRows: (one: unknown, many: unknown, per: number, b: Buffer, m: Uint32Array, pos: number | null) => void;
  };
  let writer = state.writer;
  let prev = state.prev;
  if (writer === 0) {
    // Registered with its first batch: a writer that never wrote leaves nothing behind.
    const createdAt = Date.now();
    writer = Number(st.addWriter.run(state.keyId, createdAt).lastInsertRowid);
    prev = d.chainSign(d.hmac, state.key, `writer|${writer}|${state.keyId}|${createdAt}`);
    st.signWriter.run(prev, writer);
  }
  const link = d.chainLink(d.hmac, d.crc, state.key, writer, prev, state.n, bytes, meta);
  d.insertPackedRows(st.one, st.many, perStatement, bytes, meta, writer * 4294967296 + state.n);
  st.addLink.run(writer, state.n, link.lastN, link.digests, link.mac);
  st.setHead.run(link.lastN, link.mac, d.chainSign(d.hmac, state.key, `head|${writer}|${link.lastN}|${link.mac}`), writer);
  return { writer, n: link.lastN + 1, prev: link.mac };
}

/**
 * The chain reader of a SQLite store: `columns` are the packed row's columns (the body at `bodyIndex`).
 *
 * @example
 * ```ts
 * const report = await verifyAuditChain(sqliteChainReader(db, columns, bodyIndex), key);
 * ```
 */
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
