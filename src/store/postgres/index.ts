/**
 * The PostgreSQL store (`tool-envelope/store/postgres`): one database shared by several processes
 * or machines, through a `pg` connection pool. Idempotency claims are unique inserts
 * (`ON CONFLICT DO NOTHING`), approval decisions are conditional updates, migrations run under a
 * transaction-scoped advisory lock so concurrent openers apply each version once.
 */
import pg from 'pg';
import { chainStateFor, type ChainReader, type ChainState } from '../chain.js';
import type { OperatorKey } from '../operator-key.js';
import { AUDIT_COLUMNS } from '../audit-columns.js';
import { appendChained, pgChainReader } from './chain.js';
import { type JsonObject, ToolEnvelopeError } from 'tool-envelope/core';
import { APPROVAL_COLUMNS, approvalFromRow, approvalRowValues, auditFromRow, auditFromValues, auditRowValues, idempotencyFromRow } from '../rows.js';
import { assertOpen, storeFailure } from '../guards.js';
import { auditByIdSql, auditWhere, decodeCursor, encodeCursor, iterateByPages, pageLimit } from '../query.js';
import { computeStats } from '../stats.js';
import { cellFromRow, type HistogramCell, histogramSql } from '../audit-histogram.js';
import { type AuditRollupStep, sqlNumber } from '../audit-rollup.js';
import { rollupReadSql, TAIL_READ_MAX, TAIL_SQL } from '../audit-rollup-read.js';
import { foldPostgresRollup, ROLLUP_SETTLE_MS, unrollPostgres } from './audit-rollup.js';
import { startRetention } from '../retention.js';
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
import { postgresApprovalVotes } from './approval-votes.js';
import { postgresBudgets } from './budgets.js';
import { postgresConsoleOidcFlows } from './console-oidc-flows.js';
import { postgresConsoleSessions } from './console-sessions.js';
import { postgresConsoleSignInFailures } from './console-sign-in-failures.js';
import { postgresCallFeed } from './call-feed.js';
import { postgresTaskHandles } from './task-handles.js';
import { POSTGRES_MIGRATIONS } from './migrations.js';

export interface PostgresStoreOptions {
  /** A `postgres://` URL. */
  connectionString: string;
  /** The schema holding the tables (created when missing; default `public`). */
  schema?: string;
  /** Pool size (default 10). */
  max?: number;
  /** Retention applied on open and periodically. */
  retention?: RetentionOptions;
  /** The operator key that signs this writer's hash chain, or `false` for none (default as `openSqliteStore`'s `chainKey`). */
  chainKey?: OperatorKey | false;
  /** How long the audit rollup's catch-up waits for a missing `seq` (a transaction not yet committed) before it takes it for a rolled-back one; default 30 s (postgres/audit-rollup.ts). */
  rollupSettleMs?: number;
}

const PH = (n: number): string => `$${n}`;
// Each row is its AUDIT_COLUMNS values and its place in the writer's chain (null without one).
const INSERT_COLUMNS = [...AUDIT_COLUMNS, 'chain_pos'];
const insertAuditSql = (rows: number): string =>
  `INSERT INTO audit (${INSERT_COLUMNS.join(', ')}) VALUES ${Array.from(
    { length: rows },
    (_, i) => `(${INSERT_COLUMNS.map((__, j) => PH(i * INSERT_COLUMNS.length + j + 1)).join(', ')})`,
  ).join(', ')}`;
// Rows per execution of the prepared insert (4 000 parameters; PostgreSQL allows 65 535). A/B on a
// throwaway server: 15-40% more audit records/s than one unprepared VALUES list per batch; an
// unnest of one array per column was 2x slower (pg escapes every array element in JS).
const AUDIT_ROWS_PER_PREPARED = 250;
const INSERT_AUDIT_PREPARED_SQL = insertAuditSql(AUDIT_ROWS_PER_PREPARED);
const INSERT_AUDIT_PREPARED_NAME = `te_audit_insert_${AUDIT_ROWS_PER_PREPARED}`;

class PgStoreImpl implements Store, PreparedAuditSink {
  readonly kind = 'postgres' as const;
  private closed = false;
  private stopRetention: () => void = () => {};

  /** This process's chain, when a chain key was given. */
  chain: ChainState | undefined;
  /** Links of one chain are committed one after another. */
  private chainTail: Promise<unknown> = Promise.resolve();

