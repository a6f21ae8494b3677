/**
 * The tenant of a call, read from its principal chain: that of the first principal that names one
 * (a non-empty string `tenant_id`), `null` for none. The same rule in JavaScript and in each
 * dialect's SQL, so a tenant's view of the log is filtered where it is read: another tenant's row is
 * never fetched, and keyset pages hold as many rows as asked.
 */
import type { Principal } from 'tool-envelope/core';

/** The tenant of a principal chain. */
export function tenantOfChain(chain: readonly Principal[]): string | null {
  for (const p of chain) if (typeof p.tenant_id === 'string' && p.tenant_id !== '') return p.tenant_id;
  return null;
}

/**
 * SQL of the tenant of an `audit` row whose body is `body` (the same rule as {@link tenantOfChain}).
 * The chain is the body's fourth element, or, when that is `0`, the call envelope's
 * `principal_chain` (audit-body.ts). On PostgreSQL `type` says whether `body` is the stored `json`
 * or its `jsonb` (parsed once, where a row's tenant is read many times over; both read the last of
 * duplicate keys, so both give the same tenant).
 */
export function tenantSql(dialect: 'sqlite' | 'postgres', body = 'audit.body', type: 'json' | 'jsonb' = 'json'): string {
  return dialect === 'sqlite'
    ? `(SELECT json_extract(t.value, '$.tenant_id') FROM json_each(${body}, CASE json_type(${body}, '$[3]') WHEN 'array' THEN '$[3]' ELSE '$[0].principal_chain' END) t
 WHERE json_type(t.value, '$.tenant_id') = 'text' AND json_extract(t.value, '$.tenant_id') <> '' ORDER BY t.key LIMIT 1)`
    : `(SELECT t.e->>'tenant_id' FROM ${type}_array_elements(CASE WHEN ${type}_typeof(${body}->3) = 'array' THEN ${body}->3
 WHEN ${type}_typeof(${body}->0->'principal_chain') = 'array' THEN ${body}->0->'principal_chain' ELSE '[]'::${type} END) WITH ORDINALITY AS t(e, i)
 WHERE ${type}_typeof(t.e->'tenant_id') = 'string' AND t.e->>'tenant_id' <> '' ORDER BY t.i LIMIT 1)`;
}
