// End to end on the SDK v2 on both sides: official v2 clients (the ext-tasks requester session,
// and a plain client) -> a small v2 server that serves tools/call and tasks/* through the router
// (what the gateway's hookup does) -> the real upstream process with the tasks extension.
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { McpServer, ProtocolError } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { oracleValidate } from '../../../test/oracle.js';
import type { JsonObject } from '../../core/index.js';
import { type SqliteStore, openSqliteStore } from '../../store/sqlite/index.js';
import { envelopeIn, testServer } from '../test-support/task-upstream.js';
import { type TaskDispatch, tapTaskDispatch } from './dispatch.js';
import type { Identity } from '../../governance/identity.js';
import { type GatewayTasks, createGatewayTasks, taskCallerOf } from './gateway-hook.js';
import { TaskRpcError } from './router.js';

const TASK_MS = 500;
const MODERN = '2026-07-28';
const dir = mkdtempSync(path.join(tmpdir(), 'te-tasks-front-'));

const envelope = envelopeIn('dw');
const framing = (name: string) => ({
  protocolVersion: MODERN,
  clientInfo: { name, version: '1.0.0' },
  clientCapabilities: {},
});
const envelopeOf = (f: ReturnType<typeof framing>): JsonObject => ({
  'io.modelcontextprotocol/protocolVersion': f.protocolVersion,
  'io.modelcontextprotocol/clientInfo': f.clientInfo,
  'io.modelcontextprotocol/clientCapabilities': f.clientCapabilities,
});

let upstreamClient: Client;
let upstreamTransport: StdioClientTransport;
let legacyClient: Client;
let store: SqliteStore;
let tasks: GatewayTasks;
const closers: (() => Promise<void>)[] = [];
const user = (id: string, tenant = 'acme'): Identity => ({ principal: { kind: 'user', id, tenant_id: tenant }, roles: [], via: 'token' });

// The gateway's side, as small as the hookup: per authenticated caller a v2 server whose
// tools/call and tasks/* handlers hand the request to the gateway's tasks.
function front(identity: Identity): McpServer {
  const extensions = tasks.extensions();
  const server = new McpServer({ name: 'front', version: '1.0.0' }, { capabilities: { tools: {}, ...(extensions ? { extensions } : {}) } });
  const rethrow = (e: unknown): never => {
    if (e instanceof TaskRpcError) throw new ProtocolError(e.code, e.message, e.data);
    throw e;
  };
  server.registerTool('ask_name', { description: 'upstream ask_name', inputSchema: z.object({}) }, async (_args, ctx) => {
    const answer = await tasks.callTool(
      'jobs',
      'ask_name',
      { name: 'ask_name', arguments: {} },
      { identity, envelope: ctx.mcpReq.envelope, deadlineMs: 10_000 },
    );
    if (answer.kind === 'task') return answer.task as unknown as CallToolResult;
    throw new ProtocolError(answer.kind === 'rpc-error' ? answer.error.code : -32603, answer.kind === 'rpc-error' ? answer.error.message : answer.kind);
  });
  server.registerTool('slow_report', { description: 'upstream slow_report', inputSchema: z.object({ topic: z.string() }) }, async (args, ctx) => {
    const params = { name: 'slow_report', arguments: args };
    const answer = await tasks.callTool('jobs', 'slow_report', params, { identity, envelope: ctx.mcpReq.envelope, deadlineMs: 10_000 });
    if (answer.kind === 'task') return answer.task as unknown as CallToolResult;
    if (answer.kind === 'final') return envelope(answer.result) as unknown as CallToolResult;
    throw new ProtocolError(-32603, answer.kind === 'timeout' ? 'deadline' : answer.error.message);
  });
  const params = z.looseObject({ taskId: z.unknown() });
  for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
    server.server.setRequestHandler(method, { params }, async (p, ctx) =>
      tasks.request(method, p as JsonObject, { identity, envelope: ctx.mcpReq.envelope, inputResponses: ctx.mcpReq.inputResponses }).catch(rethrow),
    );
  }
  return server;
}

