// The tasks extension through the real gateway: official v2 clients over Streamable HTTP (two bearer
// tokens, two principals) and over stdio (the built CLI), in front of the real task upstream
// (test-support/task-server.mjs, SDK v2 with io.modelcontextprotocol/tasks) on a real SQLite store,
// and in front of server-everything (2025 era), where task requests are refused, not forwarded.
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import type { JsonObject } from '../../core/json.js';
import type { Store } from '../../store/types.js';
import { tapTaskDispatch } from './index.js';
import { connectTasks, declared, rawCall, TASKS, closeTaskRig, type TaskRig, taskRig } from '../test-support/task-clients.js';
import { everythingSpec, repoRoot } from '../test-support/harness.js';
import { testServer } from '../test-support/task-upstream.js';
import type { UpstreamSpec } from '../upstream/upstream.js';

const MODERN = '2026-07-28';
const TASK_MS = 400;
const CLI = join(repoRoot, 'dist/src/cli/main.js');
const TASK_SERVER = testServer('task-server.mjs');
type Rig = TaskRig;
const rigs: Rig[] = [];
const closers: (() => Promise<unknown>)[] = [];

async function rig(upstream: UpstreamSpec): Promise<Rig> {
  const r = await taskRig(upstream);
  rigs.push(r);
  return r;
}

const connect = (url: string, token: string) => connectTasks(url, token, closers);
const call = rawCall;

let jobs: Rig;
let everything: Rig;
beforeAll(async () => {
  jobs = await rig({ name: 'jobs', command: process.execPath, args: [TASK_SERVER], env: { TASK_MS: String(TASK_MS) } });
  everything = await rig(everythingSpec());
}, 60_000);
afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
  for (const r of rigs) await closeTaskRig(r);
});

