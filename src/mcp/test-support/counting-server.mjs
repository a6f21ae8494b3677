#!/usr/bin/env node
// A plain MCP server (the SDK's McpServer over stdio) whose tools append one line per execution to
// the file named by COUNT_FILE, so a test can prove from the upstream side how often a tool ran.
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const file = process.env.COUNT_FILE;
const server = new McpServer({ name: 'counting-server', version: '1.0.0' });

function ran(tool, args) {
  if (file) appendFileSync(file, `${JSON.stringify({ tool, args })}\n`);
}

server.registerTool('read_notes', { description: 'Read-only.', inputSchema: {}, annotations: { readOnlyHint: true } }, async () => {
  ran('read_notes', {});
  return { content: [{ type: 'text', text: 'no notes' }] };
});
server.registerTool(
  'write_note',
  { description: 'A local write.', inputSchema: { text: z.string() }, annotations: { readOnlyHint: false, destructiveHint: false } },
  async (args) => {
    ran('write_note', args);
    return { content: [{ type: 'text', text: `wrote ${args.text}` }], structuredContent: { written: args.text } };
  },
);
server.registerTool('delete_item', { description: 'Destructive.', inputSchema: { id: z.string() }, annotations: { destructiveHint: true } }, async (args) => {
  ran('delete_item', args);
  return { content: [{ type: 'text', text: `deleted ${args.id}` }], structuredContent: { deleted: args.id } };
});
server.registerTool(
  'purge_all',
  { description: 'Destructive; a test policy denies it.', inputSchema: {}, annotations: { destructiveHint: true } },
  async () => {
    ran('purge_all', {});
    return { content: [{ type: 'text', text: 'purged' }] };
  },
);

// State kept in this process only: what an isolated (per-tenant, per-session) instance must not share.
const memory = [];
server.registerTool(
  'remember',
  { description: 'Keeps a value in this process.', inputSchema: { value: z.string() }, annotations: { readOnlyHint: false, destructiveHint: false } },
  async (args) => {
    memory.push(args.value);
    return { content: [{ type: 'text', text: 'kept' }], structuredContent: { pid: process.pid, memory } };
  },
);

await server.connect(new StdioServerTransport());
