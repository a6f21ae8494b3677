// A task call's end in the audit log, and idempotency keys on task calls, through the real gateway:
// official v2 clients over Streamable HTTP with bearer tokens (and v1 clients for 2025-era
// sessions), the real task upstream (test-support/task-server.mjs, SDK v2 with the tasks extension),
// a real SQLite file; the built CLI over stdio for a gateway that dies mid-task (SIGKILL).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../store/postgres/index.js';
import { describePg, dropSchema, freshSchema } from '../../store/test-support/pg.js';
import { oracleValidate } from '../../../test/oracle.js';
import type { JsonObject } from '../../core/json.js';
import { openStore } from '../../store/index.js';
import type { AuditRecord } from '../../store/types.js';
import type { GatewayOptions } from '../gateway/options.js';
import { type TaskDispatch, tapTaskDispatch } from './index.js';
import { repoRoot, tempDir } from '../test-support/harness.js';
import { connectTasks, declared, rawCall, v1TaskSession, closeTaskRig, type TaskRig, taskRig } from '../test-support/task-clients.js';
import { testServer } from '../test-support/task-upstream.js';

const TASK_MS = 400;
const CLI = join(repoRoot, 'dist/src/cli/main.js');
const TASK_SERVER = testServer('task-server.mjs');
const IDEM = 'tool-envelope/idempotency-key';
type Rig = TaskRig;
const rigs: Rig[] = [];
const closers: (() => Promise<unknown>)[] = [];

async function rig(taskMs: number, extra: Partial<GatewayOptions> = {}): Promise<Rig> {
  const r = await taskRig({ name: 'jobs', command: process.execPath, args: [TASK_SERVER], env: { TASK_MS: String(taskMs) } }, extra);
  rigs.push(r);
  return r;
}

const connect = (r: Rig, token: string) => connectTasks(r.endpoint.url, token, closers);
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

/** The audit record of the slow_report call on `topic` (one per topic in these tests). */
async function recordOf(r: Rig, topic: string): Promise<AuditRecord | undefined> {
  await r.governance.flush();
  const { records } = await r.store.listAudit({ tool: 'slow_report' });
  return records.find((rec) => (rec.callEnvelope as { args?: { topic?: string } }).args?.topic === topic && rec.replay !== true);
}

/** Waits (generously: a loaded machine) until the record of `topic` is no longer open. */
async function endedRecord(r: Rig, topic: string, ms = 20_000): Promise<AuditRecord> {
  const until = Date.now() + ms;
  for (;;) {
    const rec = await recordOf(r, topic);
    if (rec && rec.status !== 'interrupted') return rec;
    if (Date.now() > until) throw new Error(`the record of ${topic} is still ${rec?.status ?? 'absent'}`);
    await sleep(50);
  }
}

const cli = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, TOOL_ENVELOPE_STORE: '' } });

async function createTask(d: TaskDispatch, topic: string, meta: JsonObject = {}): Promise<string> {
  const created = await rawCall(d, 'tools/call', { name: 'slow_report', arguments: { topic }, _meta: { ...declared._meta, ...meta } });
  expect(created.error).toBeUndefined();
  expect(created.result?.resultType).toBe('task');
  return String(created.result?.taskId);
}

/** How many slow_reports the upstream ran (its `runs` tool, through the gateway). */
async function upstreamRuns(client: Client): Promise<number> {
  const got = (await client.callTool({ name: 'runs', arguments: {} })) as unknown as JsonObject;
  return (got.structuredContent as { result: { runs: number } }).result.runs;
}

let jobs: Rig;
let shortLived: Rig;
beforeAll(async () => {
  jobs = await rig(TASK_MS);
  // Handles that expire long before the task ends.
  shortLived = await rig(5_000, { taskHandleTtlMs: 300 });
}, 60_000);
afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
  for (const r of rigs) await closeTaskRig(r);
});

