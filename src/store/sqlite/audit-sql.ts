/**
 * The SQL and sizes of the SQLite audit log's writes: the row inserts the store and its audit
 * writer thread prepare, the packed row's columns, and the WAL checkpoint sizes.
 */
import { AUDIT_COLUMNS } from '../audit-columns.js';

/**
 * The page size of a database file the store creates (an existing file keeps its own: SQLite sets
 * it only before the first table). A commit writes every page it touched to the WAL whole, about
 * ten pages even for one record (the row's leaf, one leaf per index, the sequence, the chain's link
 * and head), and a call one at a time commits twice, so that write is most of what the log adds
 * to the call: 4 KiB pages write a quarter of what 16 KiB ones did, for a few percent more CPU per
 * record in big batches (more B-tree splits). Figures: bench/README.md, "SQLite page size".
 */
export const NEW_FILE_PAGE_SIZE = 4096;

/**
 * WAL pages before a connection checkpoints after its commit (SQLite's default is 1 000). Audit
 * batches rewrite the same index pages often; checkpointing a quarter as often copies each of
 * them fewer times (about 8% less CPU per audit insert, measured). Every connection uses the same
 * value, so that the calling thread's connection does not end up running the checkpoints.
 * The WAL file grows to about 16 MiB with 4 KiB pages (files made before: 64 MiB with 16 KiB).
 */
export const WAL_AUTOCHECKPOINT_PAGES = 4000;
/**
 * With the audit worker, checkpoints run on its checkpointer thread (see audit-worker.ts) each
 * time about this many KiB were written to the WAL: the audit rows and the other pages each commit
 * rewrites ({@link auditCommitPages}). The connections then checkpoint by themselves only past
 * WAL_FALLBACK_CHECKPOINT_PAGES, a bound on the WAL should the checkpointer fall behind.
 */
export const CHECKPOINT_EVERY_KIB = 16_384;

/** The connections' own checkpoint size when the checkpointer runs (see {@link CHECKPOINT_EVERY_KIB}). */
export const WAL_FALLBACK_CHECKPOINT_PAGES = 2 * WAL_AUTOCHECKPOINT_PAGES;

/**
 * The columns of a packed SQLite audit row: the shared ones and the indexed hash of the tool call
 * id. (The record's place in its writer's chain, `chain_pos`, is bound at commit, see chain.ts.)
 */
export const PACKED_COLUMNS: readonly string[] = [...AUDIT_COLUMNS, 'call_key'];
const SQLITE_AUDIT_COLUMNS = [...PACKED_COLUMNS, 'chain_pos'];

/** The body's place among a row's values. */
export const BODY_INDEX = AUDIT_COLUMNS.indexOf('body');
/** The audit table's columns that are not TEXT (the rest are: see migrations.ts). */
const NOT_TEXT = new Set(['started_at', 'ended_at', 'latency_ms', 'replay', 'call_key', 'chain_pos']);
// Bodies, and with `textAsBytes` every string, are bound as UTF-8 bytes (see packed-format.ts);
// the CAST stores them as TEXT (UTF-8 is the database encoding), not as a BLOB. A string bound as
// a string goes through it unchanged, and a number becomes the text the column's TEXT affinity
// would have made of it: the same values either way.
const AUDIT_ROW_SQL = `(${SQLITE_AUDIT_COLUMNS.map((c) => (NOT_TEXT.has(c) ? '?' : 'CAST(? AS TEXT)')).join(', ')})`;

/**
 * Whether the audit inserts bind string values as UTF-8 bytes (`textAsBytes` of
 * `insertPackedRows`): the default. Pays for `SQLite: durable audit throughput` and `SQLite: CPU
 * per durable audit record` (the writer thread makes no string of the 11 text columns of each
 * row, and the binding converts none back to UTF-8). The reference binds strings,
 * `useReferenceTextBinding(true)`; the store suite runs both.
 */
export function useReferenceTextBinding(on: boolean): void {
  textAsBytes = !on;
}
let textAsBytes = true;

/** The current choice of {@link useReferenceTextBinding} (read when a store opens). */
export function bindsTextAsBytes(): boolean {
  return textAsBytes;
}

/** The insert of one audit row. */
export const INSERT_AUDIT_SQL = `INSERT INTO audit (${SQLITE_AUDIT_COLUMNS.join(', ')}) VALUES ${AUDIT_ROW_SQL}`;
/**
 * Audit rows per INSERT statement in a batch. One statement per row spends more on executing the
 * statement (and on AUTOINCREMENT's sqlite_sequence update) than on the row; 32 rows bind 544
 * values, well under SQLite's limit. OR FAIL: with the default (ABORT) a multi-row statement keeps
 * a statement journal (copies of every index page it touches, to undo itself alone); the batch's
 * transaction is rolled back on any error anyway. Together about 5 µs less CPU per row, measured.
 */
export const AUDIT_ROWS_PER_STATEMENT = 32;

/** The insert of {@link AUDIT_ROWS_PER_STATEMENT} audit rows. */
export const INSERT_AUDIT_MANY_SQL = `INSERT OR FAIL INTO audit (${SQLITE_AUDIT_COLUMNS.join(', ')}) VALUES ${Array(AUDIT_ROWS_PER_STATEMENT)
  .fill(AUDIT_ROW_SQL)
  .join(', ')}`;

/**
 * The pages an audit commit writes to the WAL besides its rows' own, estimated: the table's last
 * page, one per index of the audit table, and with a hash chain its link's and its head's pages.
 */
export function auditCommitPages(db: { prepare(sql: string): { get(): unknown } }, chained: boolean): number {
  const { n } = db.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit'").get() as { n: number };
  return 1 + n + (chained ? 2 : 0);
}
