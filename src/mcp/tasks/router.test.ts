// The router in front of a real modern-era upstream process with the tasks extension (the SDK
// v2 client over stdio), on a real SQLite file: what the gateway calls for tools/call and tasks/*.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import type { JsonObject } from '../../core/index.js';
import { type SqliteStore, openSqliteStore } from '../../store/sqlite/index.js';
import { envelopeIn, startTaskUpstream } from '../test-support/task-upstream.js';
import { type TaskCaller, isTaskHandleShape, mintTaskHandle } from './handles.js';
import { type TaskFinal, TaskRpcError, type TaskRouter, type TaskUpstream, createTaskRouter, declaresTasks, tasksExtensionFor } from './router.js';

const TASK_MS = 1_500;
const dir = mkdtempSync(path.join(tmpdir(), 'te-tasks-'));
const file = path.join(dir, 'tasks.db');

const alice: TaskCaller = { tenant: 'acme', principal: 'user:alice' };
const others: [string, TaskCaller][] = [
  ['another principal of the tenant', { tenant: 'acme', principal: 'user:bob' }],
  ['the same principal in another tenant', { tenant: 'globex', principal: 'user:alice' }],
  ['the same principal in another session', { tenant: 'acme', principal: 'user:alice', session: 's-2' }],
];

const toMcec = envelopeIn('mcec');
// Every envelope call's `first` flag and every onFinal report, by tool call id of the context.
const firsts: boolean[] = [];
const finals: TaskFinal[] = [];
const envelope = (result: JsonObject, task?: { first: boolean }): JsonObject => {
  if (task) firsts.push(task.first);
  return toMcec(result);
};

let up: Awaited<ReturnType<typeof startTaskUpstream>>;
let upstream: TaskUpstream;
let store: SqliteStore;
let router: TaskRouter;

const open = async () => {
  store = await openSqliteStore({ path: file, chainKey: false, auditWorker: false });
  router = createTaskRouter({
    taskHandles: store.taskHandles,
    upstream: (n) => (n === upstream.name ? upstream : undefined),
    envelope,
    onFinal: (f) => finals.push(f),
  });
};

beforeAll(async () => {
  up = await startTaskUpstream(TASK_MS);
  upstream = up.upstream;
  await open();
}, 60_000);

