/**
 * The audit hash chain: proof that no record was edited, deleted or inserted behind the store's back.
 * Each writing process has a chain of its own; each committed batch is one link, an HMAC (key derived
 * from the operator key) over the rows as stored, written in the batch's transaction; the signed head
 * catches a cut-off tail. Link and signature functions: chain-link.ts (the SQLite writer thread uses them).
 */
import { createHmac, type KeyObject } from 'node:crypto';
import { chainLink, chainSign, crc32 } from './chain-link.js';
import { loadOperatorKey, type OperatorKey } from './operator-key.js';
import { batchMessage, type PackedRow } from './sqlite/packed-rows.js';

export { chainLink, chainSign, crc32 } from './chain-link.js';

/** The purpose the chain key is derived for (`operatorKey.derive(CHAIN_PURPOSE)`). */
export const CHAIN_PURPOSE = 'audit-chain/v1';

/** Places per writer in `chain_pos` (writer × WRITER_SPAN + n). */
export const WRITER_SPAN = 4294967296;

/** A writer's chain state: which writer (0 until registered in the store), the next n, the last mac. */
export interface ChainState {
  key: KeyObject;
  keyId: string;
  writer: number;
  n: number;
  prev: string;
}

/** A writer as the store holds it. */
export interface ChainWriterRow {
  writer: number;
  keyId: string;
  createdAt: number;
  mac: string;
  headN: number;
  headMac: string;
  headSig: string;
}

/** A writer from its table row (SQLite and PostgreSQL alike). */
export function writerFromRow(w: Record<string, unknown>): ChainWriterRow {
  return {
    writer: Number(w.writer),
    keyId: String(w.key_id),
    createdAt: Number(w.created_at),
    mac: String(w.mac),
    headN: Number(w.head_n),
    headMac: String(w.head_mac),
    headSig: String(w.head_sig),
  };
}

/** A link from its table row (SQLite and PostgreSQL alike). */
export function linkFromRow(l: Record<string, unknown>): ChainLinkRow {
  return { writer: Number(l.writer), firstN: Number(l.first_n), lastN: Number(l.last_n), digests: String(l.digests), mac: String(l.mac) };
}

/** A link as the store holds it. */
export interface ChainLinkRow {
  writer: number;
  firstN: number;
  lastN: number;
  digests: string;
  mac: string;
}

/** What {@link verifyAuditChain} reads from a store. */
export interface ChainReader {
  /** The highest seq written before the chain existed (those records cannot be verified). */
  origin(): Promise<number>;
  writers(): Promise<ChainWriterRow[]>;
  /** Every link, ordered by writer and first place. */
  links(): Promise<ChainLinkRow[]>;
  /** The records without a place (seq and id). */
  unchained(): AsyncIterable<{ seq: number; id: string }>;
  /** The records with a place, ordered by place then seq, each with its canonical packed row. */
  chained(): AsyncIterable<{ seq: number; id: string; pos: number; row: PackedRow }>;
}

/** One finding of {@link verifyAuditChain}. */
export interface ChainProblem {
  kind: 'edited' | 'deleted' | 'inserted' | 'writer';
  detail: string;
  seq?: number;
  id?: string;
  writer?: number;
  n?: number;
}

/** The result of {@link verifyAuditChain}: `ok` when nothing was found. */
export interface ChainReport {
  ok: boolean;
  /** Records whose link checked out. */
  verified: number;
  /** Records written before the chain existed: neither verified nor suspect. */
  unverifiable: number;
  writers: number;
  problems: ChainProblem[];
}

/** Problems reported at most (the rest are counted). */
const MAX_PROBLEMS = 1000;
/** Records of one link held at once while checking it: a forged link cannot claim more. */
const MAX_LINK_ROWS = 100_000;

/**
 * Checks every record of a store against its writers' chains, in one pass over the records in
 * chain order. A record placed in no link, or unchained but written after the chain began, is
 * `inserted`; a place missing from a link is `deleted` (so is a missing link, or a tail cut off
 * before the signed head); a link whose mac does not match is `edited`, naming the records whose
 * digest changed.
 *
 * @example
 * ```ts
 * const operatorKey = await loadOperatorKey({ file: './operator.key' });
 * const report = await verifyAuditChain(reader, operatorKey.derive(CHAIN_PURPOSE));
 * ```
 */
