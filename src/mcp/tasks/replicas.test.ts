// Two gateway replicas on one PostgreSQL store, in front of one upstream both reach (as an HTTP
// upstream would be): a handle issued by one is served by the other, to its owner only.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import type { JsonObject } from '../../core/index.js';
import { type PostgresStore, openPostgresStore } from '../../store/postgres/index.js';
import { describePg, dropSchema, freshSchema } from '../../store/test-support/pg.js';
import { envelopeIn, startTaskUpstream } from '../test-support/task-upstream.js';
import type { TaskCaller } from './handles.js';
import { TaskRpcError, type TaskRouter, createTaskRouter } from './router.js';

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
