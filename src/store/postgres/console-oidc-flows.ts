/** The console's OpenID Connect flows on PostgreSQL (migration 13): one table for every replica's console. */
import type pg from 'pg';
import { CONSOLE_OIDC_FLOW_COLUMNS, type ConsoleOidcFlowTable, sqlOidcFlows } from '../console-oidc-flows.js';

/** Runs one statement with the store's checks and typed failures (the store's `q`). */
type Query = (what: string, text: string, values?: unknown[]) => Promise<pg.QueryResult>;

// One statement: the ended rows and those past the newest $5 (by end) go, the new one comes in.
const PUT_SQL = `WITH ended AS (
  DELETE FROM console_oidc_flows WHERE expires_at <= $3
    OR key_hash IN (SELECT key_hash FROM console_oidc_flows ORDER BY expires_at DESC, key_hash OFFSET $5)
)
INSERT INTO console_oidc_flows (${CONSOLE_OIDC_FLOW_COLUMNS.join(', ')}) VALUES ($1, $2, $3, $4)`;

// One statement: of two replicas taking the same row, one gets it (the other's DELETE finds it gone).
const TAKE_SQL = 'DELETE FROM console_oidc_flows WHERE key_hash = $1 RETURNING *';

/** The table over the store's pool; at most `max` rows. */
export function postgresConsoleOidcFlows(q: Query, max?: number): ConsoleOidcFlowTable {
  return sqlOidcFlows(
    {
      put: async (values, keep) => {
        await q('console OIDC flow put', PUT_SQL, [...values, keep]);
      },
      take: async (keyHash) => (await q('console OIDC flow take', TAKE_SQL, [keyHash])).rows[0] as Record<string, unknown> | undefined,
    },
    max,
  );
}
