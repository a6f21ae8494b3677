// The draft ToolFailure metadata (issue 40 points 4 and 5) on task results, through the real gateway
// (toolFailureMeta on) over Streamable HTTP with bearer tokens, the real task upstream
// (test-support/task-server.mjs, SDK v2 with the tasks extension), a real SQLite file: a failed task
// result carries it however the caller gets it, valid under the vendored draft schema, its
// correlation id the call's audit toolCallId, read back into the envelope's canonical error.
import Ajv2020 from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadVendored } from '../../../test/oracle.js';
import type { JsonObject } from '../../core/json.js';
import type { AuditRecord } from '../../store/types.js';
// From the package's entry (tool-envelope/mcp): what a user of the gateway reads results with.
import { TOOL_FAILURE_META_KEY, canonicalErrorOfToolFailure, readToolResult } from '../index.js';
import { closeTaskRig, connectTasks, declared, rawCall, type TaskRig, taskRig } from '../test-support/task-clients.js';
import { testServer } from '../test-support/task-upstream.js';
import type { TaskDispatch } from './index.js';

const TASK_MS = 300;
const IDEM = 'tool-envelope/idempotency-key';
const validate = new Ajv2020.default({ strict: false, allErrors: true }).compile(loadVendored('mcp-drafts/tool-failure.sep-3313.schema.json'));
const rigs: TaskRig[] = [];
const closers: (() => Promise<unknown>)[] = [];
const spec = { name: 'jobs', command: process.execPath, args: [testServer('task-server.mjs')], env: { TASK_MS: String(TASK_MS) } };
let on: TaskRig;
let off: TaskRig;
beforeAll(async () => {
  on = await taskRig(spec, { toolFailureMeta: true });
  off = await taskRig(spec);
  rigs.push(on, off);
}, 60_000);
afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
  for (const r of rigs) await closeTaskRig(r);
});

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

async function createTask(d: TaskDispatch, topic: string, meta: JsonObject = {}): Promise<string> {
  const created = await rawCall(d, 'tools/call', { name: 'slow_report', arguments: { topic }, _meta: { ...declared._meta, ...meta } });
  expect(created.error).toBeUndefined();
  expect(created.result?.resultType).toBe('task');
  return String(created.result?.taskId);
}

/** Polls a handle to its end (generous bound: a loaded machine). */
async function endOf(d: TaskDispatch, handle: string): Promise<JsonObject> {
  for (let i = 0; i < 400; i++) {
    const task = (await rawCall(d, 'tasks/get', { taskId: handle, ...declared })).result as JsonObject;
    if (task.status !== 'working') return task;
    await sleep(25);
  }
  throw new Error(`task ${handle} did not end`);
}

/** The ended (non-replay) audit record of the call on `topic`. */
async function recordOf(r: TaskRig, topic: string): Promise<AuditRecord> {
  for (const until = Date.now() + 20_000; ; ) {
    await r.governance.flush();
    const { records } = await r.store.listAudit({ tool: 'slow_report' });
    const rec = records.find((x) => (x.callEnvelope as { args?: { topic?: string } }).args?.topic === topic && x.replay !== true);
    if (rec && rec.status !== 'interrupted') return rec;
    if (Date.now() > until) throw new Error(`no ended record of ${topic}`);
    await sleep(50);
  }
}

/** The draft's object on a failed result: valid, and read back from a plain result into the envelope's own error. */
function expectToolFailure(result: JsonObject): { correlationId: string } {
  expect(result.isError).toBe(true);
  const meta = result._meta as JsonObject | undefined;
  const failure = meta?.[TOOL_FAILURE_META_KEY];
  expect(validate(failure), JSON.stringify(validate.errors)).toBe(true);
  const enveloped = readToolResult(result as Parameters<typeof readToolResult>[0]).error;
  const content = result.content as { type: string; text: string }[];
  const plain = readToolResult({ content, isError: true, _meta: meta } as Parameters<typeof readToolResult>[0]).error;
  expect(enveloped).toBeDefined();
  expect(plain).toMatchObject({ category: enveloped?.category, code: enveloped?.code });
  expect(canonicalErrorOfToolFailure(meta, 'x', Date.now())?.error).toMatchObject({ category: enveloped?.category, code: enveloped?.code });
  return failure as { correlationId: string };
}

describe('the draft ToolFailure metadata on task results', () => {
  it("a declaring caller's failed task result (tasks/get) carries it, its correlation id the call's", async () => {
    const { dispatch } = await connectTasks(on.endpoint.url, 'alice-token', closers);
    const task = await endOf(dispatch, await createTask(dispatch, 'tool-error'));
    expect(task.status).toBe('completed');
    const result = task.result as JsonObject;
    expect(result.structuredContent).toMatchObject({ ok: false });
    const failure = expectToolFailure(result);
    const rec = await recordOf(on, 'tool-error');
    expect(rec.status).toBe('error');
    expect(failure.correlationId).toBe(rec.toolCallId);
  }, 60_000);

  it('a caller without the extension gets it on the failed result the gateway polled for', async () => {
    const { client } = await connectTasks(on.endpoint.url, 'bob-token', closers);
    const result = (await client.callTool({ name: 'slow_report', arguments: { topic: 'fail' } })) as unknown as JsonObject;
    const failure = expectToolFailure(result);
    expect(failure.correlationId).toBe((await recordOf(on, 'fail')).toolCallId);
  }, 60_000);

  it('a keyed replay of a failed task after its end: the final result, with it', async () => {
    const { dispatch } = await connectTasks(on.endpoint.url, 'carol-token', closers);
    const key = { [IDEM]: 'tool-failure-idem' };
    await endOf(dispatch, await createTask(dispatch, 'tool-error', key));
    await recordOf(on, 'tool-error');
    const replayed = await rawCall(dispatch, 'tools/call', { name: 'slow_report', arguments: { topic: 'tool-error' }, _meta: { ...declared._meta, ...key } });
    const result = replayed.result as JsonObject;
    expect(result.taskId).toBeUndefined();
    expect(JSON.stringify(result.structuredContent)).toContain('idempotent-replay');
    expectToolFailure(result);
  }, 60_000);

  it('off by default: a failed task result has none', async () => {
    const { dispatch } = await connectTasks(off.endpoint.url, 'alice-token', closers);
    const task = await endOf(dispatch, await createTask(dispatch, 'tool-error'));
    const result = task.result as JsonObject;
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result)).not.toContain(TOOL_FAILURE_META_KEY);
  }, 60_000);
});
