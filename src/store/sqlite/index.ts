/**
 * The SQLite store (`tool-envelope/store/sqlite`): the embedded default. One file, WAL journal,
 * `better-sqlite3` 12. Several processes may share one file: writes serialise on SQLite's lock
 * (with a busy timeout) and idempotency claims are unique inserts.
 *
 * Durability: with WAL and `synchronous=NORMAL` (the default here) a committed transaction is in
 * the WAL file, so it survives the process being killed (SIGKILL); only an OS crash or power
 * loss can drop the last transactions. Use `synchronous: 'FULL'` to survive those too.
 */
import { accessSync, constants } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { type JsonObject, ToolEnvelopeError } from 'tool-envelope/core';
import { assertOpen, storeFailure } from '../guards.js';
import { auditByIdSql, auditWhere, decodeCursor, encodeCursor, iterateByPages, pageLimit, toolCallKey, toolCallKeys } from '../query.js';
import { startRetention } from '../retention.js';
import { APPROVAL_COLUMNS, approvalFromRow, approvalRowValues, auditFromRow, auditFromValues, auditRowValues, idempotencyFromRow } from '../rows.js';
import { computeStats } from '../stats.js';
import { cellFromRow, type HistogramCell, histogramSql } from '../audit-histogram.js';
import { type AuditRollupStep, sqlNumber } from '../audit-rollup.js';
import { rollupReadSql, TAIL_READ_MAX, TAIL_SQL } from '../audit-rollup-read.js';
import { foldSqliteRollup, unrollSqlite } from './audit-rollup.js';
import type {
  ApprovalFilter,
  ApprovalRequest,
  ApprovalState,
  AuditFilter,
  HistogramOptions,
  AuditListResult,
  AuditPage,
  AuditRecord,
  IdempotencyClaim,
  IdempotencyRecord,
  PruneResult,
  RetentionOptions,
  Store,
  ToolAuditStats,
} from '../types.js';
import type { PreparedAuditSink } from '../audit-writer.js';
import { ensurePrivateFile, warnIfLoose } from '../private-file.js';
import { chainStateFor, type ChainReader, type ChainState } from '../chain.js';
import { SqliteAuditWorker } from './audit-worker.js';
import { CommitsHere, HERE_MAX_BYTES, HERE_MAX_ROWS } from './commit-here.js';
import { commitChained, prepareChainSql, type ChainStatements } from './chain-commit.js';
import { sqliteChainReader } from './chain-reader.js';
import {
  AUDIT_ROWS_PER_STATEMENT,
  auditCommitPages,
  bindsTextAsBytes,
  BODY_INDEX,
  CHECKPOINT_EVERY_KIB,
  INSERT_AUDIT_MANY_SQL,
  INSERT_AUDIT_SQL,
  NEW_FILE_PAGE_SIZE,
  PACKED_COLUMNS,
  WAL_AUTOCHECKPOINT_PAGES,
  WAL_FALLBACK_CHECKPOINT_PAGES,
} from './audit-sql.js';
import { migrateSqlite, whileBusy } from './migrations.js';
import type { SqliteStoreOptions } from './options.js';
import { sqliteApprovalVotes } from './approval-votes.js';
import { sqliteBudgets } from './budgets.js';
import { sqliteConsoleOidcFlows } from './console-oidc-flows.js';
import { sqliteConsoleSessions } from './console-sessions.js';
import { sqliteConsoleSignInFailures } from './console-sign-in-failures.js';
import { sqliteCallFeed } from './call-feed.js';
import { sqliteTaskHandles } from './task-handles.js';
import { AuditRowPacker, batchMessage, batchView, insertPackedRows, RowInserts, unpackRow, type PackedRow } from './packed-rows.js';

/** How long a writability probe waits for another writer's lock (on the calling thread) before it says not writable. */
const WRITABLE_PROBE_BUSY_MS = 250;

const where = (filter: AuditFilter): { sql: string; params: unknown[] } => auditWhere(filter, () => '?', 1, toolCallKeys);

class SqliteStoreImpl implements Store, PreparedAuditSink {
  readonly kind = 'sqlite' as const;
  private closed = false;
  private stopRetention: () => void = () => {};
  private readonly stmts;
  readonly taskHandles;
  readonly budgets;
  readonly consoleSessions;
  readonly consoleOidcFlows;
  readonly consoleSignInFailures;
  readonly approvalVotes;
  readonly callFeed;

