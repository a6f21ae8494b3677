/**
 * The audit hash chain on PostgreSQL (see `../chain.ts`): a batch committed as one link of this
 * process's chain, and the reader `audit verify` walks. A record's canonical bytes are its column
 * values packed as the SQLite store packs them (numbers as numbers, `replay` as 0/1, the body as
 * the exact JSON text stored), so both stores sign the same way.
 */
import { createHmac } from 'node:crypto';
import type pg from 'pg';
import { chainLink, chainSign, crc32, linkFromRow, writerFromRow, type ChainReader, type ChainState } from '../chain.js';
import { AUDIT_COLUMNS } from '../audit-columns.js';
import { AuditRowPacker, batchMessage, type PackedRow } from '../sqlite/packed-rows.js';

const BODY = AUDIT_COLUMNS.indexOf('body');
const NUMERIC = new Set(['started_at', 'ended_at', 'latency_ms'].map((c) => AUDIT_COLUMNS.indexOf(c as (typeof AUDIT_COLUMNS)[number])));
const REPLAY = AUDIT_COLUMNS.indexOf('replay');

/** The canonical packed row of column values in `AUDIT_COLUMNS` order (as inserted or as read back). */
export function canonicalRow(packer: AuditRowPacker, values: readonly unknown[]): PackedRow {
  const norm = values.map((v, i) => {
    if (i === REPLAY) return v === true || v === 1 || v === 't' ? 1 : 0;
    if (NUMERIC.has(i)) return Number(v);
    return v ?? null;
  });
  const body = values[BODY];
  return packer.pack(norm, BODY, typeof body === 'string' ? body : JSON.stringify(body));
}

/**
 * Inserts rows (values in `AUDIT_COLUMNS` order) as one link inside the client's open
 * transaction; returns the writer's next state (keep it only once the transaction committed).
 */
export async function appendChained(
  c: pg.PoolClient,
  state: ChainState,
  rows: readonly unknown[][],
  insert: (c: pg.PoolClient, rows: unknown[][]) => Promise<void>,
): Promise<ChainState> {
  let { writer, prev } = state;
  if (writer === 0) {
    const createdAt = Date.now();
    const r = await c.query("INSERT INTO audit_writers (key_id, created_at, mac, head_n, head_mac, head_sig) VALUES ($1, $2, '', 0, '', '') RETURNING writer", [
      state.keyId,
      createdAt,
    ]);
    writer = Number(r.rows[0].writer);
    prev = chainSign(createHmac, state.key, `writer|${writer}|${state.keyId}|${createdAt}`);
    await c.query('UPDATE audit_writers SET mac = $1 WHERE writer = $2', [prev, writer]);
  }
  const packer = new AuditRowPacker();
  const { bytes, meta } = batchMessage(rows.map((v) => canonicalRow(packer, v)));
  const link = chainLink(createHmac, crc32, state.key, writer, prev, state.n, bytes, meta);
  const base = writer * 4294967296 + state.n;
  await insert(
    c,
    rows.map((v, i) => [...v, base + i]),
  );
  await c.query('INSERT INTO audit_chain (writer, first_n, last_n, digests, mac) VALUES ($1, $2, $3, $4, $5)', [
    writer,
    state.n,
    link.lastN,
    link.digests,
    link.mac,
  ]);
  await c.query('UPDATE audit_writers SET head_n = $1, head_mac = $2, head_sig = $3 WHERE writer = $4', [
    link.lastN,
    link.mac,
    chainSign(createHmac, state.key, `head|${writer}|${link.lastN}|${link.mac}`),
    writer,
  ]);
  return { ...state, writer, n: link.lastN + 1, prev: link.mac };
}

const PAGE = 1000;
const SELECT = `seq, chain_pos, ${AUDIT_COLUMNS.map((c) => (c === 'body' ? 'body::text AS body' : c)).join(', ')}`;

/** The chain reader of a PostgreSQL store (pages of 1 000 records, keyset-paged). */
export function pgChainReader(pool: pg.Pool): ChainReader {
  return {
    origin: async () => Number((await pool.query('SELECT MAX(seq) AS s FROM audit_chain_origin')).rows[0]?.s ?? 0),
    writers: async () => (await pool.query('SELECT * FROM audit_writers ORDER BY writer')).rows.map(writerFromRow),
    links: async () => (await pool.query('SELECT * FROM audit_chain ORDER BY writer, first_n')).rows.map(linkFromRow),
    async *unchained() {
      let after = 0;
      for (;;) {
        const { rows } = await pool.query('SELECT seq, id FROM audit WHERE chain_pos IS NULL AND seq > $1 ORDER BY seq LIMIT $2', [after, PAGE]);
        for (const r of rows) yield { seq: Number(r.seq), id: String(r.id) };
        if (rows.length < PAGE) return;
        after = Number(rows[rows.length - 1].seq);
      }
    },
    async *chained() {
      const packer = new AuditRowPacker();
      let at: [number, number] = [-1, 0];
      for (;;) {
        const { rows } = await pool.query(
          `SELECT ${SELECT} FROM audit WHERE chain_pos IS NOT NULL AND (chain_pos, seq) > ($1, $2) ORDER BY chain_pos, seq LIMIT $3`,
          [at[0], at[1], PAGE],
        );
        for (const r of rows) {
          yield {
            seq: Number(r.seq),
            id: String(r.id),
            pos: Number(r.chain_pos),
            row: canonicalRow(
              packer,
              AUDIT_COLUMNS.map((c) => r[c]),
            ),
          };
        }
        if (rows.length < PAGE) return;
        const last = rows[rows.length - 1];
        at = [Number(last.chain_pos), Number(last.seq)];
      }
    },
  };
}