async function connect(identity: Identity, name: string): Promise<{ client: Client; dispatch: TaskDispatch }> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  // In memory, objects would cross by reference (undefined fields and all); a wire carries JSON.
  const send = serverSide.send.bind(serverSide);
  serverSide.send = (message, options) => send(JSON.parse(JSON.stringify(message)), options);
  // serveStdio owns the era decision for a connection (any transport), as for the real stdio.
  const served = serveStdio(() => front(identity), { transport: serverSide });
  const client = new Client({ name, version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(clientSide);
  // The v2 client rejects a task answer to tools/call, so the requester dispatches task traffic
  // raw on its transport (what ext-tasks calls rawDispatch).
  const dispatch = tapTaskDispatch(clientSide, { envelope: () => envelopeOf(framing(name)) });
  closers.push(async () => {
    await client.close();
    await served.close();
  });
  return { client, dispatch };
}

function taskSession(client: Client, dispatch: TaskDispatch, name: string) {
  return createTaskSessionFromClient(client, {
    endpointId: `front-${name}`,
    v2RequestFraming: framing(name),
    rawDispatch: async (request, options) => {
      const r = request as { method: string; params?: JsonObject };
      const answer = await dispatch.request(r.method, r.params ?? {}, { timeoutMs: 10_000, ...(options?.signal ? { signal: options.signal } : {}) });
      return answer.error ? { kind: 'error', error: answer.error as never } : { kind: 'result', result: answer.result as never };
    },
  });
}

const attachJobs = () =>
  tasks.attach({
    name: 'jobs',
    transport: upstreamTransport,
    protocolVersion: upstreamClient.getNegotiatedProtocolVersion(),
    capabilities: upstreamClient.getServerCapabilities(),
  });

beforeAll(async () => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [testServer('task-server.mjs')],
    env: { TASK_MS: String(TASK_MS) },
    stderr: 'inherit',
  });
  upstreamClient = new Client({ name: 'gateway', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await upstreamClient.connect(transport);
  upstreamTransport = transport;
  store = await openSqliteStore({ path: path.join(dir, 'front.db'), chainKey: false, auditWorker: false });
  tasks = createGatewayTasks({ taskHandles: store.taskHandles, clientInfo: { name: 'gateway', version: '1.0.0' }, envelope });
  expect(attachJobs()).toBe(true);
  // A 2025-era upstream (SDK v1, no extension): attached, but nothing to route or advertise.
  const legacy = new StdioClientTransport({
    command: process.execPath,
    args: [testServer('counting-server.mjs')],
    stderr: 'inherit',
  });
  legacyClient = new Client({ name: 'gateway', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await legacyClient.connect(legacy);
  const plain = {
    name: 'plain',
    transport: legacy,
    protocolVersion: legacyClient.getNegotiatedProtocolVersion(),
    capabilities: legacyClient.getServerCapabilities(),
  };
  expect(tasks.attach(plain)).toBe(false);
}, 60_000);

afterAll(async () => {
  for (const close of closers) await close().catch(() => {});
  await upstreamClient?.close();
  await legacyClient?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('tasks end to end on SDK v2: v2 clients -> a v2 server on the router -> the real upstream', () => {
  it('the ext-tasks requester session gets a handle, polls it, and settles on the enveloped result (DW, valid)', async () => {
    const { client, dispatch } = await connect(user('alice'), 'alice');
    expect(client.getServerCapabilities()?.extensions).toEqual({ 'io.modelcontextprotocol/tasks': {} });
    const session = taskSession(client, dispatch, 'alice');
    try {
      const execution = await session.callTool('slow_report', { topic: 'e2e' });
      expect(execution.kind).toBe('task');
      expect(String(execution.handle?.taskId ?? '')).toMatch(/^teh_/);
      const { outcome } = await execution.settle();
      const result = resultFromTaskOutcome(outcome) as unknown as JsonObject;
      expect(result.content).toEqual([{ type: 'text', text: 'report for e2e' }]);
      expect(result.structuredContent).toMatchObject({ status: 'ok', result: { topic: 'e2e', pages: 3 } });
      expect(oracleValidate('dw', result.structuredContent).errors).toEqual([]);
    } finally {
      await session.close();
    }
  });

  it('binds a handle to the verified identity: tenant, principal, and the session when there is one', () => {
    expect(taskCallerOf(user('alice'))).toEqual({ tenant: 'acme', principal: 'user:alice' });
    expect(taskCallerOf(user('alice', 'globex'), 's-1')).toEqual({ tenant: 'globex', principal: 'user:alice', session: 's-1' });
    expect(taskCallerOf({ principal: { kind: 'agent', id: 'bot' }, roles: [], via: 'operator' })).toEqual({ tenant: '', principal: 'agent:bot' });
  });

  it('advertises the extension only while a routable upstream is attached', () => {
    expect(tasks.routes('jobs')).toBe(true);
    expect(tasks.routes('plain')).toBe(false);
    expect(tasks.extensions()).toEqual({ 'io.modelcontextprotocol/tasks': {} });
    tasks.detach('jobs');
    expect(tasks.extensions()).toBeUndefined();
    expect(attachJobs()).toBe(true);
  });

  it('input through the v2 server: tasks/get shows the inputRequests, tasks/update answers them, the task completes', async () => {
    const { dispatch } = await connect(user('dana'), 'dana');
    const declared = { _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } } };
    const created = await dispatch.request('tools/call', { name: 'ask_name', arguments: {}, ...declared }, { timeoutMs: 10_000 });
    const taskId = String(created.result?.taskId);
    expect(created.result?.resultType).toBe('task');
    let task: JsonObject | undefined;
    for (let i = 0; i < 100 && task?.status !== 'input_required'; i++) {
      task = (await dispatch.request('tasks/get', { taskId, ...declared }, { timeoutMs: 10_000 })).result;
      if (task?.status !== 'input_required') await new Promise((r) => setTimeout(r, 20));
    }
    expect(task?.inputRequests).toMatchObject({ name: { method: 'elicitation/create' } });
    const ack = await dispatch.request(
      'tasks/update',
      { taskId, inputResponses: { name: { action: 'accept', content: { name: 'Dana' } } }, ...declared },
      { timeoutMs: 10_000 },
    );
    expect(ack.error).toBeUndefined();
    const done = (await dispatch.request('tasks/get', { taskId, ...declared }, { timeoutMs: 10_000 })).result;
    expect(done?.status).toBe('completed');
    const result = (done?.result ?? {}) as JsonObject;
    expect(result.content).toEqual([{ type: 'text', text: 'Hello, Dana!' }]);
    expect(oracleValidate('dw', result.structuredContent).errors).toEqual([]);
  });

  it('a plain v2 client that does not declare the extension gets the enveloped final result from tools/call', async () => {
    const { client } = await connect(user('carol'), 'carol');
    const t0 = Date.now();
    const result = (await client.callTool({ name: 'slow_report', arguments: { topic: 'plain' } })) as unknown as JsonObject;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(TASK_MS - 50);
    expect(result.content).toEqual([{ type: 'text', text: 'report for plain' }]);
    expect(oracleValidate('dw', result.structuredContent).errors).toEqual([]);
  });

  it("another caller's tasks/get for a handle is answered as for an unknown one", async () => {
    const alice = await connect(user('alice'), 'alice2');
    const bob = await connect(user('bob'), 'bob');
    const declared = { _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } } };
    const created = await alice.dispatch.request('tools/call', { name: 'slow_report', arguments: { topic: 'mine' }, ...declared }, { timeoutMs: 10_000 });
    expect(created.result?.resultType).toBe('task');
    const handle = created.result?.taskId as string;
    const forBob = await bob.dispatch.request('tasks/get', { taskId: handle, ...declared }, { timeoutMs: 10_000 });
    const unknown = await bob.dispatch.request('tasks/get', { taskId: `teh_${'A'.repeat(43)}`, ...declared }, { timeoutMs: 10_000 });
    expect(forBob.error).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found' });
    expect(forBob).toEqual(unknown);
    const forAlice = await alice.dispatch.request('tasks/get', { taskId: handle, ...declared }, { timeoutMs: 10_000 });
    expect(forAlice.result).toMatchObject({ taskId: handle, resultType: 'complete' });
  });
});
