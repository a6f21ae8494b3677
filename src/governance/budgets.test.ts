// Rate budgets and quotas through the governance pipeline, counted in a real store (memory, a SQLite
// file, PostgreSQL): N+k calls run N times, the refused ones say when to retry, a quota starts over
// at its window, and only calls that run are counted (not denied, refused, paused or replayed ones).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { encodeContextosResult } from '../core/contracts/contextos.js';
import { encodeDw } from '../core/contracts/dw.js';
import type { JsonObject } from '../core/json.js';
import type { ToolCall, ToolOutcome } from '../core/model.js';
import { createMemoryStore } from '../store/memory.js';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { describePg, dropSchema, freshSchema } from '../store/test-support/pg.js';
import type { Store } from '../store/types.js';
import { GovernancePipeline } from './pipeline.js';
import type { GovernedCall } from './pipeline-types.js';
import { compilePolicy } from './policy.js';
import type { PolicyDocument } from './policy-types.js';

const operatorKey = operatorKeyFromSecret(Buffer.alloc(32, 5));
/** A window no run of the test crosses the end of (epoch-aligned: 2001-09-09 to 2033-05-18). */
const WINDOW = 1_000_000_000_000;
let n = 0;
const call = (over: Partial<GovernedCall> = {}): GovernedCall => {
  n++;
  return {
    tool: 'fetch',
    ceiling: 'read_only',
    args: { n },
    principalChain: [{ kind: 'user', id: 'alice', tenant_id: 'acme' }],
    toolCallId: `c${n}`,
    runId: `r${n}`,
    traceId: `t${n}`,
    ...over,
  };
};