  readonly taskHandles = postgresTaskHandles((what, text, values) => this.q(what, text, values));
  readonly consoleSessions = postgresConsoleSessions((what, text, values) => this.q(what, text, values));
  readonly consoleOidcFlows = postgresConsoleOidcFlows((what, text, values) => this.q(what, text, values));
  readonly consoleSignInFailures = postgresConsoleSignInFailures((what, text, values) => this.q(what, text, values));
  readonly approvalVotes = postgresApprovalVotes((what, text, values) => this.q(what, text, values));
  readonly budgets = postgresBudgets(
    (what, text, values) => this.q(what, text, values),
    async () => {
      assertOpen(this.closed, 'postgres store');
      try {
        return await this.pool.connect();
      } catch (e) {
        throw storeFailure('postgres budget take failed to connect', e);
      }
    },
  );

  readonly callFeed;

  constructor(
    readonly pool: pg.Pool,
    private readonly schema = 'public',
    private readonly rollupSettleMs = ROLLUP_SETTLE_MS,
  ) {
    this.callFeed = postgresCallFeed(
      (what, text, values) => this.q(what, text, values),
      () => new pg.Client(pool.options as pg.ClientConfig),
      schema,
    );
  }

  /** What `audit verify` reads (see chain.ts). */
  chainReader(): ChainReader {
    return pgChainReader(this.pool);
  }

  startRetention(retention: RetentionOptions | undefined): void {
    this.stopRetention = startRetention(this, retention);
  }

  private async q(what: string, text: string, values: unknown[] = []): Promise<pg.QueryResult> {
    assertOpen(this.closed, 'postgres store');
    try {
      return await this.pool.query(text, values);
    } catch (e) {
      throw storeFailure(`postgres ${what} failed`, e);
    }
  }