describe("a task's end is written to the audit log", () => {
  it('a task nobody polls: the record stays open while it runs, then holds the enveloped final result and the duration', async () => {
    const { dispatch } = await connect(jobs, 'alice-token');
    const t0 = Date.now();
    const handle = await createTask(dispatch, 'never-polled');
    // Not completed with the creation's {task: working}: still running, so still open.
    const open = await recordOf(jobs, 'never-polled');
    expect(open?.status).toBe('interrupted');
    const rec = await endedRecord(jobs, 'never-polled');
    expect(rec.status).toBe('ok');
    expect(rec.category).toBeNull();
    expect(rec.latencyMs).toBeGreaterThanOrEqual(TASK_MS - 50);
    expect(rec.latencyMs).toBeLessThanOrEqual(Date.now() - t0 + 50);
    expect(rec.principalChain[0]).toMatchObject({ kind: 'user', id: 'alice', tenant_id: 'acme' });
    expect(oracleValidate('contextos-result', rec.resultEnvelope).errors).toEqual([]);
    expect(rec.resultEnvelope).toMatchObject({ status: 'ok', output: { topic: 'never-polled', pages: 3 } });
    expect(JSON.stringify(rec)).not.toContain(handle);
    // One record for the call, and the CLI shows it.
    await jobs.governance.flush();
    const all = (await jobs.store.listAudit({ tool: 'slow_report' })).records.filter((x) => JSON.stringify(x.callEnvelope).includes('never-polled'));
    expect(all).toHaveLength(1);
    const shown = cli('audit', 'show', rec.id, '--store', jobs.dbPath, '--format', 'json');
    expect(shown.status).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: rec.id, status: 'ok', resultEnvelope: { output: { topic: 'never-polled' } } });
    const listed = JSON.parse(cli('audit', 'list', '--store', jobs.dbPath, '--tool', 'slow_report', '--format', 'json').stdout) as { records: AuditRecord[] };
    expect(listed.records.find((x) => x.id === rec.id)?.status).toBe('ok');
    const stats = JSON.parse(cli('audit', 'stats', '--store', jobs.dbPath, '--format', 'json').stdout) as { tool: string; byStatus: Record<string, number> }[];
    expect(stats.find((s) => s.tool === 'slow_report')?.byStatus.ok).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('a task the caller polls to its end: recorded once, as it ended', async () => {
    const { dispatch } = await connect(jobs, 'alice-token');
    const handle = await createTask(dispatch, 'polled');
    let task: JsonObject | undefined;
    for (let i = 0; i < 400 && task?.status !== 'completed'; i++) {
      task = (await rawCall(dispatch, 'tasks/get', { taskId: handle, ...declared })).result;
      if (task?.status !== 'completed') await sleep(25);
    }
    expect(task?.status).toBe('completed');
    const rec = await endedRecord(jobs, 'polled');
    expect(rec.status).toBe('ok');
    expect(rec.resultEnvelope).toMatchObject({ output: { topic: 'polled' } });
  }, 60_000);

  it('a cancelled task: the record says task-cancelled', async () => {
    const { dispatch } = await connect(jobs, 'alice-token');
    const handle = await createTask(dispatch, 'to-cancel');
    const cancelled = await rawCall(dispatch, 'tasks/cancel', { taskId: handle, ...declared });
    expect(cancelled.error).toBeUndefined();
    const rec = await endedRecord(jobs, 'to-cancel');
    expect(rec).toMatchObject({ status: 'error', category: 'internal', errorCode: 'task-cancelled' });
    expect(oracleValidate('contextos-result', rec.resultEnvelope).errors).toEqual([]);
  }, 60_000);

  it("a failed task: the record carries the upstream's error", async () => {
    const { dispatch } = await connect(jobs, 'alice-token');
    await createTask(dispatch, 'fail');
    const rec = await endedRecord(jobs, 'fail');
    expect(rec.status).toBe('error');
    expect(rec.category).not.toBeNull();
    expect(JSON.stringify(rec.resultEnvelope)).toContain('the report could not be made');
    expect(oracleValidate('contextos-result', rec.resultEnvelope).errors).toEqual([]);
  }, 60_000);

  it('a task whose handle expires before it ends: the record says task-expired (timeout)', async () => {
    const { dispatch } = await connect(shortLived, 'alice-token');
    const handle = await createTask(dispatch, 'expiring');
    const rec = await endedRecord(shortLived, 'expiring');
    expect(rec).toMatchObject({ status: 'error', category: 'timeout', errorCode: 'task-expired' });
    expect(rec.latencyMs).toBeGreaterThanOrEqual(250);
    // The handle is gone for its caller too.
    const got = await rawCall(dispatch, 'tasks/get', { taskId: handle, ...declared });
    expect(got.error?.code).toBe(-32602);
  }, 60_000);

  it('a task still running when the gateway dies (SIGKILL) reads as interrupted after the restart', async () => {
    const dbPath = join(tempDir(), 'killed.db');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'gateway', '--store', dbPath, '--quiet', '--', process.execPath, TASK_SERVER],
      env: { ...(process.env as Record<string, string>), TASK_MS: '60000', TOOL_ENVELOPE_STORE: '' },
      stderr: 'ignore',
    });
    const client = new Client({ name: 'tasks-killed', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(transport);
    const dispatch = tapTaskDispatch(transport, {
      envelope: () => ({
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'tasks-killed', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': {},
      }),
    });
    await createTask(dispatch, 'dies');
    const pid = transport.pid;
    expect(pid).toBeTypeOf('number');
    process.kill(pid as number, 'SIGKILL');
    await client.close().catch(() => {});
    const store = await openStore(dbPath);
    try {
      const { records } = await store.listAudit({ tool: 'slow_report' });
      expect(records).toHaveLength(1);
      expect(records[0]).toMatchObject({ status: 'interrupted', errorCode: 'interrupted' });
    } finally {
      await store.close();
    }
    const listed = JSON.parse(cli('audit', 'list', '--store', dbPath, '--status', 'interrupted', '--format', 'json').stdout) as { records: AuditRecord[] };
    expect(listed.records.map((r) => r.tool)).toEqual(['slow_report']);
  }, 60_000);
});

