/**
 * One connection's audit commits: a batch of packed rows in one IMMEDIATE transaction (a link of
 * the connection's own hash chain when there is a chain key), and the bookkeeping the WAL's
 * checkpointer needs from every writer (the KiB each commit added to the WAL, and starting the WAL
 * over when the checkpointer asks). Used by the SQLite writer thread (audit-thread.ts) and, for
 * the small batches callers wait on, by the calling thread (index.ts). Shared state: CHECKPOINT
 * and RESTART in audit-protocol.ts.
 */
import type Database from 'better-sqlite3';
import { CHECKPOINT, RESTART, type AuditThreadData } from './audit-protocol.js';
import { commitChained, prepareChainSql, type ChainPosition } from './chain-commit.js';
import { insertPackedRows, RowInserts } from './packed-format.js';

/** What a committer needs of the writer settings (see {@link AuditThreadData}). */
export type AuditCommitData = Pick<
  AuditThreadData,
  'insertSql' | 'insertManySql' | 'rowsPerStatement' | 'chain' | 'chainColumn' | 'textAsBytes' | 'commitPages' | 'checkpointEveryKiB'
>;

/** Commits audit batches on one connection and keeps the checkpointer's shared state. */
export class AuditCommitter {
  private readonly tx: { immediate(bytes: Buffer, meta: Uint32Array): ChainPosition | undefined };
  private readonly chain: (ChainPosition & { key: NonNullable<AuditThreadData['chain']>['key']; keyId: string }) | undefined;
  /**
   * What a commit adds to the WAL besides its rows: every page it touched is written whole (about
   * ten pages for the audit table, its indexes and the chain), so a small batch writes many
   * times its rows' bytes. Counting rows alone, the gateway's small commits grew the WAL to the
   * connections' own checkpoint bound (128 MiB) before the checkpointer ever ran, and the writer
   * then ran the checkpoint itself, fsyncs included, with calls waiting on its commits.
   */
  private readonly commitKiB: number;
  private readonly everyKiB: number;

  constructor(
    private readonly db: Database.Database,
    data: AuditCommitData,
    private readonly shared: Int32Array | undefined,
  ) {
    const rows = new RowInserts(db, data.insertSql, data.insertManySql, data.rowsPerStatement);
    this.chain = data.chain ? { key: data.chain.key, keyId: data.chain.keyId, writer: 0, n: 1, prev: '' } : undefined;
    const chainStmts = this.chain && { rows, ...prepareChainSql(db) };
    const noChainPos = data.chainColumn ? null : undefined;
    const chain = this.chain;
    this.tx = db.transaction((bytes: Buffer, meta: Uint32Array): ChainPosition | undefined => {
      if (chain && chainStmts) return commitChained(chainStmts, chain, bytes, meta, data.textAsBytes);
      insertPackedRows(rows, bytes, meta, noChainPos, data.textAsBytes);
      return undefined;
    });
    this.commitKiB = ((data.commitPages ?? 0) * (db.pragma('page_size', { simple: true }) as number)) >> 10;
    this.everyKiB = data.checkpointEveryKiB ?? 0;
  }

  /**
   * True while starting the WAL over is under way: the checkpointer waits for a writer to copy the
   * WAL's last frames ({@link afterCommit}), or the next commit starts the WAL over (which syncs its
   * new header). Either waits for fsync.
   */
  get restarting(): boolean {
    return this.shared !== undefined && Atomics.load(this.shared, CHECKPOINT.RESTART) !== RESTART.NONE;
  }

  /** Commits the rows in one IMMEDIATE transaction (the chain advances only once it committed); throws when it failed. */
  commit(bytes: Buffer, meta: Uint32Array): void {
    const next = this.tx.immediate(bytes, meta);
    if (this.chain && next) Object.assign(this.chain, next);
    const shared = this.shared;
    if (!shared) return;
    const added = ((bytes.byteLength + 1023) >> 10) + this.commitKiB;
    const kib = (Atomics.add(shared, CHECKPOINT.KIB, added) + added) | 0;
    // Woken only with a checkpoint to run: a wake-up per commit cost the checkpointer thread about
    // as much CPU as a small commit's own writes, to find nothing to do and sleep again.
    if (((kib - Atomics.load(shared, CHECKPOINT.LAST)) | 0) >= this.everyKiB) Atomics.notify(shared, CHECKPOINT.KIB);
    // DONE: this transaction started the WAL over, so the checkpointer may go on.
    if (Atomics.load(shared, CHECKPOINT.RESTART) === RESTART.DONE) {
      Atomics.store(shared, CHECKPOINT.RESTART, RESTART.NONE);
      // The checkpointer held its checkpoints while the WAL started over: it may have one due.
      Atomics.notify(shared, CHECKPOINT.KIB);
    }
  }

  /**
   * Starting the WAL over, when the checkpointer asked (it copied all but the last batches of a
   * WAL grown past its size): the rest is copied here by a PASSIVE checkpoint, which waits for
   * fsync, so it runs only where nobody waits on it (the writer thread, after its
   * acknowledgement). SQLite starts the WAL over only for a writer that begins with every frame
   * copied: the next commit then does (see {@link commit}).
   */
  afterCommit(): void {
    const shared = this.shared;
    if (!shared || Atomics.load(shared, CHECKPOINT.RESTART) !== RESTART.ASKED) return;
    const r = (this.db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[])[0];
    // Asked again after the next batch until a checkpoint copied everything.
    if (r && r.busy === 0 && r.checkpointed === r.log) Atomics.store(shared, CHECKPOINT.RESTART, RESTART.DONE);
  }
}
