/**
 * The task-handle table: the gateway's durable map from the handle it gave a caller to the task
 * an upstream runs (see src/mcp/tasks). The store keeps only the SHA-256 of each handle (a handle
 * is a bearer secret) and the digest of the caller it is bound to; a lookup matches both or
 * finds nothing, so a handle presented by another caller reads exactly as an unknown one.
 */
import { type JsonObject, ToolEnvelopeError } from 'tool-envelope/core';

/** One handle's row. */
export interface TaskHandleRecord {
  /** Hex SHA-256 of the handle (never the handle). */
  handleHash: string;
  /** Digest of the caller the handle is bound to (tenant, verified principal, session). */
  owner: string;
  /** The upstream that runs the task. */
  upstream: string;
  /** The upstream's own task id. */
  upstreamTaskId: string;
  /** The gateway's tool name the task was created for. */
  tool: string;
  /** What the gateway needs to envelope the final result (ids of the call); opaque to the store. */
  context: JsonObject;
  createdAt: number;
  /** After this time (ms since the epoch) the row reads as absent and may be deleted; null: no limit. */
  expiresAt: number | null;
}

/** The table's operations, on every store (`store.taskHandles`). */
export interface TaskHandleTable {
  /** Inserts a row (a handle hash is new: a duplicate fails with `store-failure`); deletes expired rows on the way. */
  put(record: TaskHandleRecord): Promise<void>;
  /** The row whose handle hash and owner both match and that has not expired at `now`, else undefined. */
  get(handleHash: string, owner: string, now: number): Promise<TaskHandleRecord | undefined>;
  /** Deletes the row owned by `owner`; false when there was none. */
  delete(handleHash: string, owner: string): Promise<boolean>;
  /**
   * Marks the task's end as seen, atomically: true for the first caller only (so the gateway
   * records a task's final outcome once, however often it is polled, by however many replicas).
   */
  markFinal(handleHash: string, owner: string, at: number): Promise<boolean>;
}

/** The SQL column names, in {@link taskHandleValues} order. */
export const TASK_HANDLE_COLUMNS = ['handle_hash', 'owner', 'upstream', 'upstream_task_id', 'tool', 'context', 'created_at', 'expires_at'] as const;

/** Checks a record and returns its column values (`context` as JSON text). */
export function taskHandleValues(r: TaskHandleRecord): [string, string, string, string, string, string, number, number | null] {
  for (const key of ['handleHash', 'owner', 'upstream', 'upstreamTaskId', 'tool'] as const) {
    if (typeof r[key] !== 'string' || r[key] === '') throw new ToolEnvelopeError('invalid-option', `task handle ${key} must be a non-empty string`);
  }
  if (!Number.isSafeInteger(r.createdAt)) throw new ToolEnvelopeError('invalid-option', 'task handle createdAt must be an integer');
  if (r.expiresAt !== null && !Number.isSafeInteger(r.expiresAt))
    throw new ToolEnvelopeError('invalid-option', 'task handle expiresAt must be an integer or null');
  return [r.handleHash, r.owner, r.upstream, r.upstreamTaskId, r.tool, JSON.stringify(r.context ?? {}), r.createdAt, r.expiresAt];
}

/** A row read back from SQL as a record. */
export function taskHandleFromRow(row: Record<string, unknown>): TaskHandleRecord {
  const context = row.context;
  return {
    handleHash: String(row.handle_hash),
    owner: String(row.owner),
    upstream: String(row.upstream),
    upstreamTaskId: String(row.upstream_task_id),
    tool: String(row.tool),
    // pg's json columns arrive parsed; SQLite's as text.
    context: (typeof context === 'string' ? JSON.parse(context) : (context ?? {})) as JsonObject,
    createdAt: Number(row.created_at),
    expiresAt: row.expires_at === null || row.expires_at === undefined ? null : Number(row.expires_at),
  };
}

/** The in-memory table (the memory store's; nothing survives the process). */
export function createMemoryTaskHandles(check: () => void): TaskHandleTable {
  const rows = new Map<string, TaskHandleRecord>();
  const finals = new Set<string>();
  const copy = (r: TaskHandleRecord): TaskHandleRecord => ({ ...r, context: JSON.parse(JSON.stringify(r.context)) as JsonObject });
  return {
    async put(record) {
      check();
      taskHandleValues(record);
      for (const [k, r] of rows) {
        if (r.expiresAt !== null && r.expiresAt <= record.createdAt) {
          rows.delete(k);
          finals.delete(k);
        }
      }
      if (rows.has(record.handleHash)) throw new ToolEnvelopeError('store-failure', 'duplicate task handle');
      rows.set(record.handleHash, copy(record));
    },
    async get(handleHash, owner, now) {
      check();
      const r = rows.get(handleHash);
      if (!r || r.owner !== owner || (r.expiresAt !== null && r.expiresAt <= now)) return undefined;
      return copy(r);
    },
    async delete(handleHash, owner) {
      check();
      const r = rows.get(handleHash);
      if (!r || r.owner !== owner) return false;
      finals.delete(handleHash);
      return rows.delete(handleHash);
    },
    async markFinal(handleHash, owner) {
      check();
      const r = rows.get(handleHash);
      if (!r || r.owner !== owner || finals.has(handleHash)) return false;
      finals.add(handleHash);
      return true;
    },
  };
}