  private worker: SqliteAuditWorker | undefined;
  /** Small batches callers wait on, committed on this thread (see commit-here.ts); not under the reference. */
  private here: CommitsHere | undefined;
  private readonly packer = new AuditRowPacker();
  /** This process's chain (when a chain key was given); the worker keeps its own. */
  chain: ChainState | undefined;
  private chainStmts: ChainStatements | undefined;
  /** Strings bound as UTF-8 bytes (see audit-sql.ts), as chosen when the store opened. */
  private readonly textAsBytes = bindsTextAsBytes();

  constructor(readonly db: Database.Database) {
    this.taskHandles = sqliteTaskHandles(db, () => assertOpen(this.closed, 'sqlite store'));
    this.budgets = sqliteBudgets(db, () => assertOpen(this.closed, 'sqlite store'));
    this.consoleSessions = sqliteConsoleSessions(db, () => assertOpen(this.closed, 'sqlite store'));
    this.consoleOidcFlows = sqliteConsoleOidcFlows(db, () => assertOpen(this.closed, 'sqlite store'));
    this.consoleSignInFailures = sqliteConsoleSignInFailures(db, () => assertOpen(this.closed, 'sqlite store'));
    this.approvalVotes = sqliteApprovalVotes(db, () => assertOpen(this.closed, 'sqlite store'));
    this.callFeed = sqliteCallFeed(db, () => assertOpen(this.closed, 'sqlite store'));
    this.stmts = {
      insertAudit: new RowInserts(db, INSERT_AUDIT_SQL, INSERT_AUDIT_MANY_SQL, AUDIT_ROWS_PER_STATEMENT),
      // The completing record when there is one, else the started record (read as interrupted).
      getAudit: db.prepare(auditByIdSql('?', '?')),
      claim: db.prepare(
        'INSERT INTO idempotency (key, fingerprint, tool, tool_call_id, state, claim_token, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING',
      ),
      getIdem: db.prepare('SELECT * FROM idempotency WHERE key = ?'),
      completeIdem: db.prepare("UPDATE idempotency SET state = 'done', outcome = ?, completed_at = ? WHERE key = ? AND claim_token = ? AND state = 'pending'"),
      releaseIdem: db.prepare("DELETE FROM idempotency WHERE key = ? AND claim_token = ? AND state = 'pending'"),
      probeWrite: db.prepare('UPDATE schema_migrations SET version = version WHERE 0'),
      insertApproval: db.prepare(`INSERT INTO approvals (${APPROVAL_COLUMNS.join(', ')}) VALUES (${APPROVAL_COLUMNS.map(() => '?').join(', ')})`),
      insertJoinedApproval: db.prepare(
        `INSERT INTO approvals (${APPROVAL_COLUMNS.join(', ')}, join_key) VALUES (${APPROVAL_COLUMNS.map(() => '?').join(', ')}, ?) ON CONFLICT DO NOTHING`,
      ),
      getApproval: db.prepare('SELECT * FROM approvals WHERE id = ?'),
      transition: db.prepare(
        `UPDATE approvals SET state = ?, decided_at = COALESCE(decided_at, ?),
           decided_by = CASE WHEN ? THEN ? ELSE decided_by END,
           decision_reason = CASE WHEN ? THEN ? ELSE decision_reason END,
           outcome = CASE WHEN ? THEN ? ELSE outcome END,
           decision_signature = CASE WHEN ? THEN ? ELSE decision_signature END
         WHERE id = ? AND state = ?`,
      ),
    };
  }

  startRetention(retention: RetentionOptions | undefined): void {
    this.stopRetention = startRetention(this, retention);
  }

  startChain(state: ChainState | undefined): void {
    this.chain = state;
    if (!state) return;
    this.chainStmts = { rows: this.stmts.insertAudit, ...prepareChainSql(this.db) };
  }

  /** What `audit verify` reads (see chain.ts). */
  chainReader(): ChainReader {
    return sqliteChainReader(this.db, PACKED_COLUMNS, BODY_INDEX);
  }

