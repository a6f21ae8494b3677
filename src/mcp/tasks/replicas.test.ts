// Two gateway replicas on one PostgreSQL store, in front of one upstream both reach (as an HTTP
// upstream would be): a handle issued by one is served by the other, to its owner only. And the one
// claim on a task's end, on SQLite (two connections to one file) and PostgreSQL: the creating
// replica's watch and another replica's tasks/get race for it, and only the winner reports the end.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import type { JsonObject } from '../../core/index.js';
import { type PostgresStore, openPostgresStore } from '../../store/postgres/index.js';
import { openSqliteStore } from '../../store/sqlite/index.js';
import type { Store } from '../../store/types.js';
import { describePg, dropSchema, freshSchema } from '../../store/test-support/pg.js';
import { envelopeIn, startTaskUpstream } from '../test-support/task-upstream.js';
import type { TaskCaller } from './handles.js';
import { type TaskFinal, TaskRpcError, type TaskRouter, type TaskRouterOptions, createTaskRouter } from './router.js';

describePg('tasks: a handle across two replicas on one PostgreSQL store', (url) => {
  const schema = freshSchema();
  let up: Awaited<ReturnType<typeof startTaskUpstream>>;
  const stores: PostgresStore[] = [];
  const routers: TaskRouter[] = [];
  const alice: TaskCaller = { tenant: 'acme', principal: 'user:alice' };

  beforeAll(async () => {
    up = await startTaskUpstream(400);
    for (let i = 0; i < 2; i++) {
      const store = await openPostgresStore({ connectionString: url, schema, chainKey: false });
      stores.push(store);
      routers.push(
        createTaskRouter({ taskHandles: store.taskHandles, upstream: (n) => (n === 'jobs' ? up.upstream : undefined), envelope: envelopeIn('contextos') }),
      );
    }
  }, 60_000);

  afterAll(async () => {
    await up?.close();
    for (const s of stores) await s.close();
    await dropSchema(url, schema);
  });

  it('replica B serves the owner of a handle replica A issued, and answers anyone else as unknown', async () => {
    const [a, b] = routers as [TaskRouter, TaskRouter];
    const created = await a.callTool(
      up.upstream,
      'jobs_slow_report',
      { name: 'slow_report', arguments: { topic: 'pg' } },
      { caller: alice, declaresTasks: true, deadlineMs: 10_000 },
    );
    if (created.kind !== 'task') throw new Error(`expected a task, got ${created.kind}`);
    const taskId = created.task.taskId as string;
    const get = (r: TaskRouter, caller: TaskCaller) => r.request('tasks/get', { taskId }, { caller, declaresTasks: true });
    const bob = await get(b, { tenant: 'acme', principal: 'user:bob' }).catch((e: unknown) => e);
    expect(bob).toBeInstanceOf(TaskRpcError);
    expect(bob).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task not found' });
    let task: JsonObject = await get(b, alice);
    for (let i = 0; i < 200 && task.status === 'working'; i++) {
      await new Promise((r) => setTimeout(r, 30));
      task = await get(b, alice);
    }
    expect(task.status).toBe('completed');
    const result = task.result as JsonObject;
    expect(result.content).toEqual([{ type: 'text', text: 'report for pg' }]);
    expect(oracleValidate('contextos-result', result.structuredContent).errors).toEqual([]);
  });
});

/**
 * The claim on a task's end between two replicas on one store: `stores()` opens two stores on it
 * (two connections, as two processes have).
 */
