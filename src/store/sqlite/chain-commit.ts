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
    chainLink: (h: unknown, c: unknown, k: KeyObject, w: number, p: string, f: number, b: Buffer, m: Uint32Array) => { mac: string; digests: string; lastN: number };
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