  private async tx<T>(what: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    assertOpen(this.closed, 'postgres store');
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      throw storeFailure(`postgres ${what} failed to connect`, e);
    }
    try {
      await client.query('BEGIN');
      const out = await fn(client);
      await client.query('COMMIT');
      return out;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => {});
      throw storeFailure(`postgres ${what} failed`, e);
    } finally {
      client.release();
    }
  }

  async schemaVersion(): Promise<number> {
    const r = await this.q('schemaVersion', 'SELECT MAX(version) AS v FROM schema_migrations');
    return Number(r.rows[0]?.v ?? 0);
  }

  async appendAudit(records: readonly AuditRecord[]): Promise<void> {
    if (records.length === 0) return;
    return this.appendPreparedAudit(records.map((r) => this.prepareAudit(r)));
  }

  /** The row of a record (validated, serialised); see {@link PreparedAuditSink}. */
  prepareAudit(record: AuditRecord): unknown[] {
    return auditRowValues(record, (b) => b);
  }

  /** The record a prepared row holds. */
  auditFromPrepared(row: unknown): AuditRecord {
    return auditFromValues(row as unknown[]);
  }

  /** Commits rows made by {@link prepareAudit} in one transaction. */
  async appendPreparedAudit(prepared: readonly unknown[]): Promise<void> {
    if (prepared.length === 0) return;
    const rows = prepared as unknown[][];
    const insert = async (c: pg.PoolClient, all: unknown[][]): Promise<void> => {
      let start = 0;
      // Full chunks go through one named statement, parsed and planned once per connection.
      for (; start + AUDIT_ROWS_PER_PREPARED <= all.length; start += AUDIT_ROWS_PER_PREPARED) {
        await c.query({ name: INSERT_AUDIT_PREPARED_NAME, text: INSERT_AUDIT_PREPARED_SQL, values: all.slice(start, start + AUDIT_ROWS_PER_PREPARED).flat() });
      }
      if (start < all.length) await c.query(insertAuditSql(all.length - start), all.slice(start).flat());
    };
    if (!this.chain) {
      await this.tx('appendAudit', (c) =>
        insert(
          c,
          rows.map((r) => [...r, null]),
        ),
      );
      return;
    }
    const run = this.chainTail.then(async () => {
      const state = this.chain as ChainState;
      this.chain = await this.tx('appendAudit', (c) => appendChained(c, state, rows, insert));
    });
    this.chainTail = run.catch(() => {});
    await run;
  }

  async getAudit(id: string): Promise<AuditRecord | undefined> {
    // The completing record when there is one, else the started record (read as interrupted).
    const r = await this.q('getAudit', auditByIdSql('$1', '$1'), [id]);
    return r.rows[0] && auditFromRow(r.rows[0]);
  }

  async listAudit(filter: AuditFilter = {}, page: AuditPage = {}): Promise<AuditListResult> {
    const limit = pageLimit(page.limit);
    const cursor = decodeCursor(page.cursor);
    const desc = page.order !== 'asc';
    const where = auditWhere(filter, PH);
    const params = [...where.params];
    let sql = `SELECT * FROM audit WHERE ${where.sql}`;
    if (cursor !== undefined) {
      params.push(cursor);
      sql += ` AND seq ${desc ? '<' : '>'} $${params.length}`;
    }
    params.push(limit + 1);
    sql += ` ORDER BY seq ${desc ? 'DESC' : 'ASC'} LIMIT $${params.length}`;
    const r = await this.q('listAudit', sql, params);
    const more = r.rows.length > limit;
    const records = r.rows.slice(0, limit).map(auditFromRow);
    const last = records[records.length - 1];
    return { records, nextCursor: more && last ? encodeCursor(last.seq as number) : null };
  }

  iterateAudit(filter: AuditFilter = {}, batchSize = 500): AsyncIterable<AuditRecord> {
    return iterateByPages(this, filter, batchSize);
  }

  async countAudit(filter: AuditFilter = {}): Promise<number> {
    const where = auditWhere(filter, PH);
    const r = await this.q('countAudit', `SELECT COUNT(*) AS n FROM audit WHERE ${where.sql}`, where.params);
    return Number(r.rows[0]?.n ?? 0);
  }

  async auditStats(filter: AuditFilter = {}): Promise<ToolAuditStats[]> {
    const where = auditWhere(filter, PH);
    const r = await this.q('auditStats', `SELECT tool, status, category, replay, latency_ms FROM audit WHERE ${where.sql}`, where.params);
    return computeStats(
      r.rows.map((row) => ({ tool: row.tool, status: row.status, category: row.category, replay: row.replay === true, latencyMs: Number(row.latency_ms) })),
    );
  }

  async auditHistogram(filter: AuditFilter, bucketMs: number, options?: HistogramOptions): Promise<HistogramCell[]> {
    const rolled = options?.scan ? undefined : rollupReadSql('postgres', filter, bucketMs, PH);
    if (rolled && Number((await this.q('auditHistogram', TAIL_SQL)).rows[0].tail) <= TAIL_READ_MAX) {
      return (await this.q('auditHistogram', rolled.sql, rolled.params)).rows.map(cellFromRow);
    }
    const where = auditWhere(filter, PH, 2);
    const r = await this.q('auditHistogram', histogramSql('postgres', where.sql, '$1'), [Math.max(1, Math.trunc(bucketMs)), ...where.params]);
    return r.rows.map(cellFromRow);
  }

  async rollUpAudit(maxRecords?: number): Promise<AuditRollupStep> {
    return this.tx('rollUpAudit', (c) => foldPostgresRollup(c, this.schema, maxRecords, this.rollupSettleMs));
  }

  async claimIdempotency(claim: Parameters<Store['claimIdempotency']>[0]): Promise<IdempotencyClaim> {
    // The existing row can vanish between the failed insert and the read (its claimant released it); then try again.
    for (;;) {
      const ins = await this.q(
        'claimIdempotency',
        `INSERT INTO idempotency (key, fingerprint, tool, tool_call_id, state, claim_token, created_at)
         VALUES ($1, $2, $3, $4, 'pending', $5, $6) ON CONFLICT (key) DO NOTHING RETURNING key`,
        [claim.key, claim.fingerprint, claim.tool, claim.toolCallId, claim.claimToken, claim.createdAt],
      );
      if (ins.rowCount === 1) return { claimed: true };
      const existing = await this.getIdempotency(claim.key);
      if (existing) return { claimed: false, existing };
    }
  }

  async completeIdempotency(key: string, claimToken: string, outcome: JsonObject, completedAt: number): Promise<boolean> {
    const r = await this.q(
      'completeIdempotency',
      "UPDATE idempotency SET state = 'done', outcome = $1, completed_at = $2 WHERE key = $3 AND claim_token = $4 AND state = 'pending'",
      [JSON.stringify(outcome), completedAt, key, claimToken],
    );
    return r.rowCount === 1;
  }

  async releaseIdempotency(key: string, claimToken: string): Promise<boolean> {
    const r = await this.q('releaseIdempotency', "DELETE FROM idempotency WHERE key = $1 AND claim_token = $2 AND state = 'pending'", [key, claimToken]);
    return r.rowCount === 1;
  }

  async getIdempotency(key: string): Promise<IdempotencyRecord | undefined> {
    const r = await this.q('getIdempotency', 'SELECT * FROM idempotency WHERE key = $1', [key]);
    return r.rows[0] && idempotencyFromRow(r.rows[0]);
  }

  async createApproval(request: ApprovalRequest, options: { joinKey?: string } = {}): Promise<boolean> {
    const values = approvalRowValues(request);
    const { joinKey } = options;
    const columns = APPROVAL_COLUMNS.map((_, i) => PH(i + 1)).join(', ');
    if (joinKey === undefined) {
      await this.q('createApproval', `INSERT INTO approvals (${APPROVAL_COLUMNS.join(', ')}) VALUES (${columns})`, values);
      return true;
    }
    const r = await this.q(
      'createApproval',
      `INSERT INTO approvals (${APPROVAL_COLUMNS.join(', ')}, join_key) VALUES (${columns}, ${PH(APPROVAL_COLUMNS.length + 1)}) ON CONFLICT DO NOTHING`,
      [...values, joinKey],
    );
    return r.rowCount === 1;
  }

  async getApproval(id: string): Promise<ApprovalRequest | undefined> {
    const r = await this.q('getApproval', 'SELECT * FROM approvals WHERE id = $1', [id]);
    return r.rows[0] && approvalFromRow(r.rows[0]);
  }

  async listApprovals(filter: ApprovalFilter = {}): Promise<{ approvals: ApprovalRequest[]; nextCursor: string | null }> {
    const limit = pageLimit(filter.limit);
    const cursor = decodeCursor(filter.cursor);
    const parts: string[] = [];
    const params: unknown[] = [];
    const add = (v: unknown): string => (params.push(v), `$${params.length}`);
    if (filter.state !== undefined) {
      const states = Array.isArray(filter.state) ? filter.state : [filter.state];
      parts.push(states.length ? `state IN (${states.map(add).join(', ')})` : '1=0');
    }
    if (filter.tool !== undefined) parts.push(`tool = ${add(filter.tool)}`);
    if (filter.sessionId !== undefined) parts.push(`session_id = ${add(filter.sessionId)}`);
    if (cursor !== undefined) parts.push(`seq < ${add(cursor)}`);
    const sql = `SELECT * FROM approvals WHERE ${parts.length ? parts.join(' AND ') : '1=1'} ORDER BY seq DESC LIMIT ${add(limit + 1)}`;
    const r = await this.q('listApprovals', sql, params);
    const page = r.rows.slice(0, limit);
    const last = page[page.length - 1];
    return { approvals: page.map(approvalFromRow), nextCursor: r.rows.length > limit && last ? encodeCursor(Number(last.seq)) : null };
  }

  async transitionApproval(
    id: string,
    from: ApprovalState,
    to: ApprovalState,
    change: { at: number; by?: string | null; reason?: string | null; outcome?: JsonObject | null; signature?: string | null },
  ): Promise<ApprovalRequest | undefined> {
    const outcome = change.outcome === undefined || change.outcome === null ? null : JSON.stringify(change.outcome);
    const r = await this.q(
      'transitionApproval',
      `UPDATE approvals SET state = $1, decided_at = COALESCE(decided_at, $2),
         decided_by = CASE WHEN $3 THEN $4 ELSE decided_by END,
         decision_reason = CASE WHEN $5 THEN $6 ELSE decision_reason END,
         outcome = CASE WHEN $7 THEN $8::json ELSE outcome END,
         decision_signature = CASE WHEN $9 THEN $10 ELSE decision_signature END
       WHERE id = $11 AND state = $12 RETURNING *`,
      [
        to,
        change.at,
        change.by !== undefined,
        change.by ?? null,
        change.reason !== undefined,
        change.reason ?? null,
        change.outcome !== undefined,
        outcome,
        change.signature !== undefined,
        change.signature ?? null,
        id,
        from,
      ],
    );
    return r.rows[0] && approvalFromRow(r.rows[0]);
  }

  async prune(options?: RetentionOptions, now = Date.now()): Promise<PruneResult> {
    const result: PruneResult = { audit: 0, idempotency: 0, approvals: 0 };
    if (!options) return result;
    return this.tx('prune', async (c) => {
      if (options.maxAgeMs !== undefined) {
        const gone = `started_at < ${sqlNumber(now - options.maxAgeMs)}`;
        await unrollPostgres(c, this.schema, gone);
        result.audit += (await c.query(`DELETE FROM audit WHERE ${gone}`)).rowCount ?? 0;
        result.approvals +=
          (await c.query("DELETE FROM approvals WHERE state NOT IN ('pending', 'approved') AND created_at < $1", [now - options.maxAgeMs])).rowCount ?? 0;
      }
      if (options.maxRecords !== undefined) {
        const cut = (await c.query('SELECT seq FROM audit ORDER BY seq DESC LIMIT 1 OFFSET $1', [options.maxRecords])).rows[0]?.seq;
        if (cut !== undefined) {
          const gone = `seq <= ${sqlNumber(Number(cut))}`;
          await unrollPostgres(c, this.schema, gone);
          result.audit += (await c.query(`DELETE FROM audit WHERE ${gone}`)).rowCount ?? 0;
        }
      }
      const idemAge = options.idempotencyMaxAgeMs ?? options.maxAgeMs;
      if (idemAge !== undefined) {
        result.idempotency +=
          (await c.query("DELETE FROM idempotency WHERE state = 'done' AND COALESCE(completed_at, created_at) < $1", [now - idemAge])).rowCount ?? 0;
      }
      return result;
    });
  }

  async checkWritable(): Promise<void> {
    // Refused in a read-only transaction (a standby, default_transaction_read_only) whatever it matches.
    await this.q('checkWritable', 'UPDATE schema_migrations SET version = version WHERE false');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopRetention();
    await this.pool.end();
  }
}