function claimSuite(name: string, stores: () => Promise<[Store, Store]>) {
  describe(name, () => {
    let up: Awaited<ReturnType<typeof startTaskUpstream>>;
    let pair: [Store, Store];
    const alice: TaskCaller = { tenant: 'acme', principal: 'user:alice' };
    const made: TaskRouter[] = [];
    beforeAll(async () => {
      up = await startTaskUpstream(300);
      pair = await stores();
    }, 60_000);
    afterAll(async () => {
      for (const r of made) r.close();
      await up?.close();
      for (const s of pair ?? []) await s.close();
    });

    const router = (store: Store, finals: TaskFinal[], extra: Partial<TaskRouterOptions> = {}) => {
      const r = createTaskRouter({
        taskHandles: store.taskHandles,
        upstream: (n) => (n === 'jobs' ? up.upstream : undefined),
        envelope: envelopeIn('contextos'),
        onFinal: (f) => finals.push(f),
        ...extra,
      });
      made.push(r);
      return r;
    };
    const create = async (r: TaskRouter, topic: string) => {
      const created = await r.callTool(
        up.upstream,
        'jobs_slow_report',
        { name: 'slow_report', arguments: { topic } },
        { caller: alice, declaresTasks: true, deadlineMs: 10_000, context: { auditId: `aud_${topic}` } },
      );
      if (created.kind !== 'task') throw new Error(`expected a task, got ${created.kind}`);
      return created;
    };
    const get = (r: TaskRouter, taskId: string) => r.request('tasks/get', { taskId }, { caller: alice, declaresTasks: true });

    it("the creating replica's watch wins the end: another replica's tasks/get reads it and reports nothing", async () => {
      const [finalsA, finalsB] = [[] as TaskFinal[], [] as TaskFinal[]];
      const [a, b] = [router(pair[0], finalsA), router(pair[1], finalsB)];
      const created = await create(a, 'watched');
      const end = await created.end();
      expect(end).toMatchObject({ status: 'completed' });
      const task = await get(b, created.task.taskId as string);
      expect(task.status).toBe('completed');
      expect(await get(a, created.task.taskId as string)).toMatchObject({ status: 'completed' });
      expect([...finalsA, ...finalsB]).toEqual([]);
    });

    it("another replica's tasks/get wins the end: it reports it once, with the creation's context; the watch records nothing", async () => {
      const [finalsA, finalsB] = [[] as TaskFinal[], [] as TaskFinal[]];
      // A watch that would not poll for a minute: the end is seen elsewhere first.
      const a = router(pair[0], finalsA, { pollMinMs: 60_000, pollMaxMs: 60_000 });
      const b = router(pair[1], finalsB);
      const created = await create(a, 'served');
      const watched = created.end();
      const taskId = created.task.taskId as string;
      let task: JsonObject = await get(b, taskId);
      for (let i = 0; i < 300 && task.status === 'working'; i++) {
        await new Promise((r) => setTimeout(r, 20));
        task = await get(b, taskId);
      }
      expect(task.status).toBe('completed');
      expect(finalsB).toHaveLength(1);
      expect(finalsB[0]).toMatchObject({ tool: 'jobs_slow_report', status: 'completed', context: { auditId: 'aud_served' }, upstream: 'jobs' });
      expect(finalsB[0]?.end).toMatchObject({ status: 'completed', result: { structuredContent: { topic: 'served' } } });
      // The creating replica's own tasks/get sees the end is another's: its watch stops with nothing to record.
      expect((await get(a, taskId)).status).toBe('completed');
      expect(await watched).toBeUndefined();
      for (let i = 0; i < 3; i++) await get(b, taskId);
      expect(finalsA).toEqual([]);
      expect(finalsB).toHaveLength(1);
    });
  });
}

const sqliteDir = mkdtempSync(join(tmpdir(), 'te-task-claims-'));
claimSuite('tasks: the claim on an end, two connections to one SQLite file', async () => {
  const file = join(sqliteDir, 'claims.db');
  const first = await openSqliteStore({ path: file, chainKey: false, auditWorker: false });
  return [first, await openSqliteStore({ path: file, chainKey: false, auditWorker: false })];
});

describePg('tasks: the claim on an end, two pools on one PostgreSQL schema', (url) => {
  const schema = freshSchema();
  afterAll(() => dropSchema(url, schema));
  claimSuite('on PostgreSQL', async () => [
    await openPostgresStore({ connectionString: url, schema, chainKey: false }),
    await openPostgresStore({ connectionString: url, schema, chainKey: false }),
  ]);
});
