/**
 * The console-session table: the operator console's signed-in sessions, in the store so that every
 * console serving it (gateway replicas, the standalone console) knows them. The store keeps only
 * the SHA-256 of a session id (the id is the browser's bearer secret) with the identity it signed
 * in as and its two expiries; a row past either reads as absent and is deleted on the way.
 */
import { ToolEnvelopeError } from 'tool-envelope/core';

/** One session's row. */
export interface ConsoleSessionRecord {
  /** Hex SHA-256 of the session id (never the id). */
  idHash: string;
  /** Who signed in (the console's identity: principal, role, tenant), as JSON text; opaque to the store. */
  identity: string;
  createdAt: number;
  /** When it was last used (restarted its idle clock). */
  lastSeenAt: number;
  /** Unused until this time (ms since the epoch), it ends. */
  idleUntil: number;
  /** At this time it ends, however used. */
  expiresAt: number;
}

/** The table's operations, on every store (`store.consoleSessions`). */
export interface ConsoleSessionTable {
  /** Inserts a row (an id hash is new: a duplicate fails with `store-failure`); deletes ended rows on the way. */
  create(record: ConsoleSessionRecord): Promise<void>;
  /** The row of an id hash that has not ended at `now`, else undefined (an ended row is deleted). */
  get(idHash: string, now: number): Promise<ConsoleSessionRecord | undefined>;
  /** Restarts its idle clock: used at `at`, it ends unused at `idleUntil` (its absolute end stays). */
  touch(idHash: string, at: number, idleUntil: number): Promise<void>;
  /** Deletes the row (sign-out): every console refuses its id from then on. False when there was none. */
  end(idHash: string): Promise<boolean>;
}

/** The SQL column names, in {@link consoleSessionValues} order. */
export const CONSOLE_SESSION_COLUMNS = ['id_hash', 'identity', 'created_at', 'last_seen_at', 'idle_until', 'expires_at'] as const;

/** Checks a record and returns its column values. */
export function consoleSessionValues(r: ConsoleSessionRecord): [string, string, number, number, number, number] {
  if (typeof r.idHash !== 'string' || !/^[0-9a-f]{64}$/.test(r.idHash))
    throw new ToolEnvelopeError('invalid-option', 'console session idHash must be a hex SHA-256');
  if (typeof r.identity !== 'string' || r.identity === '') throw new ToolEnvelopeError('invalid-option', 'console session identity must be a non-empty string');
  for (const key of ['createdAt', 'lastSeenAt', 'idleUntil', 'expiresAt'] as const) {
    if (!Number.isSafeInteger(r[key])) throw new ToolEnvelopeError('invalid-option', `console session ${key} must be an integer`);
  }
  return [r.idHash, r.identity, r.createdAt, r.lastSeenAt, r.idleUntil, r.expiresAt];
}

/** A row read back from SQL as a record. */
export function consoleSessionFromRow(row: Record<string, unknown>): ConsoleSessionRecord {
  return {
    idHash: String(row.id_hash),
    identity: String(row.identity),
    createdAt: Number(row.created_at),
    lastSeenAt: Number(row.last_seen_at),
    idleUntil: Number(row.idle_until),
    expiresAt: Number(row.expires_at),
  };
}

/** True when the session has ended at `now` (idle or absolute). */
export function sessionEnded(r: Pick<ConsoleSessionRecord, 'idleUntil' | 'expiresAt'>, now: number): boolean {
  return r.idleUntil <= now || r.expiresAt <= now;
}

/**
 * The in-memory table (the memory store's: a console over it signs in only its own process's
 * users). At most `max` rows; beyond it the oldest session ends first.
 */
export function createMemoryConsoleSessions(check: () => void, max = 10_000): ConsoleSessionTable {
  const rows = new Map<string, ConsoleSessionRecord>();
  return {
    async create(record) {
      check();
      consoleSessionValues(record);
      for (const [k, r] of rows) if (sessionEnded(r, record.createdAt)) rows.delete(k);
      if (rows.has(record.idHash)) throw new ToolEnvelopeError('store-failure', 'duplicate console session');
      if (rows.size >= max) rows.delete(rows.keys().next().value as string);
      rows.set(record.idHash, { ...record });
    },
    async get(idHash, now) {
      check();
      const r = rows.get(idHash);
      if (!r) return undefined;
      if (sessionEnded(r, now)) {
        rows.delete(idHash);
        return undefined;
      }
      return { ...r };
    },
    async touch(idHash, at, idleUntil) {
      check();
      const r = rows.get(idHash);
      if (r) Object.assign(r, { lastSeenAt: at, idleUntil });
    },
    async end(idHash) {
      check();
      return rows.delete(idHash);
    },
  };
}
