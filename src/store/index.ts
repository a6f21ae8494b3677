/**
 * tool-envelope store (`tool-envelope/store`): the store interface, the audit writer, the
 * in-memory store and `openStore`, which picks a driver from a location string. The SQLite and
 * PostgreSQL drivers live in their own subpaths and are loaded only when used.
 */
import { ToolEnvelopeError, missingPeer } from 'tool-envelope/core';
import { createMemoryStore } from './memory.js';
import type { RetentionOptions, Store } from './types.js';

/** The store types: {@link Store}, {@link AuditRecord}, {@link AuditFilter}, {@link ApprovalRequest}, ... */
import type { LooseFileWarning } from './private-file.js';
export type * from './types.js';
export type { TaskHandleRecord, TaskHandleTable } from './task-handles.js';
export type { BudgetCharge, BudgetTable } from './budgets.js';
export type { ConsoleSessionRecord, ConsoleSessionTable } from './console-sessions.js';
export type { ConsoleOidcFlowRecord, ConsoleOidcFlowTable } from './console-oidc-flows.js';
export type { ConsoleSignInFailureTable } from './console-sign-in-failures.js';
export type { ApprovalVote, ApprovalVoteTable } from './approval-votes.js';
export { AuditWriter, type AuditLogOptions, type AuditWriterOptions } from './audit-writer.js';
export { createMemoryStore, type MemoryStoreOptions } from './memory.js';
export { newAuditId } from './ids.js';
export { AUDIT_STATUSES, decodeCursor, encodeCursor } from './query.js';
export {
  defaultOperatorKeyFile,
  loadOperatorKey,
  operatorKeyFromSecret,
  type OperatorKey,
  type OperatorKeyOptions,
} from './operator-key.js';
export { CHAIN_PURPOSE, verifyAuditChain, type ChainProblem, type ChainReader, type ChainReport } from './chain.js';
export { REDACTED, createRedactor, isSecretKey, redactString, type RedactionOptions } from './redact.js';
export type { AuditCommitMode } from './audit-writer.js';
export { PRIVATE_MODE, createPrivateWriteStream, ensurePrivateFile, warnIfLoose, writePrivateFile, type LooseFileWarning } from './private-file.js';

/**
 * Opens a store from a location: `memory` (or `:memory:`) → in-memory; `postgres://…` or
 * `postgresql://…` → PostgreSQL; `sqlite:PATH` or any other string → a SQLite file. Any other
 * URL scheme (`mysql://…`) is `invalid-option`.
 *
 * @example
 * ```ts
 * const store = await openStore(process.env.TOOL_ENVELOPE_STORE ?? './tool-envelope.db');
 * ```
 */
export async function openStore(
  location: string,
  options: {
    retention?: RetentionOptions;
    schema?: string;
    onLooseFile?: LooseFileWarning;
    /** A SQLite file's audit writer thread (see `SqliteStoreOptions.auditWorker`); default true. */
    auditWorker?: boolean;
  } = {},
): Promise<Store> {
  if (typeof location !== 'string' || location.trim() === '') {
    throw new ToolEnvelopeError('invalid-option', 'store location must be a non-empty string');
  }
  if (location === 'memory' || location === ':memory:') return createMemoryStore({ ...(options.retention && { retention: options.retention }) });
  // Any other URL scheme (mysql://, redis://, ...) is a mistake, not a SQLite file named after it.
  const scheme = /^([a-z][a-z0-9+.-]*:)\/\//i.exec(location)?.[1];
  if (scheme !== undefined && !/^(postgres|postgresql|sqlite):$/i.test(scheme)) {
    throw new ToolEnvelopeError('invalid-option', `unsupported store scheme '${scheme}' (sqlite file path, memory, postgres://)`);
  }
  if (/^postgres(ql)?:\/\//i.test(location)) {
    const { openPostgresStore } = await import('./postgres/index.js').catch((e: unknown) => {
      throw missingPeer(e, 'pg', 'a PostgreSQL store');
    });
    const { onLooseFile: _f, auditWorker: _w, ...pgOptions } = options;
    return openPostgresStore({ connectionString: location, ...pgOptions });
  }
  const { openSqliteStore } = await import('./sqlite/index.js').catch((e: unknown) => {
    throw missingPeer(e, 'better-sqlite3', 'a SQLite store');
  });
  return openSqliteStore({
    path: location.replace(/^sqlite:/i, ''),
    ...(options.retention && { retention: options.retention }),
    ...(options.onLooseFile && { onLooseFile: options.onLooseFile }),
    ...(options.auditWorker !== undefined && { auditWorker: options.auditWorker }),
  });
}