describe('idempotency keys on task calls', () => {
  it('a duplicate while the task runs gets the same handle; after the end, the enveloped final result', async () => {
    const alice = await connect(jobs, 'alice-token');
    const runsBefore = await upstreamRuns(alice.client);
    const key = { [IDEM]: 'report-idem-1' };
    const handle = await createTask(alice.dispatch, 'idem', key);
    const again = await createTask(alice.dispatch, 'idem', key);
    expect(again).toBe(handle);
    // Another principal with the same key runs a call of its own: nothing of Alice's.
    const bob = await connect(jobs, 'bob-token');
    const bobs = await createTask(bob.dispatch, 'idem', key);
    expect(bobs).not.toBe(handle);
    const bobGets = await rawCall(bob.dispatch, 'tasks/get', { taskId: handle, ...declared });
    expect(bobGets.error?.code).toBe(-32602);
    // After the end: the final result, enveloped, marked as a replay (declaring or not).
    await endedRecord(jobs, 'idem');
    const replayed = await rawCall(alice.dispatch, 'tools/call', { name: 'slow_report', arguments: { topic: 'idem' }, _meta: { ...declared._meta, ...key } });
    expect(replayed.error).toBeUndefined();
    const final = replayed.result as JsonObject;
    expect(final.resultType).not.toBe('task');
    expect(final.taskId).toBeUndefined();
    expect(final.content).toEqual([{ type: 'text', text: 'report for idem' }]);
    expect(final.structuredContent).toMatchObject({ ok: true, result: { topic: 'idem', pages: 3 } });
    expect(JSON.stringify(final.structuredContent)).toContain('idempotent-replay');
    expect(oracleValidate('mcec', final.structuredContent).errors).toEqual([]);
    const plain = (await alice.client.callTool({ name: 'slow_report', arguments: { topic: 'idem' }, _meta: key })) as unknown as JsonObject;
    expect(plain.structuredContent).toMatchObject({ ok: true, result: { topic: 'idem', pages: 3 } });
    expect(oracleValidate('mcec', plain.structuredContent).errors).toEqual([]);
    // The upstream ran it once for Alice: one executed record, the rest replays.
    await jobs.governance.flush();
    const mine = (await jobs.store.listAudit({ tool: 'slow_report' })).records.filter(
      (r) => r.principalChain[0]?.id === 'alice' && JSON.stringify(r.callEnvelope).includes('"idem"'),
    );
    expect(mine.filter((r) => r.replay !== true)).toHaveLength(1);
    expect(mine.filter((r) => r.replay === true).length).toBeGreaterThanOrEqual(3);
    // And the upstream says so: two runs since, Alice's and Bob's.
    expect((await upstreamRuns(alice.client)) - runsBefore).toBe(2);
    // No byte of the database holds the handle (the replay record keeps it sealed).
    for (const r of mine) expect(JSON.stringify(r)).not.toContain(handle);
  }, 60_000);

  it('a non-declaring duplicate while the task runs is told it is in flight, not given the task', async () => {
    const alice = await connect(jobs, 'alice-token');
    const key = { [IDEM]: 'report-idem-2' };
    await createTask(alice.dispatch, 'idem-plain', key);
    const plain = (await alice.client.callTool({ name: 'slow_report', arguments: { topic: 'idem-plain' }, _meta: key })) as unknown as JsonObject;
    expect(JSON.stringify(plain)).not.toContain('teh_');
    expect(plain.isError).toBe(true);
    expect(plain.structuredContent).toMatchObject({ ok: false, error: { code: 'idempotency-key-in-flight' } });
    expect(oracleValidate('mcec', plain.structuredContent).errors).toEqual([]);
  }, 60_000);

  it('another 2025-era session of the same principal with the same key gets nothing of the first session’s task', async () => {
    const session = () => v1TaskSession(jobs.endpoint.url, 'alice-token', closers);
    const first = await session();
    const second = await session();
    const key = { [IDEM]: 'report-idem-3' };
    const handle = await createTask(first, 'idem-sessions', key);
    expect(await createTask(first, 'idem-sessions', key)).toBe(handle);
    const other = await rawCall(second, 'tools/call', { name: 'slow_report', arguments: { topic: 'idem-sessions' }, _meta: { ...declared._meta, ...key } });
    expect(JSON.stringify(other)).not.toContain(handle);
    expect(other.result?.taskId).toBeUndefined();
    expect(other.result?.structuredContent).toMatchObject({ ok: false, error: { code: 'idempotency-key-reused' } });
    const get = await rawCall(second, 'tasks/get', { taskId: handle, ...declared });
    expect(get.error?.code).toBe(-32602);
  }, 60_000);
});

