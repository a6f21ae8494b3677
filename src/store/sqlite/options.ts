/** The options of `openSqliteStore` (index.ts). */
import type { OperatorKey } from '../operator-key.js';
import type { LooseFileWarning } from '../private-file.js';
import type { RetentionOptions } from '../types.js';

export interface SqliteStoreOptions {
  /** Database file path (created when missing). `:memory:` gives a private in-memory database. */
  path: string;
  /** `NORMAL` (default: survives a killed process) or `FULL` (also survives power loss, slower). */
  synchronous?: 'NORMAL' | 'FULL';
  /** How long to wait for another process's lock, in ms (default 10 000). */
  busyTimeoutMs?: number;
  /** Retention applied on open and periodically. */
  retention?: RetentionOptions;
  /**
   * Commit audit batches on a worker thread with its own connection (default true for a file;
   * always false for `:memory:`). Keeps SQLite's insert work off the thread that serves calls,
   * except for the small batches callers wait on (`before-answer`), which a connection of the
   * calling thread commits when the write lock is free (see commit-here.ts).
   */
  auditWorker?: boolean;
  /** Called when the database, its WAL or its SHM file exists with group or other permission bits (default: a process warning). */
  onLooseFile?: LooseFileWarning;
  /**
   * The operator key that signs this writer's hash chain (see chain.ts), or `false` for no chain.
   * Default: `loadOperatorKey({ create: true })` (`TOOL_ENVELOPE_KEY`, else the key file, created
   * when missing); when that fails, records are written unchained, with a warning.
   */
  chainKey?: OperatorKey | false;
}
