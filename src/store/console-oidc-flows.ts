/**
 * The console's OpenID Connect flows in progress (between `/oidc/start` and the provider's callback),
 * in the store so that the callback may reach any console over it (replicas behind a load balancer).
 * A row holds the SHA-256 of the flow's cookie value (never the value: it is the browser's secret),
 * the flow (PKCE verifier, state, nonce) as JSON text opaque to the store, and its end. A flow is
 * taken once: `take` deletes and returns the row in one statement, so a replayed callback, on this
 * console or another at the same moment, finds nothing.
 */
import { ToolEnvelopeError } from 'tool-envelope/core';

/** One flow's row. */
export interface ConsoleOidcFlowRecord {
  /** Hex SHA-256 of the flow cookie's value (never the value). */
  keyHash: string;
  /** The flow, as JSON text; opaque to the store. */
  flow: string;
  createdAt: number;
  /** From this time (ms since the epoch) the flow reads as absent. */
  expiresAt: number;
}

/** The table's operations, on every store (`store.consoleOidcFlows`). */
export interface ConsoleOidcFlowTable {
  /**
   * Inserts a row (a duplicate key hash fails with `store-failure`). On the way it deletes the rows
   * ended at the record's `createdAt` and, past {@link MAX_OIDC_FLOWS} rows, those that end first.
   */
  put(record: ConsoleOidcFlowRecord): Promise<void>;
  /** Deletes the row of a key hash and returns it if it had not ended at `now`: each flow is read once. */
  take(keyHash: string, now: number): Promise<ConsoleOidcFlowRecord | undefined>;
}

/** The most flows kept at once: sign-ins started and never finished cannot grow the table without bound. */
export const MAX_OIDC_FLOWS = 10_000;

/** The SQL column names, in {@link consoleOidcFlowValues} order. */
export const CONSOLE_OIDC_FLOW_COLUMNS = ['key_hash', 'flow', 'created_at', 'expires_at'] as const;

const HASH = /^[0-9a-f]{64}$/;

/** Checks a key hash (the store keeps only hashes). */
export function checkFlowKeyHash(keyHash: unknown): asserts keyHash is string {
  if (typeof keyHash !== 'string' || !HASH.test(keyHash)) throw new ToolEnvelopeError('invalid-option', 'console OIDC flow keyHash must be a hex SHA-256');
}

/** Checks a record and returns its column values. */
export function consoleOidcFlowValues(r: ConsoleOidcFlowRecord): [string, string, number, number] {
  checkFlowKeyHash(r.keyHash);
  if (typeof r.flow !== 'string' || r.flow === '') throw new ToolEnvelopeError('invalid-option', 'console OIDC flow must be a non-empty string');
  for (const key of ['createdAt', 'expiresAt'] as const) {
    if (!Number.isSafeInteger(r[key])) throw new ToolEnvelopeError('invalid-option', `console OIDC flow ${key} must be an integer`);
  }
  return [r.keyHash, r.flow, r.createdAt, r.expiresAt];
}

/** A row read back from SQL as a record. */
export function consoleOidcFlowFromRow(row: Record<string, unknown>): ConsoleOidcFlowRecord {
  return { keyHash: String(row.key_hash), flow: String(row.flow), createdAt: Number(row.created_at), expiresAt: Number(row.expires_at) };
}

/** A SQL driver's two statements: `put` (the ended rows and those past `keep` deleted first), `take` (DELETE ... RETURNING). */
export interface OidcFlowStatements {
  put(values: ReturnType<typeof consoleOidcFlowValues>, keep: number): Promise<void> | void;
  take(keyHash: string): Promise<Record<string, unknown> | undefined> | Record<string, unknown> | undefined;
}

/** The table over a SQL driver's statements: records checked on the way in, a taken row that had ended read as absent. */
export function sqlOidcFlows(run: OidcFlowStatements, max = MAX_OIDC_FLOWS): ConsoleOidcFlowTable {
  return {
    async put(record) {
      // Room for the new row: the rows past the newest max - 1 (by end) go.
      await run.put(consoleOidcFlowValues(record), max - 1);
    },
    async take(keyHash, now) {
      checkFlowKeyHash(keyHash);
      const row = await run.take(keyHash);
      const r = row && consoleOidcFlowFromRow(row);
      return r && r.expiresAt > now ? r : undefined;
    },
  };
}

/** The in-memory table (the memory store's: a console over it finishes only the flows it started). */
export function createMemoryConsoleOidcFlows(check: () => void, max = MAX_OIDC_FLOWS): ConsoleOidcFlowTable {
  const rows = new Map<string, ConsoleOidcFlowRecord>();
  return {
    async put(record) {
      check();
      consoleOidcFlowValues(record);
      for (const [k, r] of rows) if (r.expiresAt <= record.createdAt) rows.delete(k);
      if (rows.has(record.keyHash)) throw new ToolEnvelopeError('store-failure', 'duplicate console OIDC flow');
      // Flows all last as long, so the first inserted is the first to end.
      if (rows.size >= max) rows.delete(rows.keys().next().value as string);
      rows.set(record.keyHash, { ...record });
    },
    async take(keyHash, now) {
      check();
      checkFlowKeyHash(keyHash);
      const r = rows.get(keyHash);
      rows.delete(keyHash);
      return r && r.expiresAt > now ? { ...r } : undefined;
    },
  };
}