describePg('a keyed task call on a PostgreSQL store', (url) => {
  const schema = freshSchema();
  let pg: Rig;
  beforeAll(async () => {
    const store = await openPostgresStore({ connectionString: url, schema, chainKey: false });
    pg = await taskRig({ name: 'jobs', command: process.execPath, args: [TASK_SERVER], env: { TASK_MS: String(TASK_MS) } }, {}, store);
  }, 60_000);
  afterAll(async () => {
    if (pg) await closeTaskRig(pg);
    await dropSchema(url, schema);
  });

  it('the same handle while it runs, its end in the audit log, the final result after it', async () => {
    const alice = await connect(pg, 'alice-token');
    const key = { [IDEM]: 'report-pg-1' };
    const handle = await createTask(alice.dispatch, 'pg', key);
    expect(await createTask(alice.dispatch, 'pg', key)).toBe(handle);
    const rec = await endedRecord(pg, 'pg');
    expect(rec.status).toBe('ok');
    expect(rec.resultEnvelope).toMatchObject({ output: { topic: 'pg', pages: 3 } });
    expect(oracleValidate('contextos-result', rec.resultEnvelope).errors).toEqual([]);
    const replayed = await rawCall(alice.dispatch, 'tools/call', { name: 'slow_report', arguments: { topic: 'pg' }, _meta: { ...declared._meta, ...key } });
    const final = replayed.result as JsonObject;
    expect(final.taskId).toBeUndefined();
    expect(final.structuredContent).toMatchObject({ ok: true, result: { topic: 'pg', pages: 3 } });
    expect(oracleValidate('mcec', final.structuredContent).errors).toEqual([]);
  }, 60_000);
});