  startWorker(options: { path: string; synchronous: string; busyTimeoutMs: number }): void {
    // This connection's writes (idempotency, approvals) must not checkpoint on the calling thread either.
    this.db.pragma(`wal_autocheckpoint = ${WAL_FALLBACK_CHECKPOINT_PAGES}`);
    const commits = {
      insertSql: INSERT_AUDIT_SQL,
      insertManySql: INSERT_AUDIT_MANY_SQL,
      rowsPerStatement: AUDIT_ROWS_PER_STATEMENT,
      commitPages: auditCommitPages(this.db, this.chain !== undefined),
      chainColumn: true,
      textAsBytes: this.textAsBytes,
      checkpointEveryKiB: CHECKPOINT_EVERY_KIB,
      ...(this.chain && { chain: { key: this.chain.key, keyId: this.chain.keyId } }),
    };
    this.worker = new SqliteAuditWorker({
      ...options,
      ...commits,
      walAutocheckpoint: WAL_FALLBACK_CHECKPOINT_PAGES,
      restartWalAtFrames: WAL_AUTOCHECKPOINT_PAGES,
    });
    // Not under FULL: each commit then waits for fsync, which must not hold the calling thread.
    if (this.worker.merges && options.synchronous !== 'FULL') {
      try {
        this.here = new CommitsHere(options.path, options.synchronous, WAL_FALLBACK_CHECKPOINT_PAGES, commits, this.worker.checkpointShared);
      } catch {
        // Only a shortcut: without it the writer thread commits every batch.
      }
    }
  }

  private guard<T>(what: string, fn: () => T): T {
    assertOpen(this.closed, 'sqlite store');
    try {
      return fn();
    } catch (e) {
      throw storeFailure(`sqlite ${what} failed`, e);
    }
  }

