/**
 * Committing a batch of audit rows as one link of the writer's chain (see `../chain.ts`), on
 * SQLite: registers the writer with its first batch, inserts the rows with their places, the link
 * and the signed head, all in the caller's transaction. Both the SQLite audit writer thread
 * (audit-thread.ts) and the store's own connection commit through it.
 */
import { createHmac, type KeyObject } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import { chainLink, chainSign, crc32 } from '../chain-link.js';
import { insertPackedRows, type RowInserts } from './packed-format.js';

/** SQL of the chain statements, prepared on each connection that commits audit batches. */
export const CHAIN_SQL = {
  addWriter: "INSERT INTO audit_writers (key_id, created_at, mac, head_n, head_mac, head_sig) VALUES (?, ?, '', 0, '', '')",
  signWriter: 'UPDATE audit_writers SET mac = ? WHERE writer = ?',
  addLink: 'INSERT INTO audit_chain (writer, first_n, last_n, digests, mac) VALUES (?, ?, ?, ?, ?)',
  setHead: 'UPDATE audit_writers SET head_n = ?, head_mac = ?, head_sig = ? WHERE writer = ?',
} as const;

/** Prepared statements: the row inserts of `insertPackedRows` and {@link CHAIN_SQL}. */
export interface ChainStatements {
  rows: RowInserts;
  addWriter: Statement;
  signWriter: Statement;
  addLink: Statement;
  setHead: Statement;
}

/** The {@link CHAIN_SQL} statements prepared on a connection. */
export function prepareChainSql(db: { prepare(sql: string): Statement }): Omit<ChainStatements, 'rows'> {
  return {
    addWriter: db.prepare(CHAIN_SQL.addWriter),
    signWriter: db.prepare(CHAIN_SQL.signWriter),
    addLink: db.prepare(CHAIN_SQL.addLink),
    setHead: db.prepare(CHAIN_SQL.setHead),
  };
}

/** A writer's place in its chain: which writer (0 until registered), the next n, the last mac. */
export interface ChainPosition {
  writer: number;
  n: number;
  prev: string;
}

/**
 * Inserts a batch as one link and returns the writer's next position (call it in a transaction,
 * and keep the position it returns only once that committed). `textAsBytes`: as `insertPackedRows`'s.
 */
export function commitChained(
  st: ChainStatements,
  state: ChainPosition & { key: KeyObject; keyId: string },
  bytes: Buffer,
  meta: Uint32Array,
  textAsBytes = false,
): ChainPosition {
  let writer = state.writer;
  let prev = state.prev;
  if (writer === 0) {
    // Registered with its first batch: a writer that never wrote leaves nothing behind.
    const createdAt = Date.now();
    writer = Number(st.addWriter.run(state.keyId, createdAt).lastInsertRowid);
    prev = chainSign(createHmac, state.key, `writer|${writer}|${state.keyId}|${createdAt}`);
    st.signWriter.run(prev, writer);
  }
  const link = chainLink(createHmac, crc32, state.key, writer, prev, state.n, bytes, meta);
  insertPackedRows(st.rows, bytes, meta, writer * 4294967296 + state.n, textAsBytes);
  st.addLink.run(writer, state.n, link.lastN, link.digests, link.mac);
  st.setHead.run(link.lastN, link.mac, chainSign(createHmac, state.key, `head|${writer}|${link.lastN}|${link.mac}`), writer);
  return { writer, n: link.lastN + 1, prev: link.mac };
}