describe('tasks through the gateway (io.modelcontextprotocol/tasks)', () => {
  it('advertises the extension only in front of an upstream that routes tasks', async () => {
    expect(jobs.gw.getCapabilities().extensions).toEqual({ [TASKS]: {} });
    expect(everything.gw.getCapabilities().extensions).toBeUndefined();
    expect(everything.gw.getCapabilities().tasks).toBeUndefined();
    const { client } = await connect(jobs.endpoint.url, 'alice-token');
    expect(client.getServerCapabilities()?.extensions).toEqual({ [TASKS]: {} });
  });

  it('a declaring caller gets a handle, then the enveloped final result through tasks/get (valid MCEC)', async () => {
    const { dispatch } = await connect(jobs.endpoint.url, 'alice-token');
    const created = await call(dispatch, 'tools/call', { name: 'slow_report', arguments: { topic: 'q3' }, ...declared });
    expect(created.error).toBeUndefined();
    expect(created.result?.resultType).toBe('task');
    const handle = String(created.result?.taskId);
    // The upstream's ids are sequential numbers; the caller only ever sees a handle.
    expect(handle).toMatch(/^teh_[A-Za-z0-9_-]{43}$/);
    let task: JsonObject | undefined;
    for (let i = 0; i < 200 && task?.status !== 'completed'; i++) {
      const got = await call(dispatch, 'tasks/get', { taskId: handle, ...declared });
      expect(got.error).toBeUndefined();
      task = got.result;
      if (task?.status !== 'completed') await new Promise((r) => setTimeout(r, 25));
    }
    expect(task).toMatchObject({ taskId: handle, status: 'completed' });
    const result = task?.result as JsonObject;
    expect(result.resultType).toBe('complete');
    expect(result.content).toEqual([{ type: 'text', text: 'report for q3' }]);
    expect(result.structuredContent).toMatchObject({ ok: true, result: { topic: 'q3', pages: 3 } });
    expect(oracleValidate('mcec', result.structuredContent).errors).toEqual([]);
    // The call went through governance: audited for Alice, one record completed with the task's end
    // (tasks/ends.test.ts has the rest), without its handle.
    let mine: Awaited<ReturnType<Store['listAudit']>>['records'] = [];
    for (let i = 0; i < 200 && mine[0]?.status !== 'ok'; i++) {
      await jobs.governance.flush();
      const { records } = await jobs.store.listAudit({ tool: 'slow_report' });
      mine = records.filter((rec) => JSON.stringify(rec.callEnvelope).includes('"q3"'));
      if (mine[0]?.status !== 'ok') await new Promise((r) => setTimeout(r, 50));
    }
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ status: 'ok', resultEnvelope: { output: { topic: 'q3', pages: 3 } } });
    expect(mine[0]!.principalChain[0]).toMatchObject({ kind: 'user', id: 'alice', tenant_id: 'acme' });
    expect(JSON.stringify(mine[0])).not.toContain(handle);
  });

  it('a caller that does not declare the extension gets the enveloped final result from tools/call', async () => {
    const { client } = await connect(jobs.endpoint.url, 'bob-token');
    const t0 = Date.now();
    const result = (await client.callTool({ name: 'slow_report', arguments: { topic: 'plain' } })) as unknown as JsonObject;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(TASK_MS - 50);
    expect(result.content).toEqual([{ type: 'text', text: 'report for plain' }]);
    expect(result.structuredContent).toMatchObject({ ok: true, result: { topic: 'plain', pages: 3 } });
    expect(oracleValidate('mcec', result.structuredContent).errors).toEqual([]);
    expect(JSON.stringify(result)).not.toContain('taskId');
  });

  it("another principal's tasks/get, tasks/update and tasks/cancel on a handle read as for an unknown one", async () => {
    const alice = await connect(jobs.endpoint.url, 'alice-token');
    const bob = await connect(jobs.endpoint.url, 'bob-token');
    const created = await call(alice.dispatch, 'tools/call', { name: 'slow_report', arguments: { topic: 'mine' }, ...declared });
    const handle = String(created.result?.taskId);
    expect(handle).toMatch(/^teh_/);
    const never = `teh_${'A'.repeat(43)}`;
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      const extra: JsonObject = method === 'tasks/update' ? { inputResponses: {} } : {};
      const forBob = await call(bob.dispatch, method, { taskId: handle, ...extra, ...declared });
      const unknown = await call(bob.dispatch, method, { taskId: never, ...extra, ...declared });
      expect(forBob.error).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found' });
      expect(forBob).toEqual(unknown);
    }
    // Bob's cancel reached nothing: the task is still Alice's, and still runs to its end.
    const forAlice = await call(alice.dispatch, 'tasks/get', { taskId: handle, ...declared });
    expect(forAlice.result).toMatchObject({ taskId: handle });
    expect(forAlice.result?.status).not.toBe('cancelled');
  });

  it('a task-augmented tools/call to a 2025-era upstream (server-everything) is refused, not forwarded', async () => {
    // A 2025-11-25 session (a v1 client: initialize, Mcp-Session-Id), where `params.task` reaches the gateway.
    const v1Transport = new V1HttpTransport(new URL(everything.endpoint.url), { requestInit: { headers: { authorization: 'Bearer alice-token' } } });
    const v1 = new V1Client({ name: 'tasks-v1', version: '1.0.0' });
    await v1.connect(v1Transport);
    closers.push(() => v1.close());
    const raw = tapTaskDispatch(v1Transport as never, { envelope: () => ({}) });
    const refused = await call(raw, 'tools/call', { name: 'echo', arguments: { message: 'hi' }, task: { ttl: 60_000 } });
    expect(refused.result).toBeUndefined();
    expect(refused.error?.code).toBe(-32602);
    expect(refused.error?.message).toMatch(/task-augmented tools\/call is not supported for upstream 'everything'/);
    // tasks/* has no upstream to go to either, on both eras: refused by the gateway, never forwarded.
    const { client, dispatch } = await connect(everything.endpoint.url, 'alice-token');
    for (const d of [raw, dispatch]) {
      const get = await call(d, 'tasks/get', { taskId: '1', ...declared });
      expect(get.error?.code).toBe(-32601);
      expect(get.error?.message).toMatch(/no upstream of this gateway routes tasks/);
    }
    // The 2025-11-25 task methods the gateway does not serve are refused too, not forwarded.
    for (const method of ['tasks/list', 'tasks/result']) {
      const got = await call(raw, method, method === 'tasks/result' ? { taskId: '1' } : {});
      expect(got.error?.code).toBe(-32601);
      expect(got.error?.message).toMatch(/tasks go only through the gateway's task handles/);
    }
    // Without `task`, the same call is an ordinary enveloped call.
    const echoed = (await client.callTool({ name: 'echo', arguments: { message: 'hi' } })) as unknown as JsonObject;
    expect(oracleValidate('mcec', echoed.structuredContent).errors).toEqual([]);
  });

  it('the built CLI over stdio: the extension advertised, a plain v2 client gets the enveloped final result', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'gateway', '--no-store', '--quiet', '--', process.execPath, TASK_SERVER],
      env: { ...(process.env as Record<string, string>), TASK_MS: String(TASK_MS) },
      stderr: 'ignore',
    });
    const client = new Client({ name: 'tasks-stdio', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    await client.connect(transport);
    closers.push(() => client.close());
    expect(client.getServerCapabilities()?.extensions).toEqual({ [TASKS]: {} });
    const result = (await client.callTool({ name: 'slow_report', arguments: { topic: 'cli' } })) as unknown as JsonObject;
    expect(result.content).toEqual([{ type: 'text', text: 'report for cli' }]);
    expect(oracleValidate('mcec', result.structuredContent).errors).toEqual([]);
  }, 30_000);
});