export async function verifyAuditChain(reader: ChainReader, key: KeyObject): Promise<ChainReport> {
  const problems: ChainProblem[] = [];
  let dropped = 0;
  const problem = (p: ChainProblem): void => {
    if (problems.length < MAX_PROBLEMS) problems.push(p);
    else dropped++;
  };
  const origin = await reader.origin();
  const writers = new Map<number, ChainWriterRow>();
  for (const w of await reader.writers()) {
    if (w.mac !== chainSign(createHmac, key, `writer|${w.writer}|${w.keyId}|${w.createdAt}`)) {
      problem({ kind: 'writer', writer: w.writer, detail: `writer ${w.writer}: its registration is not signed by this key (key ${w.keyId}), or was edited` });
      continue;
    }
    if (w.headSig !== chainSign(createHmac, key, `head|${w.writer}|${w.headN}|${w.headMac}`)) {
      problem({ kind: 'writer', writer: w.writer, detail: `writer ${w.writer}: its head (last record ${w.headN}) is not signed by this key, or was edited` });
    }
    writers.set(w.writer, w);
  }
  const links = (await reader.links()).filter((l) => writers.has(l.writer));

  let unverifiable = 0;
  for await (const r of reader.unchained()) {
    if (r.seq <= origin) unverifiable++;
    else problem({ kind: 'inserted', seq: r.seq, id: r.id, detail: `record ${r.id} (seq ${r.seq}) is in no writer's chain` });
  }

  let verified = 0;
  const prevOf = new Map<number, { mac: string; next: number }>();
  const check = (l: ChainLinkRow, rows: { seq: number; id: string; pos: number; row: PackedRow }[]): void => {
    const base = l.writer * WRITER_SPAN;
    const w = writers.get(l.writer) as ChainWriterRow;
    const before = prevOf.get(l.writer) ?? { mac: w.mac, next: 1 };
    let prev = before.mac;
    if (l.firstN !== before.next) {
      problem({
        kind: 'deleted',
        writer: l.writer,
        n: before.next,
        detail: `writer ${l.writer}: records ${before.next}..${l.firstN - 1} and their link are missing`,
      });
      prev = '';
    }
    prevOf.set(l.writer, { mac: l.mac, next: l.lastN + 1 });
    const have = new Set(rows.map((r) => r.pos - base));
    for (let n = l.firstN; n <= l.lastN && n - l.firstN < MAX_LINK_ROWS; n++) {
      if (!have.has(n))
        problem({
          kind: 'deleted',
          writer: l.writer,
          n,
          detail: `writer ${l.writer}: record ${n} is missing (its link holds records ${l.firstN}..${l.lastN})`,
        });
    }
    // Which records changed: their digests no longer match the signed ones (also in a link with gaps).
    let named = 0;
    if (crc32 && l.digests.length === 8 * (l.lastN - l.firstN + 1)) {
      for (const r of rows) {
        const at = r.pos - base - l.firstN;
        const digest = (crc32(r.row.buf.subarray(r.row.s, r.row.e)) >>> 0).toString(16).padStart(8, '0');
        if (digest === l.digests.slice(8 * at, 8 * at + 8)) continue;
        named++;
        problem({
          kind: 'edited',
          seq: r.seq,
          id: r.id,
          writer: l.writer,
          n: r.pos - base,
          detail: `record ${r.id} (seq ${r.seq}) was changed after it was written`,
        });
      }
    }
    if (rows.length !== l.lastN - l.firstN + 1) return;
    const { bytes, meta } = batchMessage(rows.map((r) => r.row));
    if (chainLink(createHmac, crc32, key, l.writer, prev, l.firstN, bytes, meta, l.digests).mac === l.mac) {
      if (named === 0) verified += rows.length;
      return;
    }
    if (named === 0 && prev !== '') {
      problem({
        kind: 'edited',
        writer: l.writer,
        n: l.firstN,
        detail: `writer ${l.writer}: the link of records ${l.firstN}..${l.lastN} does not match its records (the link was altered)`,
      });
    }
  };

  let i = 0;
  let current: { seq: number; id: string; pos: number; row: PackedRow }[] = [];
  const end = (l: ChainLinkRow): number => l.writer * WRITER_SPAN + l.lastN;
  const start = (l: ChainLinkRow): number => l.writer * WRITER_SPAN + l.firstN;
  for await (const r of reader.chained()) {
    while (i < links.length && end(links[i]!) < r.pos) {
      check(links[i]!, current);
      current = [];
      i++;
    }
    const l = links[i];
    if (!l || r.pos < start(l)) {
      const writer = Math.floor(r.pos / WRITER_SPAN);
      problem({
        kind: 'inserted',
        seq: r.seq,
        id: r.id,
        writer,
        n: r.pos - writer * WRITER_SPAN,
        detail: `record ${r.id} (seq ${r.seq}) claims a place no signed link holds`,
      });
    } else if (current.length > 0 && current[current.length - 1]!.pos === r.pos) {
      problem({
        kind: 'inserted',
        seq: r.seq,
        id: r.id,
        writer: l.writer,
        n: r.pos - l.writer * WRITER_SPAN,
        detail: `record ${r.id} (seq ${r.seq}) duplicates the place of another record`,
      });
    } else if (current.length < MAX_LINK_ROWS) current.push(r);
  }
  for (; i < links.length; i++) {
    check(links[i]!, current);
    current = [];
  }
  for (const [writer, w] of writers) {
    const at = prevOf.get(writer) ?? { mac: w.mac, next: 1 };
    if (w.headN > at.next - 1)
      problem({ kind: 'deleted', writer, n: at.next, detail: `writer ${writer}: records ${at.next}..${w.headN} (the end of its chain) are missing` });
    else if (w.headN > 0 && w.headMac !== at.mac) problem({ kind: 'edited', writer, detail: `writer ${writer}: its last link is not the one its head signed` });
  }
  if (dropped > 0) problems.push({ kind: 'edited', detail: `... and ${dropped} more problems` });
  return { ok: problems.length === 0, verified, unverifiable, writers: writers.size, problems };
}

/**
 * The chain state of a new writer: of the given operator key, else of `loadOperatorKey({ create:
 * true })`; `undefined` (no chain, with a warning when the key could not be loaded) otherwise.
 */
export async function chainStateFor(given: OperatorKey | false | undefined): Promise<ChainState | undefined> {
  if (given === false) return undefined;
  let key = given;
  if (!key) {
    try {
      key = await loadOperatorKey({ create: true });
    } catch (e) {
      process.emitWarning(`tool-envelope: the audit log is written without its hash chain (no operator key): ${(e as Error).message}`, 'ToolEnvelopeWarning');
      return undefined;
    }
  }
  return { key: key.derive(CHAIN_PURPOSE), keyId: key.id, writer: 0, n: 1, prev: '' };
}