function suite(name: string, open: () => Promise<Store>): void {
  describe(`budgets through the pipeline: ${name}`, () => {
    let store: Store;
    let ran: string[];
    const execute = async (c: ToolCall): Promise<ToolOutcome> => {
      ran.push(c.capabilityId);
      return { status: 'ok', result: { ran: true } };
    };
    const pipeline = async (doc: PolicyDocument): Promise<GovernancePipeline> => {
      store = await open();
      ran = [];
      return new GovernancePipeline({ store, policy: compilePolicy(doc), operatorKey });
    };
    afterEach(async () => {
      vi.useRealTimers();
      await store?.close();
    });

    it('N+k concurrent calls: N run, k are blocked with budget-exhausted and when to retry', async () => {
      const p = await pipeline({ version: 1, rules: [{ name: 'fetch', match: { tool: 'fetch' }, effect: 'allow', rateBudget: { calls: 7, perMs: WINDOW } }] });
      const before = Date.now();
      const outcomes = await Promise.all(Array.from({ length: 12 }, () => p.run(call(), execute)));
      expect(ran).toHaveLength(7);
      expect(outcomes.filter((o) => o.status === 'ok')).toHaveLength(7);
      const refused = outcomes.filter((o) => o.status !== 'ok');
      expect(refused).toHaveLength(5);
      const windowEnd = (Math.floor(before / WINDOW) + 1) * WINDOW;
      for (const o of refused) {
        expect(o.status).toBe('blocked');
        expect(o.error).toMatchObject({
          category: 'elevation',
          code: 'budget-exhausted',
          retryable: true,
          details: { rule: 'fetch', limit: 7, windowMs: WINDOW },
        });
        // The hint points at the end of the window, within the time the calls took.
        expect(o.error!.retryAfterMs).toBeLessThanOrEqual(windowEnd - before);
        expect(o.error!.retryAfterMs).toBeGreaterThan(windowEnd - Date.now() - 1);
        expect(o.error!.details?.retryNotBefore).toBe(new Date(windowEnd).toISOString());
        // The contracts that carry a retry hint carry it.
        expect((encodeContextosResult(o).metadata as { error: Record<string, unknown> }).error).toMatchObject({
          code: 'budget-exhausted',
          retry_after_ms: o.error!.retryAfterMs,
        });
        expect((encodeDw(o) as unknown as { error: Record<string, unknown> }).error.retry_after_ms).toBe(o.error!.retryAfterMs);
      }
      await p.flush();
      expect(await store.countAudit({ status: 'blocked' })).toBe(5);
      await p.close();
    });

    it('a quota starts over at its window: the next UTC day', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(new Date('2026-03-01T23:59:59.000Z'));
      const p = await pipeline({
        version: 1,
        rules: [{ name: 'daily', match: { tool: 'fetch' }, effect: 'allow', quotas: [{ calls: 2, per: 'day', scope: 'tenant' }] }],
      });
      const statuses = async (k: number) => {
        const out: string[] = [];
        for (let i = 0; i < k; i++) out.push((await p.run(call(), execute)).status);
        return out;
      };
      expect(await statuses(3)).toEqual(['ok', 'ok', 'blocked']);
      const last = await p.run(call(), execute);
      expect(last.error).toMatchObject({ code: 'budget-exhausted', retryAfterMs: 1000, details: { retryNotBefore: '2026-03-02T00:00:00.000Z' } });
      // Another tenant has its own quota.
      expect((await p.run(call({ principalChain: [{ kind: 'user', id: 'bob', tenant_id: 'globex' }] }), execute)).status).toBe('ok');
      vi.setSystemTime(new Date('2026-03-02T00:00:00.000Z'));
      expect(await statuses(3)).toEqual(['ok', 'ok', 'blocked']);
      expect(ran).toHaveLength(5);
      await p.close();
    });

    it('counts only calls that run: not denied, refused, paused or replayed ones', async () => {
      const p = await pipeline({
        version: 1,
        rules: [
          { name: 'gate', match: { tool: 'fetch' }, when: 'has(args.pause)', effect: 'require-approval' },
          {
            name: 'w',
            match: { tool: 'fetch' },
            effect: 'allow',
            egress: { allow: ['ok.example'], argPaths: ['url'] },
            rateBudget: { calls: 2, perMs: 3_600_000, scope: 'global' },
          },
        ],
      });
      const w = (args: JsonObject, idempotencyKey?: string) =>
        p.run(call({ ceiling: 'local_write', args, ...(idempotencyKey && { idempotencyKey }) }), execute);
      expect((await w({ url: 'https://ok.example/' })).error?.code).toBe('idempotency-key-required');
      expect((await w({ url: 'https://evil.example/' }, 'k0')).status).toBe('blocked');
      expect((await w({ url: 'https://ok.example/', pause: true }, 'kp')).status).toBe('paused');
      expect((await w({ url: 'https://ok.example/' }, 'k1')).status).toBe('ok');
      expect((await w({ url: 'https://ok.example/' }, 'k1')).metadata).toMatchObject({ replay: true });
      expect((await w({ url: 'https://ok.example/' }, 'k2')).status).toBe('ok');
      const full = await w({ url: 'https://ok.example/' }, 'k3');
      expect(full.error?.code).toBe('budget-exhausted');
      // The refusal freed its key: a retry is refused again (not a replay of the refusal) and nothing ran.
      const again = await w({ url: 'https://ok.example/' }, 'k3');
      expect(again.error?.code).toBe('budget-exhausted');
      expect(again.metadata?.replay).toBeUndefined();
      expect(ran).toEqual(['fetch', 'fetch']);
      await p.close();
    });

    it('a per-principal budget counts the verified chain: declared entries buy no fresh budget', async () => {
      const p = await pipeline({ version: 1, rules: [{ effect: 'allow', rateBudget: { calls: 2, perMs: 3_600_000, scope: 'principal' } }] });
      const as = (declared: string) =>
        p.run(
          call({
            principalChain: [
              { kind: 'user', id: 'alice' },
              { kind: 'agent', id: declared },
            ],
            verifiedPrincipals: 1,
          }),
          execute,
        );
      expect([(await as('a')).status, (await as('b')).status, (await as('c')).status]).toEqual(['ok', 'ok', 'blocked']);
      await p.close();
    });

    it('a call whose budget the store cannot count does not run', async () => {
      const p = await pipeline({ version: 1, rules: [{ effect: 'allow', rateBudget: { calls: 2, perMs: 1000 } }] });
      await store.close();
      const o = await p.run(call(), execute);
      expect(o.error).toMatchObject({ category: 'internal', code: 'budget-store-failure', retryable: true });
      expect(ran).toEqual([]);
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'te-gov-budgets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

suite('memory', async () => createMemoryStore());
suite('SQLite', async () => openSqliteStore({ path: join(dir, `${++n}.db`), chainKey: false }));
describePg('budgets through the pipeline: PostgreSQL', (url) => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const s of schemas) await dropSchema(url, s);
  });
  suite('PostgreSQL', async () => {
    const schema = freshSchema();
    schemas.push(schema);
    return openPostgresStore({ connectionString: url, schema, chainKey: false });
  });
});
