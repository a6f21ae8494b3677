// The tenant filter is part of the store's query, in each store: only that tenant's rows are read
// (the rule of tenantOfChain, also in SQL), and keyset pages stay full and complete.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryStore } from './memory.js';
import { openPostgresStore } from './postgres/index.js';
import { openSqliteStore } from './sqlite/index.js';
import { tenantOfChain } from './tenant.js';
import { describePg, freshSchemas } from './test-support/pg.js';
import { makeAudit } from './test-support/store-suite.js';
import type { AuditRecord, Store } from './types.js';

const chains: AuditRecord['principalChain'][] = [
  [{ kind: 'user', id: 'a', tenant_id: 'acme' }],
  // The first principal naming a tenant decides, not the first principal.
  [
    { kind: 'agent', id: 'x' },
    { kind: 'user', id: 'b', tenant_id: 'acme' },
  ],
  [
    { kind: 'user', id: 'c', tenant_id: 'globex' },
    { kind: 'agent', id: 'y', tenant_id: 'acme' },
  ],
  // An empty or non-string tenant names none.
  [{ kind: 'user', id: 'd', tenant_id: '' }],
  [
    { kind: 'user', id: 'e', tenant_id: 7 as never },
    { kind: 'user', id: 'f', tenant_id: "acme' OR 1=1 --" },
  ],
  [{ kind: 'user', id: 'g' }],
];

async function suite(open: () => Promise<Store>): Promise<void> {
  const store = await open();
  try {
    const records = Array.from({ length: 60 }, (_, i) => {
      const chain = chains[i % chains.length]!;
      const r = makeAudit({ principalChain: chain });
      // Every other record as the governed runtime writes it: the call envelope holds the chain, stored once (audit-body.ts).
      return i % 2 ? { ...r, callEnvelope: { ...r.callEnvelope, principal_chain: chain as never } } : r;
    });
    // Another tenant's record whose arguments hold the text of acme's chain: the quick substring test lets it by, the exact rule does not.
    records.push(
      makeAudit({ principalChain: [{ kind: 'user', id: 'h', tenant_id: 'globex' }], callEnvelope: { args: { tenant_id: 'acme', x: '"tenant_id":"acme"' } } }),
    );
    await store.appendAudit(records);
    for (const tenant of ['acme', 'globex', "acme' OR 1=1 --", 'nobody', null]) {
      const expected = records.filter((r) => tenantOfChain(r.principalChain) === tenant).map((r) => r.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const p = await store.listAudit({ tenant }, { limit: 7, cursor });
        // Every page but the last is full: nothing is dropped after reading.
        if (p.nextCursor) expect(p.records).toHaveLength(7);
        for (const r of p.records) expect(tenantOfChain(r.principalChain)).toBe(tenant);
        seen.push(...p.records.map((r) => r.id));
        cursor = p.nextCursor;
      } while (cursor);
      expect(seen.sort()).toEqual([...expected].sort());
      expect(await store.countAudit({ tenant })).toBe(expected.length);
      const stats = await store.auditStats({ tenant });
      expect(stats.reduce((n, s) => n + s.count, 0)).toBe(expected.length);
    }
    expect(await store.countAudit({ tenant: 'acme', tool: 'nope' })).toBe(0);
  } finally {
    await store.close();
  }
}

describe('the tenant filter in the store query', () => {
  const dir = mkdtempSync(join(tmpdir(), 'te-tenant-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it('SQLite', () => suite(() => openSqliteStore({ path: join(dir, 'calls.db') })));
  it('memory', () => suite(async () => createMemoryStore()));
});

describePg('the tenant filter in the store query (PostgreSQL)', (url) => {
  const fresh = freshSchemas(url);
  it('PostgreSQL', () => suite(() => openPostgresStore({ connectionString: url, schema: fresh() })));
});