  async schemaVersion(): Promise<number> {
    return this.guard('schemaVersion', () => (this.db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number }).v);
  }

  async appendAudit(records: readonly AuditRecord[]): Promise<void> {
    if (records.length === 0) return;
    // Validate and serialise before opening the transaction, so a bad record never leaves a half batch.
    return this.appendPreparedAudit(records.map((r) => this.prepareAudit(r)));
  }

  /** True while the writer thread merges the small batches queued at it (see {@link PreparedAuditSink.pipelined}). */
  get pipelined(): boolean {
    return this.worker?.alive === true && this.worker.merges;
  }

  /** The row of a record (validated, serialised, packed); see {@link PreparedAuditSink}. */
  prepareAudit(record: AuditRecord): PackedRow {
    const values = auditRowValues(record, (b) => (b ? 1 : 0));
    values.push(toolCallKey(record.toolCallId));
    return this.packer.pack(values, BODY_INDEX, values[BODY_INDEX] as string);
  }

  /** Commits rows made by {@link prepareAudit} in one transaction; `waited`: callers wait on it (see commit-here.ts). */
  async appendPreparedAudit(rows: readonly unknown[], options?: { waited?: boolean }): Promise<void> {
    if (rows.length === 0) return;
    assertOpen(this.closed, 'sqlite store');
    const packed = rows as readonly PackedRow[];
    if (this.worker?.alive) {
      const here = this.here;
      if (options?.waited === true && here && packed.length <= HERE_MAX_ROWS && this.worker.settled && here.usable) {
        const { bytes, meta } = batchView(packed);
        if (bytes.byteLength <= HERE_MAX_BYTES && this.guard('appendAudit', () => here.commit(bytes, meta))) return;
      }
      return this.worker.append(packed);
    }
    const { bytes, meta } = batchMessage(packed);
    const chain = this.chain;
    const stmts = this.chainStmts;
    if (chain && stmts) {
      const next = this.guard('appendAudit', () => this.db.transaction(() => commitChained(stmts, chain, bytes, meta, this.textAsBytes)).immediate());
      this.chain = { ...chain, ...next };
      return;
    }
    this.guard('appendAudit', () => this.db.transaction(() => insertPackedRows(this.stmts.insertAudit, bytes, meta, null, this.textAsBytes)).immediate());
  }

  /** The record a prepared row holds. */
  auditFromPrepared(row: unknown): AuditRecord {
    return auditFromValues(unpackRow(row as PackedRow));
  }

  async getAudit(id: string): Promise<AuditRecord | undefined> {
    return this.guard('getAudit', () => {
      const row = this.stmts.getAudit.get(id, id) as Record<string, unknown> | undefined;
      return row && auditFromRow(row);
    });
  }

  async listAudit(filter: AuditFilter = {}, page: AuditPage = {}): Promise<AuditListResult> {
    const limit = pageLimit(page.limit);
    const cursor = decodeCursor(page.cursor);
    const desc = page.order !== 'asc';
    return this.guard('listAudit', () => {
      const w = where(filter);
      let sql = `SELECT * FROM audit WHERE ${w.sql}`;
      const params = [...w.params];
      if (cursor !== undefined) {
        sql += desc ? ' AND seq < ?' : ' AND seq > ?';
        params.push(cursor);
      }
      sql += ` ORDER BY seq ${desc ? 'DESC' : 'ASC'} LIMIT ?`;
      params.push(limit + 1);
      const rows = this.db.prepare(sql).all(...params) as Record<string, unknown>[];
      const more = rows.length > limit;
      const records = rows.slice(0, limit).map(auditFromRow);
      const last = records[records.length - 1];
      return { records, nextCursor: more && last ? encodeCursor(last.seq as number) : null };
    });
  }

  iterateAudit(filter: AuditFilter = {}, batchSize = 500): AsyncIterable<AuditRecord> {
    return iterateByPages(this, filter, batchSize);
  }

  async countAudit(filter: AuditFilter = {}): Promise<number> {
    return this.guard('countAudit', () => {
      const w = where(filter);
      return (this.db.prepare(`SELECT COUNT(*) AS n FROM audit WHERE ${w.sql}`).get(...w.params) as { n: number }).n;
    });
  }

  async auditStats(filter: AuditFilter = {}): Promise<ToolAuditStats[]> {
    return this.guard('auditStats', () => {
      const w = where(filter);
      const rows = this.db
        .prepare(`SELECT tool, status, category, replay, latency_ms FROM audit WHERE ${w.sql}`)
        .raw()
        .iterate(...w.params) as IterableIterator<[string, never, never, number, number]>;
      return computeStats(
        (function* () {
          for (const [tool, status, category, replay, latencyMs] of rows) yield { tool, status, category, replay: replay === 1, latencyMs };
        })(),
      );
    });
  }

  async auditHistogram(filter: AuditFilter, bucketMs: number, options?: HistogramOptions): Promise<HistogramCell[]> {
    return this.guard('auditHistogram', () => {
      const rolled = options?.scan ? undefined : rollupReadSql('sqlite', filter, bucketMs, () => '?');
      if (rolled && Number((this.db.prepare(TAIL_SQL).get() as { tail: number }).tail) <= TAIL_READ_MAX)
        return (this.db.prepare(rolled.sql).all(...rolled.params) as Record<string, unknown>[]).map(cellFromRow);
      const w = where(filter);
      const rows = this.db.prepare(histogramSql('sqlite', w.sql, '?')).all(Math.max(1, Math.trunc(bucketMs)), ...w.params) as Record<string, unknown>[];
      return rows.map(cellFromRow);
    });
  }

  async rollUpAudit(maxRecords?: number): Promise<AuditRollupStep> {
    return this.guard('rollUpAudit', () => foldSqliteRollup(this.db, maxRecords));
  }

  async claimIdempotency(claim: Parameters<Store['claimIdempotency']>[0]): Promise<IdempotencyClaim> {
    return this.guard('claimIdempotency', () =>
      this.db
        .transaction((): IdempotencyClaim => {
          const info = this.stmts.claim.run(claim.key, claim.fingerprint, claim.tool, claim.toolCallId, 'pending', claim.claimToken, claim.createdAt);
          if (info.changes === 1) return { claimed: true };
          return { claimed: false, existing: idempotencyFromRow(this.stmts.getIdem.get(claim.key) as Record<string, unknown>) };
        })
        .immediate(),
    );
  }

  async completeIdempotency(key: string, claimToken: string, outcome: JsonObject, completedAt: number): Promise<boolean> {
    const text = JSON.stringify(outcome);
    return this.guard('completeIdempotency', () => this.stmts.completeIdem.run(text, completedAt, key, claimToken).changes === 1);
  }

  async releaseIdempotency(key: string, claimToken: string): Promise<boolean> {
    return this.guard('releaseIdempotency', () => this.stmts.releaseIdem.run(key, claimToken).changes === 1);
  }

  async getIdempotency(key: string): Promise<IdempotencyRecord | undefined> {
    return this.guard('getIdempotency', () => {
      const row = this.stmts.getIdem.get(key) as Record<string, unknown> | undefined;
      return row && idempotencyFromRow(row);
    });
  }

  /** The synchronous replay lookup (no promise hop); used by the benchmark and hot paths. */
  getIdempotencySync(key: string): IdempotencyRecord | undefined {
    const row = this.stmts.getIdem.get(key) as Record<string, unknown> | undefined;
    return row && idempotencyFromRow(row);
  }

  async createApproval(request: ApprovalRequest, options: { joinKey?: string } = {}): Promise<boolean> {
    const row = approvalRowValues(request);
    const { joinKey } = options;
    if (joinKey === undefined) {
      this.guard('createApproval', () => this.stmts.insertApproval.run(row));
      return true;
    }
    return this.guard('createApproval', () => this.stmts.insertJoinedApproval.run(...row, joinKey).changes === 1);
  }

  async getApproval(id: string): Promise<ApprovalRequest | undefined> {
    return this.guard('getApproval', () => {
      const row = this.stmts.getApproval.get(id) as Record<string, unknown> | undefined;
      return row && approvalFromRow(row);
    });
  }

  async listApprovals(filter: ApprovalFilter = {}): Promise<{ approvals: ApprovalRequest[]; nextCursor: string | null }> {
    const limit = pageLimit(filter.limit);
    const cursor = decodeCursor(filter.cursor);
    return this.guard('listApprovals', () => {
      const parts: string[] = [];
      const params: unknown[] = [];
      if (filter.state !== undefined) {
        const states = Array.isArray(filter.state) ? filter.state : [filter.state];
        parts.push(states.length ? `state IN (${states.map(() => '?').join(', ')})` : '1=0');
        params.push(...states);
      }
      if (filter.tool !== undefined) parts.push('tool = ?'), params.push(filter.tool);
      if (filter.sessionId !== undefined) parts.push('session_id = ?'), params.push(filter.sessionId);
      if (cursor !== undefined) parts.push('seq < ?'), params.push(cursor);
      const rows = this.db
        .prepare(`SELECT * FROM approvals WHERE ${parts.length ? parts.join(' AND ') : '1=1'} ORDER BY seq DESC LIMIT ?`)
        .all(...params, limit + 1) as Record<string, unknown>[];
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return { approvals: page.map(approvalFromRow), nextCursor: rows.length > limit && last ? encodeCursor(Number(last.seq)) : null };
    });
  }

  async transitionApproval(
    id: string,
    from: ApprovalState,
    to: ApprovalState,
    change: { at: number; by?: string | null; reason?: string | null; outcome?: JsonObject | null; signature?: string | null },
  ): Promise<ApprovalRequest | undefined> {
    const outcome = change.outcome === undefined || change.outcome === null ? null : JSON.stringify(change.outcome);
    return this.guard('transitionApproval', () =>
      this.db
        .transaction(() => {
          const info = this.stmts.transition.run(
            to,
            change.at,
            change.by !== undefined ? 1 : 0,
            change.by ?? null,
            change.reason !== undefined ? 1 : 0,
            change.reason ?? null,
            change.outcome !== undefined ? 1 : 0,
            outcome,
            change.signature !== undefined ? 1 : 0,
            change.signature ?? null,
            id,
            from,
          );
          if (info.changes !== 1) return undefined;
          return approvalFromRow(this.stmts.getApproval.get(id) as Record<string, unknown>);
        })
        .immediate(),
    );
  }

  async prune(options?: RetentionOptions, now = Date.now()): Promise<PruneResult> {
    const result: PruneResult = { audit: 0, idempotency: 0, approvals: 0 };
    if (!options) return result;
    return this.guard('prune', () =>
      this.db
        .transaction(() => {
          if (options.maxAgeMs !== undefined) {
            const gone = `started_at < ${sqlNumber(now - options.maxAgeMs)}`;
            unrollSqlite(this.db, gone);
            result.audit += this.db.prepare(`DELETE FROM audit WHERE ${gone}`).run().changes;
            result.approvals += this.db
              .prepare("DELETE FROM approvals WHERE state NOT IN ('pending', 'approved') AND created_at < ?")
              .run(now - options.maxAgeMs).changes;
          }
          if (options.maxRecords !== undefined) {
            const cut = this.db.prepare('SELECT seq FROM audit ORDER BY seq DESC LIMIT 1 OFFSET ?').pluck().get(options.maxRecords) as number | undefined;
            if (cut !== undefined) {
              unrollSqlite(this.db, `seq <= ${sqlNumber(cut)}`);
              result.audit += this.db.prepare('DELETE FROM audit WHERE seq <= ?').run(cut).changes;
            }
          }
          const idemAge = options.idempotencyMaxAgeMs ?? options.maxAgeMs;
          if (idemAge !== undefined) {
            result.idempotency += this.db
              .prepare("DELETE FROM idempotency WHERE state = 'done' AND COALESCE(completed_at, created_at) < ?")
              .run(now - idemAge).changes;
          }
          return result;
        })
        .immediate(),
    );
  }

  async checkWritable(): Promise<void> {
    // Any write statement opens a write transaction first, even one matching no row: a read-only
    // file fails here. Another writer's lock is waited for at most a moment (this thread blocks).
    this.guard('checkWritable', () => {
      const timeout = this.db.pragma('busy_timeout', { simple: true }) as number;
      this.db.pragma(`busy_timeout = ${Math.min(timeout, WRITABLE_PROBE_BUSY_MS)}`);
      try {
        this.stmts.probeWrite.run();
      } finally {
        this.db.pragma(`busy_timeout = ${timeout}`);
      }
    });
  }

  /** Runs `PRAGMA integrity_check`; `'ok'` when the file is consistent. */
  integrityCheck(): string {
    return this.guard('integrityCheck', () => this.db.pragma('integrity_check', { simple: true }) as string);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopRetention();
    await this.worker?.close();
    this.here?.close();
    this.db.close();
  }
}

