import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import type { JsonObject } from '../../core/json.js';
import type { TaskDispatch } from './index.js';
import { closeTaskRig, connectTasks, declared, rawCall, v1TaskSession, type TaskRig, taskRig } from '../test-support/task-clients.js';
import { testServer } from '../test-support/task-upstream.js';
import type { UpstreamSpec } from '../upstream/upstream.js';

const TASK_MS = 300;
const jobs = (isolation: UpstreamSpec['isolation']): UpstreamSpec => ({
  name: 'jobs',
  command: process.execPath,
  args: [testServer('task-server.mjs')],
  env: { TASK_MS: String(TASK_MS), REPORT_PID: '1' },
  isolation,
});
const rigs: TaskRig[] = [];
const closers: (() => Promise<unknown>)[] = [];
let perTenant: TaskRig;
let perSession: TaskRig;
beforeAll(async () => {
  perTenant = await taskRig(jobs('tenant'));
  perSession = await taskRig(jobs('session'));
  rigs.push(perTenant, perSession);
}, 60_000);
afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
  for (const r of rigs) await closeTaskRig(r);
});

async function createTask(d: TaskDispatch, topic: string): Promise<string> {
  const created = await rawCall(d, 'tools/call', { name: 'slow_report', arguments: { topic }, ...declared });
  expect(created.error).toBeUndefined();
  expect(created.result?.resultType).toBe('task');
  return String(created.result?.taskId);
}

/** Polls a handle to its end (generous bound: a loaded machine). */
async function endOf(d: TaskDispatch, handle: string): Promise<JsonObject> {
  for (let i = 0; i < 400; i++) {
    const got = await rawCall(d, 'tasks/get', { taskId: handle, ...declared });
    expect(got.error).toBeUndefined();
    const task = got.result as JsonObject;
    if (task.status !== 'working') return task;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`task ${handle} did not end`);
}

const pidOf = (task: JsonObject) => ((task.result as JsonObject).structuredContent as { result: { pid: number } }).result.pid;

describe('tasks on isolated upstreams', () => {
  it("per tenant: each tenant's task runs, is polled and fetched on its own instance; another tenant cannot reach it", async () => {
    const alice = await connectTasks(perTenant.endpoint.url, 'alice-token', closers);
    const bob = await connectTasks(perTenant.endpoint.url, 'bob-token', closers);
    const carol = await connectTasks(perTenant.endpoint.url, 'carol-token', closers);
    const [ha, hb, hc] = await Promise.all([createTask(alice.dispatch, 'acme-a'), createTask(bob.dispatch, 'acme-b'), createTask(carol.dispatch, 'globex-c')]);
    // Carol (globex) reaches none of acme's tasks, and acme none of hers: as unknown handles.
    for (const [d, h] of [
      [carol.dispatch, ha],
      [alice.dispatch, hc],
    ] as const) {
      for (const method of ['tasks/get', 'tasks/cancel']) {
        expect((await rawCall(d, method, { taskId: h, ...declared })).error).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found' });
      }
    }
    const [ta, tb, tc] = await Promise.all([endOf(alice.dispatch, ha), endOf(bob.dispatch, hb), endOf(carol.dispatch, hc)]);
    for (const [t, topic] of [
      [ta, 'acme-a'],
      [tb, 'acme-b'],
      [tc, 'globex-c'],
    ] as const) {
      expect(t.status).toBe('completed');
      const result = t.result as JsonObject;
      expect(result.content).toEqual([{ type: 'text', text: `report for ${topic}` }]);
      expect(oracleValidate('mcec', result.structuredContent).errors).toEqual([]);
    }
    // One instance per tenant: acme's two tasks ran in one process, globex's in another.
    expect(pidOf(ta)).toBe(pidOf(tb));
    expect(pidOf(tc)).not.toBe(pidOf(ta));
    // A cancel goes to the instance that runs the task.
    const hx = await createTask(alice.dispatch, 'acme-cancel');
    expect((await rawCall(alice.dispatch, 'tasks/cancel', { taskId: hx, ...declared })).error).toBeUndefined();
    expect((await endOf(alice.dispatch, hx)).status).toBe('cancelled');
    // The ends are in the audit log, per caller.
    const until = Date.now() + 20_000;
    let ended: string[] = [];
    while (Date.now() < until && ended.length < 4) {
      await perTenant.governance.flush();
      ended = (await perTenant.store.listAudit({ tool: 'slow_report' })).records.filter((r) => r.status !== 'interrupted').map((r) => r.status);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(ended.sort()).toEqual(['error', 'ok', 'ok', 'ok']);
  }, 60_000);

  it("per session (2025 era): a session's task lives on its instance; another session of the same principal cannot reach it", async () => {
    const session = () => v1TaskSession(perSession.endpoint.url, 'alice-token', closers);
    const first = await session();
    const second = await session();
    const h1 = await createTask(first, 'session-1');
    const h2 = await createTask(second, 'session-2');
    expect((await rawCall(second, 'tasks/get', { taskId: h1, ...declared })).error?.code).toBe(-32602);
    const [t1, t2] = await Promise.all([endOf(first, h1), endOf(second, h2)]);
    expect(t1.status).toBe('completed');
    expect(t2.status).toBe('completed');
    expect(pidOf(t1)).not.toBe(pidOf(t2));
  }, 60_000);
});
