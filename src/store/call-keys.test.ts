import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import * as audit from '../cli/audit.js';
import { runVerb } from '../cli/test-support/run-verb.js';
import { randomBytes } from 'node:crypto';
import type { ChainReport } from './chain.js';
import { loadOperatorKey } from './operator-key.js';
import { toolCallKey, toolCallKeys, useReferenceCallKeys } from './query.js';
import { openSqliteStore } from './sqlite/index.js';
import { makeAudit } from './test-support/store-suite.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const msOf = (id: string): number => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
/** A UUIDv7 of the given time (the gateway's ids are made by runtime/ids.ts, tested there). */
function v7(ms = Date.now()): string {
  const t = ms.toString(16).padStart(12, '0');
  const r = randomBytes(10).toString('hex');
  return `${t.slice(0, 8)}-${t.slice(8)}-7${r.slice(0, 3)}-${'89ab'.charAt(Number.parseInt(r.charAt(3), 16) & 3)}${r.slice(4, 7)}-${r.slice(7, 19)}`;
}

describe('toolCallKey', () => {
  afterEach(() => useReferenceCallKeys(false));

  it('orders time-ordered ids by their time, above every 32-bit hash', () => {
    const a = v7(1_796_276_368_522);
    const b = v7(1_796_276_368_523);
    expect(a).toMatch(V7);
    expect(toolCallKey(a)).toBeGreaterThan(2 ** 32);
    expect(toolCallKey(b)).toBeGreaterThan(toolCallKey(a));
    expect(Number.isSafeInteger(toolCallKey(b))).toBe(true);
    // One key holds the ids of one millisecond with one random digit.
    expect(Math.floor((toolCallKey(a) - 2 ** 32) / 16)).toBe(msOf(a));
  });

  it('hashes every other id into a signed 32-bit integer, the same each time', () => {
    for (const id of ['c1', '', 'é', '550e8400-e29b-41d4-a716-446655440000', '0192f5e4-7b2a-7c3d-Xe4f-0123456789ab']) {
      const key = toolCallKey(id);
      expect(key).toBe(toolCallKey(id));
      expect(key | 0).toBe(key);
      expect(toolCallKeys(id)).toEqual([key]);
    }
    expect(toolCallKey(42)).toBe(0);
  });

  it('hashes a time-ordered id too under the reference, which is the key rows had before', () => {
    const id = v7();
    const [ordered, legacy] = toolCallKeys(id);
    useReferenceCallKeys(true);
    expect(toolCallKey(id)).toBe(legacy);
    expect(toolCallKey(id) | 0).toBe(toolCallKey(id));
    expect(ordered).not.toBe(legacy);
  });

  it('finds a call by its id in SQLite whether its rows carry the ordered or the old key, in either mode; the chain verifies', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-keys-'));
    try {
      const file = path.join(dir, 'k.db');
      const keyFile = path.join(dir, 'operator.key');
      writeFileSync(keyFile, Buffer.alloc(32, 7).toString('base64'), { mode: 0o600 });
      const chainKey = await loadOperatorKey({ file: keyFile });
      const oldId = v7();
      const newId = v7();
      useReferenceCallKeys(true);
      let store = await openSqliteStore({ path: file, chainKey });
      const old = makeAudit({ toolCallId: oldId });
      await store.appendAudit([old, makeAudit()]);
      await store.close();
      useReferenceCallKeys(false);
      store = await openSqliteStore({ path: file, chainKey });
      const fresh = makeAudit({ toolCallId: newId });
      await store.appendAudit([fresh, makeAudit()]);
      const keyOf = (id: string): number => (store.db.prepare('SELECT call_key AS k FROM audit WHERE id = ?').get(id) as { k: number }).k;
      expect(keyOf(old.id)).toBe(toolCallKeys(oldId)[1]);
      expect(keyOf(fresh.id)).toBe(toolCallKey(newId));
      expect((await store.listAudit({ toolCallId: oldId })).records.map((r) => r.id)).toEqual([old.id]);
      expect((await store.listAudit({ toolCallId: newId })).records.map((r) => r.id)).toEqual([fresh.id]);
      const plan = store.db.prepare('EXPLAIN QUERY PLAN SELECT * FROM audit WHERE call_key IN (?, ?) AND tool_call_id = ?').all(1, 2, 'c') as {
        detail: string;
      }[];
      expect(plan.map((r) => r.detail).join('; ')).toMatch(/USING INDEX audit_call/);
      // And back: under the reference, rows stored with ordered keys are found all the same.
      useReferenceCallKeys(true);
      expect((await store.listAudit({ toolCallId: newId })).records.map((r) => r.id)).toEqual([fresh.id]);
      expect((await store.listAudit({ toolCallId: oldId })).records.map((r) => r.id)).toEqual([old.id]);
      useReferenceCallKeys(false);
      await store.close();
      const verified = await runVerb(audit, ['verify', '--store', file, '--key-file', keyFile, '--format', 'json']);
      expect(verified.code).toBe(0);
      expect(JSON.parse(verified.stdout) as ChainReport).toMatchObject({ ok: true, verified: 4, unverifiable: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
