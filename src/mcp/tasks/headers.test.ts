// A task-routed tool call to a URL upstream carries the SEP-2243 `Mcp-Param-*` headers, as a direct
// call does: the real task upstream over Streamable HTTP (test-support/task-server.mjs --http, the
// SDK v2 `createMcpHandler`), whose `region_report` marks `region` with `x-mcp-header: Region` and
// which the SDK refuses (-32020) without a matching header; the real gateway in front of it over
// HTTP; official v2 clients (pinned to 2026-07-28, with and without the extension) and a v1 client.
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import type { JsonObject } from '../../core/json.js';
import { asResult } from '../test-support/harness.js';
import { closeTaskRig, connectTasks, declared, rawCall, type TaskRig, taskRig } from '../test-support/task-clients.js';
import { startHttpTaskServer } from '../test-support/task-upstream.js';

const MODERN = '2026-07-28';
const closers: (() => Promise<unknown>)[] = [];
let up: Awaited<ReturnType<typeof startHttpTaskServer>>;
let rig: TaskRig;

beforeAll(async () => {
  up = await startHttpTaskServer(300);
  rig = await taskRig({ name: 'jobs', url: up.url });
}, 60_000);
afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
  if (rig) await closeTaskRig(rig);
  await up?.close();
});

/** One raw modern-era tools/call straight to the upstream, with the headers given. */
async function direct(args: JsonObject, headers: Record<string, string>) {
  const res = await fetch(up.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': 'tools/call',
      'mcp-name': 'region_report',
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'region_report',
        arguments: args,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
        },
      },
    }),
  });
  return { status: res.status, body: (await res.json()) as { result?: JsonObject; error?: { code: number } } };
}

describe('Mcp-Param-* headers on task-routed calls to a URL upstream', () => {
  it('the upstream itself refuses a marked call without the header, and takes it with one', async () => {
    const refused = await direct({ region: 'eu-west', topic: 'raw' }, {});
    expect(refused.status).toBe(400);
    expect(refused.body.error?.code).toBe(-32020);
    const taken = await direct({ region: 'eu-west', topic: 'raw' }, { 'Mcp-Param-Region': 'eu-west' });
    expect(taken.status).toBe(200);
    expect(taken.body.result?.resultType).toBe('task');
  });

  it('a declaring caller that sends no header gets a task, and its end through tasks/get', async () => {
    expect(rig.gw.getCapabilities().extensions).toEqual({ 'io.modelcontextprotocol/tasks': {} });
    const { dispatch } = await connectTasks(rig.endpoint.url, 'alice-token', closers);
    const created = await rawCall(dispatch, 'tools/call', { name: 'region_report', arguments: { region: 'Zürich ', topic: 'q3' }, ...declared });
    expect(created.error).toBeUndefined();
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = String(created.result?.taskId);
    expect(taskId).toMatch(/^teh_/);
    let task: JsonObject | undefined;
    for (let i = 0; i < 400 && task?.status !== 'completed'; i++) {
      task = (await rawCall(dispatch, 'tasks/get', { taskId, ...declared })).result;
      if (task?.status !== 'completed') await new Promise((r) => setTimeout(r, 25));
    }
    expect(task?.status).toBe('completed');
    const result = task?.result as JsonObject;
    // Base64-encoded on the wire (not a plain field value), decoded by the upstream to the argument.
    expect(result.content).toEqual([{ type: 'text', text: 'report for q3@Zürich ' }]);
    expect(oracleValidate('mcec', result.structuredContent).errors).toEqual([]);
  }, 30_000);

  it('a caller without the extension (v2 pinned, and v1) gets the final result, the gateway polling the task', async () => {
    const { client } = await connectTasks(rig.endpoint.url, 'bob-token', closers);
    const modern = asResult(await client.callTool({ name: 'region_report', arguments: { region: 'ap', topic: 'v2' } }));
    expect(modern.isError).toBe(false);
    expect(modern.content).toEqual([{ type: 'text', text: 'report for v2@ap' }]);
    expect(oracleValidate('mcec', modern.structuredContent).errors).toEqual([]);
    const v1 = new V1Client({ name: 'legacy', version: '1' });
    await v1.connect(new V1HttpTransport(new URL(rig.endpoint.url), { requestInit: { headers: { authorization: 'Bearer carol-token' } } }));
    closers.push(() => v1.close());
    const legacy = asResult(await v1.callTool({ name: 'region_report', arguments: { region: 'us', topic: 'v1' } }));
    expect(legacy.isError).toBe(false);
    expect(legacy.content).toEqual([{ type: 'text', text: 'report for v1@us' }]);
    expect(oracleValidate('mcec', legacy.structuredContent).errors).toEqual([]);
  }, 30_000);
});
