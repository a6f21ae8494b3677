// A paused call as a task (#37): the real gateway (governance, `approvalTasks`) on a real SQLite file
// over Streamable HTTP with bearer tokens, in front of test-support/counting-server.mjs (logs every
// execution to a file); pinned v2 SDK clients declaring the tasks extension per request (raw dispatch
// beside the client, as in calls.test.ts); approvals decided by the CLI's verb run in-process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import * as audit from '../../cli/audit.js';
import { runVerb } from '../../cli/test-support/run-verb.js';
import type { JsonObject } from '../../core/json.js';
import { Gateway } from '../gateway/gateway.js';
import { GatewayGovernance } from '../gateway/governor.js';
import { type HttpEndpoint, serveHttp } from '../serve/http.js';
import { executions } from '../test-support/count-file.js';
import { countingUpstream, useCountingRig } from '../test-support/counting-rig.js';
import { silent } from '../test-support/harness.js';
import { TASKS, connectTasks, declared, rawCall, taskAuth } from '../test-support/task-clients.js';
import type { TaskDispatch } from './index.js';

const closers: (() => Promise<unknown>)[] = [];
const rig = useCountingRig();
let gw: Gateway;
let endpoint: HttpEndpoint;

beforeAll(async () => {
  const governance = new GatewayGovernance({ store: rig.store, approvalPollMs: 50 });
  gw = await Gateway.start({
    upstreams: [countingUpstream(rig.count)],
    governance,
    taskHandles: rig.store.taskHandles,
    approvalTasks: true,
    log: silent,
  });
  endpoint = await serveHttp((session) => gw.createServer(session), { port: 0, auth: taskAuth });
}, 60_000);
afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
  await endpoint?.close();
  await gw?.close();
});

/** A declaring call of delete_item: the task the gateway answers with, and the approval id its message names. */
async function pausedTask(dispatch: TaskDispatch, id: string): Promise<{ handle: string; approvalId: string; task: JsonObject }> {
  const created = await rawCall(dispatch, 'tools/call', { name: 'delete_item', arguments: { id }, ...declared });
  expect(created.error).toBeUndefined();
  const task = created.result as JsonObject;
  expect(task).toMatchObject({ resultType: 'task', status: 'working' });
  const handle = String(task.taskId);
  expect(handle).toMatch(/^teh_[A-Za-z0-9_-]{43}$/);
  const approvalId = /\((apr_[^)]+)\)/.exec(String(task.statusMessage))?.[1];
  expect(approvalId).toBeDefined();
  expect((await rig.store.getApproval(approvalId!))?.state).toBe('pending');
  return { handle, approvalId: approvalId!, task };
}

/** `tasks/get` until the task leaves `working` (the approval worker polls every 50 ms). */
async function ended(dispatch: TaskDispatch, handle: string): Promise<JsonObject> {
  let task: JsonObject | undefined;
  for (let i = 0; i < 400; i++) {
    const got = await rawCall(dispatch, 'tasks/get', { taskId: handle, ...declared });
    expect(got.error).toBeUndefined();
    task = got.result as JsonObject;
    if (task.status !== 'working') return task;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`task ${handle} still ${String(task?.status)}`);
}

describe('a paused call as a task (io.modelcontextprotocol/tasks)', () => {
  it('is advertised by a gateway with approval tasks, though no upstream runs tasks', async () => {
    expect(gw.getCapabilities().extensions).toEqual({ [TASKS]: {} });
    const { client } = await connectTasks(endpoint.url, 'alice-token', closers);
    expect(client.getServerCapabilities()?.extensions).toEqual({ [TASKS]: {} });
  });

  it('completes with the tool result after a CLI approval; the tool ran once; another principal cannot read it', async () => {
    const { dispatch } = await connectTasks(endpoint.url, 'alice-token', closers);
    const { handle, approvalId } = await pausedTask(dispatch, 'a');
    const waiting = await rawCall(dispatch, 'tasks/get', { taskId: handle, ...declared });
    expect(waiting.result).toMatchObject({ taskId: handle, status: 'working' });
    // Bob (same tenant) and Carol (another tenant) get what any unknown handle gets.
    for (const token of ['bob-token', 'carol-token']) {
      const other = await connectTasks(endpoint.url, token, closers);
      const got = await rawCall(other.dispatch, 'tasks/get', { taskId: handle, ...declared });
      expect(got.result).toBeUndefined();
      expect(got.error).toMatchObject({ code: -32602, message: 'Failed to retrieve task: Task not found' });
    }
    // Only an approver decides: the caller can neither cancel nor answer the task.
    for (const method of ['tasks/cancel', 'tasks/update']) {
      const refused = await rawCall(dispatch, method, { taskId: handle, inputResponses: {}, ...declared });
      expect(refused.error?.code).toBe(-32602);
    }
    expect(executions(rig.count, 'delete_item')).toEqual([]);

    const cli = await runVerb(audit, ['approvals', 'approve', approvalId, '--store', rig.db, '--wait', '30']);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const done = await ended(dispatch, handle);
    expect(done).toMatchObject({ taskId: handle, status: 'completed' });
    const result = done.result as JsonObject;
    expect(result.resultType).toBe('complete');
    expect(oracleValidate('mcec', result.structuredContent).errors).toEqual([]);
    expect(result.structuredContent).toMatchObject({ ok: true, result: { deleted: 'a' } });
    // Read again: the same end, and the tool still ran exactly once.
    expect((await rawCall(dispatch, 'tasks/get', { taskId: handle, ...declared })).result).toMatchObject({ status: 'completed' });
    expect(executions(rig.count, 'delete_item')).toEqual([{ id: 'a' }]);
    expect((await rig.store.getApproval(approvalId))?.state).toBe('completed');
  }, 60_000);

  it('fails with the rejection after a CLI rejection; nothing ran', async () => {
    const { dispatch } = await connectTasks(endpoint.url, 'alice-token', closers);
    const { handle, approvalId } = await pausedTask(dispatch, 'b');
    const cli = await runVerb(audit, ['approvals', 'reject', approvalId, '--store', rig.db, '--reason', 'wrong warehouse']);
    expect(cli.code).toBe(0);
    const done = await ended(dispatch, handle);
    expect(done).toMatchObject({ taskId: handle, status: 'failed', error: { code: -32000 } });
    const error = done.error as { message: string; data: { result: JsonObject } };
    expect(error.message).toMatch(/wrong warehouse/);
    const envelope = error.data.result.structuredContent as JsonObject;
    expect(oracleValidate('mcec', envelope).errors).toEqual([]);
    expect(envelope).toMatchObject({ ok: false, error: { code: 'approval-rejected' } });
    expect(executions(rig.count, 'delete_item')).toEqual([{ id: 'a' }]);
  }, 60_000);

  it('refuses an upstream named as the gateway reserves for these handles', async () => {
    const spec = { ...countingUpstream(rig.count), name: '@approval' };
    await expect(Gateway.start({ upstreams: [spec], log: silent })).rejects.toMatchObject({
      code: 'invalid-option',
      message: expect.stringMatching(/reserved/),
    });
  });

  it('a client that did not declare the extension still gets the paused envelope', async () => {
    const { dispatch } = await connectTasks(endpoint.url, 'alice-token', closers);
    const got = await rawCall(dispatch, 'tools/call', { name: 'delete_item', arguments: { id: 'c' } });
    expect(got.result?.resultType).not.toBe('task');
    expect(got.result?.structuredContent).toMatchObject({ ok: false, error: { code: 'approval-required' } });
  });
});