async function migrate(pool: pg.Pool, schema: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // Serialises concurrent openers of the same schema: each migration runs exactly once.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`tool-envelope:migrate:${schema}`]);
    // Only create a missing schema: CREATE SCHEMA needs a database privilege an existing schema does not.
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
    const applied = new Set((await client.query('SELECT version FROM schema_migrations')).rows.map((r) => Number(r.version)));
    for (const m of POSTGRES_MIGRATIONS) {
      if (applied.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, Date.now()]);
    }
    const newest = Math.max(0, ...applied);
    const known = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]?.version ?? 0;
    if (newest > known) throw new ToolEnvelopeError('store-failure', `database schema version ${newest} is newer than this library (${known})`);
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}

/** The PostgreSQL store type: a {@link Store} with its pool exposed. */
export type PostgresStore = Store & { readonly kind: 'postgres'; readonly pool: pg.Pool; chainReader(): ChainReader };

/**
 * Connects to PostgreSQL and runs pending schema migrations.
 *
 * @example
 * ```ts
 * const store = await openPostgresStore({ connectionString: process.env.DATABASE_URL ?? 'postgres://localhost/app', schema: 'tool_envelope' });
 * await store.close();
 * ```
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  if (typeof options?.connectionString !== 'string' || options.connectionString === '') {
    throw new ToolEnvelopeError('invalid-option', 'openPostgresStore: `connectionString` must be a non-empty string');
  }
  const schema = options.schema ?? 'public';
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new ToolEnvelopeError('invalid-option', `schema must be a plain identifier, got ${JSON.stringify(schema)}`);
  }
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    options: `-c search_path="${schema}"`,
  });
  // An idle client losing its connection must not crash the host; the next query reconnects.
  pool.on('error', () => {});
  try {
    await migrate(pool, schema);
  } catch (e) {
    await pool.end().catch(() => {});
    throw storeFailure('cannot open PostgreSQL store', e);
  }
  const store = new PgStoreImpl(pool, schema, options.rollupSettleMs);
  store.chain = await chainStateFor(options.chainKey);
  store.startRetention(options.retention);
  return store as PostgresStore;
}

export { POSTGRES_MIGRATIONS } from './migrations.js';
