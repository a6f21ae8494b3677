#!/usr/bin/env node
// A modern-era (2026-07-28) MCP server on the official SDK v2 over stdio with the tasks extension
// (io.modelcontextprotocol/tasks): its `slow_report` tool takes TASK_MS (default 600) ms; to a
// request that declares the extension it answers with a task at once (resultType "task") and
// serves tasks/get, tasks/update and tasks/cancel for it; to one that does not, it answers
// with the final result after the wait. `ask_name` needs input (input_required, an elicitation
// answered with tasks/update) and exists only for callers with the extension. `quick` always
// answers at once. Task ids are its own (sequential, so a test can see that the gateway never
// hands them out). A `slow_report` on the topic `fail` ends failed, on `tool-error` completes with a
// failed tool result (isError); `runs` says how many slow_reports this process ran; with REPORT_PID=1 a report names
// the process that made it (`pid`), so a test can tell upstream instances apart. `region_report`
// is `slow_report` whose `region` argument is marked `x-mcp-header: Region` (SEP-2243): over HTTP the
// SDK refuses a call to it without a matching `Mcp-Param-Region` header (-32020).
//   node task-server.mjs             serves stdio
//   node task-server.mjs --http 0    serves Streamable HTTP (createMcpHandler, 2026-07-28) on 127.0.0.1;
//                                    its URL is the first line on stdout (tasks live in the process)
import { createMcpHandler, fromJsonSchema, McpServer, ProtocolError } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

const TASKS = 'io.modelcontextprotocol/tasks';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const TASK_MS = Number(process.env.TASK_MS ?? 600);
const tasks = new Map();
let next = 1;
let runs = 0;

const declares = (ctx) => {
  const caps = ctx?.mcpReq?.envelope?.[CAPS];
  return caps?.extensions?.[TASKS] !== undefined;
};
const report = (args) => ({
  content: [{ type: 'text', text: `report for ${args.topic}` }],
  structuredContent: { topic: args.topic, pages: 3, ...(process.env.REPORT_PID === '1' ? { pid: process.pid } : {}) },
});
const view = (t) => {
  const base = {
    taskId: t.id,
    status: t.status,
    createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt,
    ttlMs: 60_000,
    pollIntervalMs: 50,
  };
  if (t.status === 'completed') return { ...base, result: t.result };
  if (t.status === 'failed') return { ...base, error: t.error };
  if (t.status === 'input_required') return { ...base, inputRequests: { name: ELICIT_NAME } };
  return base;
};
const ELICIT_NAME = {
  method: 'elicitation/create',
  params: {
    mode: 'form',
    message: 'Please enter your name.',
    requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  },
};
const unknownTask = () => new ProtocolError(-32602, 'Failed to retrieve task: Task not found');

function build() {
  const server = new McpServer({ name: 'task-server', version: '1.0.0' }, { capabilities: { tools: {}, extensions: { [TASKS]: {} } } });
  server.registerTool('quick', { description: 'Answers at once.', inputSchema: z.object({}) }, async () => ({
    content: [{ type: 'text', text: 'quick' }],
  }));
  server.registerTool('runs', { description: 'How many slow_reports this process ran.', inputSchema: z.object({}) }, async () => ({
    content: [{ type: 'text', text: String(runs) }],
    structuredContent: { runs },
  }));
  const slowReport = async (args, ctx) => {
    runs++;
    if (!declares(ctx)) {
      await new Promise((r) => setTimeout(r, TASK_MS));
      return report(args);
    }
    const now = new Date().toISOString();
    const t = { id: `task-${next++}`, status: 'working', createdAt: now, lastUpdatedAt: now };
    tasks.set(t.id, t);
    t.timer = setTimeout(() => {
      if (t.status !== 'working') return;
      if (args.topic === 'fail') {
        t.status = 'failed';
        t.error = { code: -32000, message: 'the report could not be made' };
      } else if (args.topic === 'tool-error') {
        t.status = 'completed';
        t.result = { content: [{ type: 'text', text: 'the report source is unavailable' }], isError: true };
      } else {
        t.status = 'completed';
        t.result = report(args);
      }
      t.lastUpdatedAt = new Date().toISOString();
    }, TASK_MS);
    return { resultType: 'task', ...view(t) };
  };
  server.registerTool(
    'slow_report',
    { description: 'A long-running report.', inputSchema: z.object({ topic: z.string() }), annotations: { readOnlyHint: true } },
    slowReport,
  );
  server.registerTool(
    'region_report',
    {
      description: 'A long-running report for a region the client also sends as the Mcp-Param-Region header.',
      inputSchema: fromJsonSchema({
        type: 'object',
        properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, topic: { type: 'string' } },
        required: ['region', 'topic'],
      }),
      annotations: { readOnlyHint: true },
    },
    (args, ctx) => slowReport({ topic: `${args.topic}@${args.region}` }, ctx),
  );
  server.registerTool('ask_name', { description: 'Asks for a name (input_required), then greets.', inputSchema: z.object({}) }, async (_args, ctx) => {
    if (!declares(ctx)) throw new ProtocolError(-32021, 'Missing required client capability', { requiredCapabilities: { extensions: { [TASKS]: {} } } });
    const now = new Date().toISOString();
    const t = { id: `task-${next++}`, status: 'working', createdAt: now, lastUpdatedAt: now };
    tasks.set(t.id, t);
    // Seeded as working (the SDK checks a tools/call answer carrying inputRequests as a tool result); it asks right after.
    t.timer = setTimeout(() => {
      t.status = 'input_required';
      t.lastUpdatedAt = new Date().toISOString();
    }, 20);
    return { resultType: 'task', ...view(t) };
  });
  const params = z.looseObject({ taskId: z.string() });
  server.server.setRequestHandler('tasks/get', { params }, async (p) => {
    const t = tasks.get(p.taskId);
    if (!t) throw unknownTask();
    return view(t);
  });
  server.server.setRequestHandler('tasks/update', { params }, async (p, ctx) => {
    const t = tasks.get(p.taskId);
    if (!t) throw unknownTask();
    // The SDK lifts inputResponses off the params (a multi-round-trip field) into the context.
    const answer = (ctx.mcpReq.inputResponses ?? p.inputResponses)?.name;
    if (t.status === 'input_required' && answer?.action === 'accept' && typeof answer.content?.name === 'string') {
      t.status = 'completed';
      t.result = { content: [{ type: 'text', text: `Hello, ${answer.content.name}!` }] };
      t.lastUpdatedAt = new Date().toISOString();
    }
    return {};
  });
  server.server.setRequestHandler('tasks/cancel', { params }, async (p) => {
    const t = tasks.get(p.taskId);
    if (!t) throw unknownTask();
    if (t.status === 'working' || t.status === 'input_required') {
      clearTimeout(t.timer);
      t.status = 'cancelled';
      t.lastUpdatedAt = new Date().toISOString();
    }
    return {};
  });
  return server;
}

const http = process.argv.indexOf('--http');
if (http === -1) serveStdio(build);
else {
  const { createServer } = await import('node:http');
  const { toNodeHandler } = await import('@modelcontextprotocol/node');
  const handle = toNodeHandler(createMcpHandler(build));
  const server = createServer((req, res) => void handle(req, res));
  server.listen(Number(process.argv[http + 1] ?? 0), '127.0.0.1', () => {
    process.stdout.write(`http://127.0.0.1:${server.address().port}/mcp\n`);
  });
}
