/**
 * Audit commits on the calling thread for small batches a caller waits on, sparing two thread
 * hand-offs. Only while the writer thread has nothing in flight (commits stay in order), on a
 * connection that never waits for a lock (a held lock sends the batch to the writer thread), and never
 * under fsync (`synchronous: 'FULL'`, a WAL restart). Reference: `useReferenceAuditCommits(true)`.
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