/** The SQLite store type, with two extras over {@link Store}: a synchronous replay lookup and an integrity check. */
export type SqliteStore = Store & {
  readonly kind: 'sqlite';
  chainReader(): ChainReader;
  readonly db: Database.Database;
  getIdempotencySync(key: string): IdempotencyRecord | undefined;
  integrityCheck(): string;
};

/**
 * Opens (creating when missing) a SQLite store and runs pending schema migrations.
 *
 * @example
 * ```ts
 * const store = await openSqliteStore({ path: './tool-envelope.db' });
 * console.log(await store.schemaVersion());
 * await store.close();
 * ```
 */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<SqliteStore> {
  if (typeof options?.path !== 'string' || options.path === '') {
    throw new ToolEnvelopeError('invalid-option', 'openSqliteStore: `path` must be a non-empty string');
  }
  const sync = options.synchronous ?? 'NORMAL';
  if (sync !== 'NORMAL' && sync !== 'FULL') throw new ToolEnvelopeError('invalid-option', `synchronous must be NORMAL or FULL, got ${String(sync)}`);
  let db: Database.Database | undefined;
  const busyTimeoutMs = options.busyTimeoutMs ?? 10_000;
  const inMemory = options.path === ':memory:' || options.path.startsWith('file::memory:') || /[?&]mode=memory/.test(options.path);
  try {
    // Created 0600 before SQLite opens it: SQLite gives the -wal and -shm files the database's mode.
    if (!inMemory && !options.path.startsWith('file:')) {
      ensurePrivateFile(options.path, options.onLooseFile);
      warnIfLoose([`${options.path}-wal`, `${options.path}-shm`], options.onLooseFile);
    }
    db = new Database(options.path, { timeout: busyTimeoutMs });
    const conn = db;
    const deadline = Date.now() + busyTimeoutMs;
    // Switching a new file to WAL needs its exclusive lock, and SQLite answers SQLITE_BUSY at once
    // (no busy handler) when another process opening it at the same moment holds a shared lock.
    await whileBusy(deadline, () => {
      // Takes effect only when the file is created (before WAL is switched on); a no-op afterwards.
      conn.pragma(`page_size = ${NEW_FILE_PAGE_SIZE}`);
      conn.pragma('journal_mode = WAL');
    });
    db.pragma(`synchronous = ${sync}`);
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    await whileBusy(deadline, () => migrateSqlite(conn));
    const store = new SqliteStoreImpl(db);
    store.startChain(await chainStateFor(options.chainKey));
    if (options.auditWorker !== false && !inMemory) {
      store.startWorker({ path: options.path, synchronous: sync, busyTimeoutMs });
    }
    store.startRetention(options.retention);
    return store as SqliteStore;
  } catch (e) {
    db?.close();
    throw storeFailure(`cannot open SQLite store at ${options.path}${inMemory ? '' : unwritableDirectoryHint(options.path, e)}`, e);
  }
}

/**
 * Why a file that can be written is still "a readonly database": SQLite keeps its `-wal` and `-shm`
 * files beside it, and a reader needs them too, so the directory must be writable (as the file's
 * owner). SQLite's own message names only the database.
 */
function unwritableDirectoryHint(file: string, e: unknown): string {
  if (!/readonly database|unable to open/i.test((e as Error)?.message ?? '')) return '';
  const dir = dirname(resolve(file.replace(/^file:/, '').replace(/\?.*$/, '')));
  try {
    accessSync(dir, constants.W_OK);
    return '';
  } catch {
    return ` (its directory ${dir} is not writable by this user: SQLite writes its -wal and -shm files beside the database, to read it as well as to write it)`;
  }
}

export { SQLITE_MIGRATIONS } from './migrations.js';
export type { SqliteStoreOptions } from './options.js';
