#!/usr/bin/env node
// A dual-era MCP server for the tests: the SDK v2 McpServer behind `createMcpHandler` on Streamable
// HTTP, serving 2025-11-25 sessions and 2026-07-28 stateless requests on one endpoint, as issue 40
// found such servers: `resources: {}` without `subscribe`, logging declared. The URL is the first
// line on stdout. `--omit-result-type` is the variant whose modern answers leave out `resultType`
// (the revision requires it; the 2025 answers have none anyway).
import { createServer } from 'node:http';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';
import { omitResultType } from './omit-result-type.mjs';

const omit = process.argv.includes('--omit-result-type');

function build() {
  const server = new McpServer({ name: 'dual-era-test-server', version: '1.0.0' }, { capabilities: { resources: {}, logging: {} } });
  server.registerTool('echo', { description: 'Echoes its text.', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
    content: [{ type: 'text', text }],
    structuredContent: { echoed: text },
  }));
  server.registerTool('fail', { description: 'Always fails.', inputSchema: z.object({}) }, async () => ({
    content: [{ type: 'text', text: 'Error: ENOENT: no such file or directory, open /nope' }],
    isError: true,
  }));
  // Which era the request came in: a 2026-07-28 one carries its _meta envelope.
  server.registerTool('era', { description: 'Says the era it was asked in.', inputSchema: z.object({}) }, async (_args, ctx) => ({
    content: [{ type: 'text', text: ctx.mcpReq.envelope === undefined ? 'legacy' : 'modern' }],
  }));
  server.registerTool('log', { description: 'Logs at four levels, then answers.', inputSchema: z.object({}) }, async (_args, ctx) => {
    for (const level of ['debug', 'info', 'warning', 'error']) {
      await ctx.mcpReq.notify({ method: 'notifications/message', params: { level, logger: 'dual', data: `a ${level} line` } });
    }
    return { content: [{ type: 'text', text: 'logged' }] };
  });
  // Completions answered without the completions capability being declared (issue 40 met such a server).
  server.server.fallbackRequestHandler = async (req) => {
    if (req.method !== 'completion/complete') throw Object.assign(new Error('Method not found'), { code: -32601 });
    const value = String(req.params?.argument?.value ?? '');
    return { completion: { values: ['red', 'green', 'blue'].filter((c) => c.startsWith(value)), hasMore: false } };
  };
  server.registerResource('note', 'dual://note', { title: 'A note', mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'a dual-era note' }],
  }));
  return server;
}

const handle = toNodeHandler(createMcpHandler(build));
const http = createServer((req, res) => {
  if (omit) omitResultType(res);
  void handle(req, res);
});
http.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${http.address().port}/mcp\n`);
});
