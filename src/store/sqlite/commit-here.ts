/**
 * Audit commits on the calling thread, for the small batches callers wait on. Committing on the
 * writer thread costs such a batch two hand-offs between threads (the batch, then its
 * acknowledgement, each read by a thread only once it gets round to it) on top of the commit
 * itself; a caller waiting on the commit gains nothing from the writer thread working in
 * parallel. So a batch that is waited on, small ({@link HERE_MAX_ROWS} rows and
 * {@link HERE_MAX_BYTES} bytes, a few ms of SQLite work at most), handed over while the writer thread has nothing in flight (so commits stay in the
 * order they were handed over), is committed here, on a connection of its own that never waits
 * for a lock: when another connection holds the write lock (another process, a long transaction),
 * the batch goes to the writer thread after all, which waits for it there. Nothing that waits for
 * fsync runs here: not under `synchronous: 'FULL'` (index.ts does not start this then), and not
 * while the WAL is being started over ({@link CommitsHere.usable}).
 *
 * Pays for `gateway (audit commit)`, `stdio, SQLite: commit before answer, median latency, 32 in
 * flight` (and `one call at a time`); the reference (every batch to the writer thread) is chosen
 * with `useReferenceAuditCommits(true)` (audit-worker.ts), under which the store suite runs too.
 */
import Database from 'better-sqlite3';
import { AuditCommitter, type AuditCommitData } from './audit-commit.js';

/** The most rows a batch committed on the calling thread holds (about 2 ms of SQLite work here). */
export const HERE_MAX_ROWS = 64;
/** The most bytes of packed rows such a batch holds: a few big records are as much work as many small ones. */
export const HERE_MAX_BYTES = 256 * 1024;

/** A connection of the calling thread for audit commits (see the module's comment). */
export class CommitsHere {
  private readonly db: Database.Database;
  private readonly committer: AuditCommitter;
  /** Transactions committed here so far. */
  commits = 0;

  constructor(path: string, synchronous: string, walAutocheckpoint: number, data: AuditCommitData, shared: Int32Array | undefined) {
    // timeout 0: a held write lock answers SQLITE_BUSY at once instead of stalling the thread that serves calls.
    this.db = new Database(path, { timeout: 0 });
    try {
      this.db.pragma(`synchronous = ${synchronous}`);
      this.db.pragma(`wal_autocheckpoint = ${walAutocheckpoint}`);
      this.committer = new AuditCommitter(this.db, data, shared);
    } catch (e) {
      this.db.close();
      throw e;
    }
  }

  /**
   * False while the WAL is being started over: the copy of its last frames, and the commit that
   * then starts it over (SQLite syncs the new WAL header), wait for fsync, which is the writer
   * thread's to do, so batches go there until it has.
   */
  get usable(): boolean {
    return !this.committer.restarting;
  }

  /** Commits the rows in one transaction: true once committed, false when the write lock was held elsewhere (nothing written); throws on any other failure. */
  commit(bytes: Buffer, meta: Uint32Array): boolean {
    try {
      this.committer.commit(bytes, meta);
    } catch (e) {
      if (typeof (e as { code?: unknown })?.code === 'string' && (e as { code: string }).code.startsWith('SQLITE_BUSY')) return false;
      throw e;
    }
    this.commits++;
    return true;
  }

  close(): void {
    this.db.close();
  }
}
