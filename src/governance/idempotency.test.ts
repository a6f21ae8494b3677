import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { success, type ToolOutcome } from '../core/index.js';
import { createMemoryStore } from '../store/memory.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { describePg, dropSchema, freshSchema } from '../store/test-support/pg.js';
import type { Store } from '../store/types.js';
import { IdempotencyGuard, canonicalJson, requestFingerprint } from './idempotency.js';

describe('canonicalJson / requestFingerprint', () => {
  it('is independent of key order and distinguishes values', () => {
    expect(canonicalJson({ b: 1, a: [true, null, { d: 'x', c: 2 }] })).toBe('{"a":[true,null,{"c":2,"d":"x"}],"b":1}');
    expect(requestFingerprint('t', { a: 1, b: 2 })).toBe(requestFingerprint('t', { b: 2, a: 1 }));
    expect(requestFingerprint('t', { a: 1 })).not.toBe(requestFingerprint('u', { a: 1 }));
    expect(requestFingerprint('t', { a: 1 })).not.toBe(requestFingerprint('t', { a: '1' }));
    const hostile = JSON.parse('{"__proto__": {"x": 1}, "constructor": 2}');
    expect(canonicalJson(hostile)).toBe('{"__proto__":{"x":1},"constructor":2}');
  });

  it('equals JSON.parse round trips for random JSON (fast-check)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = canonicalJson(v as never);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 300 },
    );
  });
});

type Factory = () => Promise<{ store: Store; reopen: (() => Promise<Store>) | undefined; cleanup: () => Promise<void> }>;