afterAll(async () => {
  await up?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const call = (ctx: { caller?: TaskCaller; declares: boolean; deadlineMs?: number }, topic: string) =>
  router.callTool(
    upstream,
    'jobs_slow_report',
    { name: 'slow_report', arguments: { topic } },
    { caller: ctx.caller ?? alice, declaresTasks: ctx.declares, deadlineMs: ctx.deadlineMs ?? 10_000 },
  );
const get = (caller: TaskCaller, taskId: unknown, declares = true) =>
  router.request('tasks/get', { taskId } as JsonObject, { caller, declaresTasks: declares });
const untilDone = async (caller: TaskCaller, handle: string): Promise<JsonObject> => {
  for (let i = 0; i < 200; i++) {
    const task = await get(caller, handle);
    if (task.status !== 'working') return task;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the task never finished');
};
const rpcError = async (p: Promise<unknown>): Promise<{ code: number; message: string }> => {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(TaskRpcError);
  return { code: (e as TaskRpcError).code, message: (e as TaskRpcError).message };
};

describe('tasks through the router, in front of a real upstream with the extension', () => {
  it('is advertised only when an upstream has the extension, and reads the per-request declaration', () => {
    expect(upstream.tasks).toBe(true);
    expect(tasksExtensionFor([upstream])).toEqual({ 'io.modelcontextprotocol/tasks': {} });
    expect(tasksExtensionFor([{ tasks: false }])).toBeUndefined();
    expect(declaresTasks({ _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } } })).toBe(true);
    expect(declaresTasks({ _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: {} } } })).toBe(false);
    expect(declaresTasks({})).toBe(false);
  });

  it('with the extension: a handle at once (not the upstream id), then the enveloped final result, valid under the oracle', async () => {
    const answer = await call({ declares: true }, 'q1');
    expect(answer.kind).toBe('task');
    if (answer.kind !== 'task') return;
    const handle = answer.task.taskId as string;
    expect(answer.task).toMatchObject({ resultType: 'task', status: 'working' });
    expect(isTaskHandleShape(handle)).toBe(true);
    // Nothing of the upstream's own task id or _meta reaches the caller.
    expect(JSON.stringify(answer.task)).not.toMatch(/task-\d|serverInfo/);

    expect(await get(alice, handle)).toMatchObject({ taskId: handle, status: 'working' });
    const done = await untilDone(alice, handle);
    expect(done.status).toBe('completed');
    expect(done.taskId).toBe(handle);
    const result = done.result as JsonObject;
    expect(result.isError).toBe(false);
    expect(result.content).toEqual([{ type: 'text', text: 'report for q1' }]);
    expect(result.structuredContent).toMatchObject({ ok: true, result: { topic: 'q1', pages: 3 } });
    expect(oracleValidate('mcec', result.structuredContent).errors).toEqual([]);
  });

  it('without the extension: no task object, the final result after the gateway polled for it', async () => {
    const t0 = Date.now();
    const answer = await call({ declares: false }, 'q2');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(TASK_MS - 50);
    expect(answer).toEqual({ kind: 'final', result: { content: [{ type: 'text', text: 'report for q2' }], structuredContent: { topic: 'q2', pages: 3 } } });
    if (answer.kind !== 'final') return;
    const enveloped = envelope(answer.result);
    expect(oracleValidate('mcec', enveloped.structuredContent).errors).toEqual([]);
  });

  it('without the extension, past the call deadline: a timeout, on time, and the upstream task is cancelled', async () => {
    const t0 = Date.now();
    const answer = await call({ declares: false, deadlineMs: 150 }, 'q3');
    // On time: at the deadline plus at most one poll interval and scheduling on a loaded machine.
    expect(Date.now() - t0).toBeLessThan(150 + 1_000);
    expect(answer.kind).toBe('timeout');
    if (answer.kind !== 'timeout') return;
    // The upstream's own view: the task was cancelled, not left running.
    await new Promise((r) => setTimeout(r, 100));
    const raw = await upstream.dispatch.request(
      'tasks/get',
      { taskId: answer.upstreamTaskId, _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } } },
      { timeoutMs: 5_000 },
    );
    expect(raw.result?.status).toBe('cancelled');
  });

  it('a caller that does not declare the extension gets -32021 on tasks/*, even with a valid handle', async () => {
    const answer = await call({ declares: true }, 'q4');
    if (answer.kind !== 'task') throw new Error(`expected a task, got ${answer.kind}`);
    const e = await rpcError(get(alice, answer.task.taskId, false));
    expect(e.code).toBe(-32021);
  });

  it('the handle is useless to another caller: answered exactly as an unknown handle, and it cancels nothing', async () => {
    const answer = await call({ declares: true }, 'q5');
    if (answer.kind !== 'task') throw new Error(`expected a task, got ${answer.kind}`);
    const handle = answer.task.taskId as string;
    const unknown = await rpcError(get(alice, mintTaskHandle()));
    expect(unknown).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found' });
    for (const [, other] of others) {
      expect(await rpcError(get(other, handle))).toEqual(unknown);
      expect(await rpcError(router.request('tasks/cancel', { taskId: handle }, { caller: other, declaresTasks: true }))).toEqual(unknown);
      expect(await rpcError(router.request('tasks/update', { taskId: handle, inputResponses: {} }, { caller: other, declaresTasks: true }))).toEqual(unknown);
    }
    // The upstream's own id, junk and oversized strings: the same answer, never a store lookup.
    for (const junk of ['task-1', '', 'x'.repeat(100_000), 42, null, { taskId: handle }]) expect(await rpcError(get(alice, junk))).toEqual(unknown);
    expect((await untilDone(alice, handle)).status).toBe('completed');
  });

  it('guessing handles fails: random handles and one-character changes of a real one are unknown', async () => {
    const answer = await call({ declares: true }, 'q6');
    if (answer.kind !== 'task') throw new Error(`expected a task, got ${answer.kind}`);
    const handle = answer.task.taskId as string;
    const guesses = Array.from({ length: 200 }, () => mintTaskHandle());
    for (let i = 4; i < handle.length; i += 4) guesses.push(handle.slice(0, i) + (handle[i] === 'A' ? 'B' : 'A') + handle.slice(i + 1));
    for (const guess of guesses) expect((await rpcError(get(alice, guess))).code).toBe(-32602);
    expect((await get(alice, handle)).taskId).toBe(handle);
  });

  it('input: the inputRequests reach the owner through the handle, its tasks/update answers them, the task completes', async () => {
    const answer = await router.callTool(
      upstream,
      'jobs_ask_name',
      { name: 'ask_name', arguments: {} },
      { caller: alice, declaresTasks: true, deadlineMs: 10_000 },
    );
    if (answer.kind !== 'task') throw new Error(`expected a task, got ${answer.kind}`);
    const handle = answer.task.taskId as string;
    const waiting = await untilDone(alice, handle);
    expect(waiting.status).toBe('input_required');
    expect(waiting.inputRequests).toMatchObject({ name: { method: 'elicitation/create', params: { message: 'Please enter your name.' } } });
    // Another caller's answer goes nowhere.
    const bob: TaskCaller = { tenant: 'acme', principal: 'user:bob' };
    const update = (caller: TaskCaller, name: string) =>
      router.request('tasks/update', { taskId: handle, inputResponses: { name: { action: 'accept', content: { name } } } }, { caller, declaresTasks: true });
    expect((await rpcError(update(bob, 'Mallory'))).code).toBe(-32602);
    expect((await get(alice, handle)).status).toBe('input_required');
    expect(await update(alice, 'Luca')).toEqual({});
    const done = await get(alice, handle);
    expect(done.status).toBe('completed');
    expect((done.result as JsonObject).content).toEqual([{ type: 'text', text: 'Hello, Luca!' }]);
    expect(oracleValidate('mcec', (done.result as JsonObject).structuredContent).errors).toEqual([]);
  });

  it('input, for a caller without the extension: the gateway cannot ask, so the task is cancelled and the call fails with -32021', async () => {
    const answer = await router.callTool(
      upstream,
      'jobs_ask_name',
      { name: 'ask_name', arguments: {} },
      { caller: alice, declaresTasks: false, deadlineMs: 10_000 },
    );
    expect(answer.kind).toBe('rpc-error');
    if (answer.kind !== 'rpc-error') return;
    expect(answer.error.code).toBe(-32021);
  });

  it("a task's end is reported once, however often its owner polls it", async () => {
    const answer = await router.callTool(
      upstream,
      'jobs_slow_report',
      { name: 'slow_report', arguments: { topic: 'once' } },
      { caller: alice, declaresTasks: true, deadlineMs: 10_000, context: { toolCallId: 'tc-once' } },
    );
    if (answer.kind !== 'task') throw new Error(`expected a task, got ${answer.kind}`);
    const handle = answer.task.taskId as string;
    firsts.length = 0;
    const before = finals.length;
    expect((await untilDone(alice, handle)).status).toBe('completed');
    for (let i = 0; i < 3; i++) expect((await get(alice, handle)).status).toBe('completed');
    expect(firsts).toEqual([true, false, false, false]);
    const reported = finals.slice(before);
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ tool: 'jobs_slow_report', context: { toolCallId: 'tc-once' }, status: 'completed' });
    expect(oracleValidate('mcec', reported[0]?.result?.structuredContent).errors).toEqual([]);
  });

  it('its owner can cancel it; the handle then reads the cancelled task', async () => {
    const answer = await call({ declares: true }, 'q7');
    if (answer.kind !== 'task') throw new Error(`expected a task, got ${answer.kind}`);
    const handle = answer.task.taskId as string;
    expect(await router.request('tasks/cancel', { taskId: handle }, { caller: alice, declaresTasks: true })).toEqual({});
    expect((await get(alice, handle)).status).toBe('cancelled');
  });

  it('the mapping survives a gateway restart (a new router on a reopened SQLite file)', async () => {
    const answer = await call({ declares: true }, 'q8');
    if (answer.kind !== 'task') throw new Error(`expected a task, got ${answer.kind}`);
    const handle = answer.task.taskId as string;
    await store.close();
    await open();
    const done = await untilDone(alice, handle);
    expect(done.status).toBe('completed');
    expect((done.result as JsonObject).content).toEqual([{ type: 'text', text: 'report for q8' }]);
    expect(oracleValidate('mcec', (done.result as JsonObject).structuredContent).errors).toEqual([]);
    expect(await rpcError(get({ tenant: 'acme', principal: 'user:bob' }, handle))).toEqual({
      code: -32602,
      message: 'Failed to retrieve task: Task not found',
    });
  });
});