function guardSuite(name: string, factory: Factory, durable: boolean): void {
  describe(`IdempotencyGuard over ${name}`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    // Restart and two-handle cases exist only for stores that outlive a handle; not registered for memory.
    const itDurable = (title: string, fn: () => Promise<void>): void => {
      if (durable) it(title, fn);
    };
    afterEach(async () => {
      for (const c of cleanups.splice(0)) await c();
    });
    const open = async () => {
      const h = await factory();
      cleanups.push(async () => {
        await h.store.close().catch(() => {});
        await h.cleanup();
      });
      return h;
    };

    it('runs 100 simultaneous duplicates once; the others replay the same outcome', async () => {
      const { store } = await open();
      const guard = new IdempotencyGuard(store);
      let runs = 0;
      const exec = async (): Promise<ToolOutcome> => {
        runs++;
        await new Promise((r) => setTimeout(r, 20));
        return success({ id: 'order-1' }, { toolCallId: 'c0' });
      };
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => guard.run({ key: 'k', tool: 'orders.create', args: { sku: 'A', n: 1 }, toolCallId: `c${i}` }, exec)),
      );
      expect(runs).toBe(1);
      expect(results.filter((r) => r.executed)).toHaveLength(1);
      expect(results.filter((r) => r.replay)).toHaveLength(99);
      for (const r of results) expect(r.outcome.result).toEqual({ id: 'order-1' });
      for (const r of results.filter((x) => x.replay)) {
        expect(r.outcome.metadata).toEqual({ replay: true, originalToolCallId: 'c0' });
      }
    });

    it('refuses the same key with different arguments (invalid-argument / idempotency-key-reused)', async () => {
      const { store } = await open();
      const guard = new IdempotencyGuard(store);
      await guard.run({ key: 'k', tool: 't', args: { a: 1 }, toolCallId: 'c1' }, async () => success(1));
      let ran = false;
      const r = await guard.run({ key: 'k', tool: 't', args: { a: 2 }, toolCallId: 'c2' }, async () => ((ran = true), success(2)));
      expect(ran).toBe(false);
      expect(r.outcome).toMatchObject({ status: 'error', error: { category: 'invalid-argument', code: 'idempotency-key-reused', retryable: false } });
      const other = await guard.run({ key: 'k', tool: 'u', args: { a: 1 }, toolCallId: 'c3' }, async () => success(3));
      expect(other.outcome.error?.code).toBe('idempotency-key-reused');
      // Concurrent: same key, different args, in flight at once.
      const [x, y] = await Promise.all([
        guard.run({ key: 'k2', tool: 't', args: { a: 1 }, toolCallId: 'c4' }, async () => success(4)),
        guard.run({ key: 'k2', tool: 't', args: { a: 9 }, toolCallId: 'c5' }, async () => success(5)),
      ]);
      expect(x.executed).toBe(true);
      expect(y.outcome.error?.code).toBe('idempotency-key-reused');
    });

    it('stores failures too: a repeat replays the failure instead of running again', async () => {
      const { store } = await open();
      const guard = new IdempotencyGuard(store);
      let runs = 0;
      const exec = async (): Promise<ToolOutcome> => (runs++, { status: 'error', error: { category: 'timeout', code: 'deadline-exceeded', detail: 'slow' } });
      await guard.run({ key: 'f', tool: 't', args: {}, toolCallId: 'c1' }, exec);
      const again = await guard.run({ key: 'f', tool: 't', args: {}, toolCallId: 'c2' }, exec);
      expect(runs).toBe(1);
      expect(again).toMatchObject({ replay: true, outcome: { status: 'error', error: { code: 'deadline-exceeded' }, metadata: { replay: true } } });
    });

    it('frees the key when execute throws (the call never ran)', async () => {
      const { store } = await open();
      const guard = new IdempotencyGuard(store);
      await expect(guard.run({ key: 'x', tool: 't', args: {}, toolCallId: 'c1' }, async () => Promise.reject(new Error('closed session')))).rejects.toThrow(
        'closed session',
      );
      const r = await guard.run({ key: 'x', tool: 't', args: {}, toolCallId: 'c2' }, async () => success('ran'));
      expect(r).toMatchObject({ executed: true, outcome: { result: 'ran' } });
    });

    it('refuses bad keys without running', async () => {
      const { store } = await open();
      const guard = new IdempotencyGuard(store);
      for (const key of ['', 'k'.repeat(513), 42 as unknown as string]) {
        const r = await guard.run({ key, tool: 't', args: {}, toolCallId: 'c' }, async () => success(1));
        expect(r.outcome.error?.code).toBe('invalid-idempotency-key');
      }
    });

    it('gives up waiting for a claim that never completes', async () => {
      const { store } = await open();
      await store.claimIdempotency({ key: 'stuck', fingerprint: requestFingerprint('t', {}), tool: 't', toolCallId: 'c0', claimToken: 'other', createdAt: 0 });
      const guard = new IdempotencyGuard(store, { waitTimeoutMs: 100, pollMs: 10 });
      let ran = false;
      const r = await guard.run({ key: 'stuck', tool: 't', args: {}, toolCallId: 'c1' }, async () => ((ran = true), success(1)));
      expect(ran).toBe(false);
      expect(r.outcome).toMatchObject({ status: 'error', error: { category: 'timeout', code: 'idempotency-key-in-flight', retryable: true } });
    });

    itDurable('replays across a restart', async () => {
      const h = await open();
      await new IdempotencyGuard(h.store).run({ key: 'r', tool: 't', args: { v: 1 }, toolCallId: 'c1' }, async () => success({ made: 1 }));
      await h.store.close();
      const again = await h.reopen!();
      cleanups.push(() => again.close());
      let ran = false;
      const r = await new IdempotencyGuard(again).run({ key: 'r', tool: 't', args: { v: 1 }, toolCallId: 'c2' }, async () => ((ran = true), success(2)));
      expect(ran).toBe(false);
      expect(r).toMatchObject({ replay: true, originalToolCallId: 'c1', outcome: { result: { made: 1 } } });
    });

    itDurable('two guards on two handles of one store (as two processes would) execute once', async () => {
      const h = await open();
      const second = await h.reopen!();
      cleanups.push(() => second.close());
      const guards = [new IdempotencyGuard(h.store, { pollMs: 5 }), new IdempotencyGuard(second, { pollMs: 5 })];
      let runs = 0;
      const results = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          guards[i % 2]!.run({ key: 'shared', tool: 't', args: {}, toolCallId: `c${i}` }, async () => {
            runs++;
            await new Promise((r) => setTimeout(r, 30));
            return success('once');
          }),
        ),
      );
      expect(runs).toBe(1);
      expect(results.every((r) => r.outcome.result === 'once')).toBe(true);
    });

    it('reports a store outage as a failure without running', async () => {
      const { store } = await open();
      await store.close();
      let ran = false;
      const r = await new IdempotencyGuard(store).run({ key: 'k', tool: 't', args: {}, toolCallId: 'c' }, async () => ((ran = true), success(1)));
      expect(ran).toBe(false);
      expect(r.outcome).toMatchObject({ status: 'error', error: { category: 'internal', code: 'idempotency-store-failure', retryable: true } });
    });
  });
}

guardSuite('memory', async () => ({ store: createMemoryStore(), reopen: undefined, cleanup: async () => {} }), false);
guardSuite(
  'sqlite',
  async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-idem-'));
    const file = path.join(dir, 'i.db');
    return {
      store: await openSqliteStore({ path: file }),
      reopen: () => openSqliteStore({ path: file }),
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
  true,
);
describePg('idempotency on postgres', (url) => {
  guardSuite(
    'postgres',
    async () => {
      const schema = freshSchema();
      return {
        store: await openPostgresStore({ connectionString: url, schema }),
        reopen: () => openPostgresStore({ connectionString: url, schema }),
        cleanup: () => dropSchema(url, schema),
      };
    },
    true,
  );
});
