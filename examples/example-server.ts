#!/usr/bin/env node
/**
 * A small, ordinary MCP server (the SDK's `McpServer` over stdio) that knows
 * nothing of envelopes. `npm start` puts the tool-envelope gateway in front of
 * it, so every result below comes back wrapped. Its tools succeed, warn, fail,
 * time out, return large output and pause for an approver (delete_item).
 *
 * @example
 * ```sh
 * node dist/src/cli/main.js gateway --http 3333 -- node dist/examples/example-server.js
 * ```
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'tool-envelope-example', version: '1.0.0' });

server.registerTool(
  'add',
  {
    title: 'Add two numbers',
    description: 'Succeeds: returns the sum of a and b.',
    inputSchema: { a: z.number(), b: z.number() },
    annotations: { readOnlyHint: true, idempotentHint: true },
  },
  async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }),
);

server.registerTool(
  'list_items',
  {
    title: 'List items',
    description:
      'Succeeds with a warning: returns at most 3 items and says so when more matched. It answers with its own MCEC envelope, which the gateway reads and re-encodes.',
    inputSchema: { query: z.string().default('') },
    annotations: { readOnlyHint: true },
  },
  async ({ query }) => {
    const all = ['apple', 'apricot', 'avocado', 'banana', 'blueberry'].filter((s) => s.includes(query));
    const envelope = {
      ok: true,
      result: { items: all.slice(0, 3), total: all.length },
      warnings: all.length > 3 ? [{ code: 'results-truncated', detail: `Only 3 of ${all.length} items were returned.` }] : [],
    };
    return { content: [{ type: 'text', text: JSON.stringify(envelope) }], structuredContent: envelope };
  },
);

server.registerTool(
  'read_config',
  {
    title: 'Read a config file',
    description: 'Fails: reports a missing file as a tool error (isError).',
    inputSchema: { path: z.string().default('/etc/example/app.conf') },
    annotations: { readOnlyHint: true },
  },
  async ({ path }) => ({ content: [{ type: 'text', text: `ENOENT: no such file or directory, open '${path}'` }], isError: true }),
);

server.registerTool(
  'sleep',
  {
    title: 'Sleep',
    description: 'Times out: sleeps `ms` milliseconds (default 120 000, longer than the gateway deadline).',
    inputSchema: { ms: z.number().int().min(0).default(120_000) },
    annotations: { readOnlyHint: true },
  },
  async ({ ms }, extra) =>
    new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ content: [{ type: 'text', text: `slept ${ms} ms` }] }), ms);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve({ content: [{ type: 'text', text: 'cancelled' }] });
      });
    }),
);

// Pauses: the gateway's default policy sends a destructive call to an approver (the quick start
// approves it in the console, README 'Approve a paused call in the console').
const items = new Set(['item-1', 'item-2', 'item-3']);
server.registerTool(
  'delete_item',
  {
    title: 'Delete an item',
    description: 'Destructive: deletes an item. Through the gateway it pauses until an approver approves it.',
    inputSchema: { id: z.string() },
    annotations: { destructiveHint: true, readOnlyHint: false },
  },
  async ({ id }) => {
    const existed = items.delete(id);
    return { content: [{ type: 'text', text: existed ? `deleted ${id}` : `no item ${id}` }], structuredContent: { deleted: existed ? id : null } };
  },
);

server.registerTool(
  'large_report',
  {
    title: 'Large report',
    description: 'Returns large output: `bytes` bytes of text (default 1 000 000).',
    inputSchema: { bytes: z.number().int().min(0).max(50_000_000).default(1_000_000) },
    annotations: { readOnlyHint: true },
  },
  async ({ bytes }) => {
    const line = 'report line: all systems nominal\n';
    const text = line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes);
    return { content: [{ type: 'text', text }] };
  },
);

server.registerTool(
  'tiny_image',
  {
    title: 'Tiny image',
    description: 'Returns a 1x1 PNG as an image block (binary output).',
    annotations: { readOnlyHint: true },
  },
  async () => ({
    content: [
      {
        type: 'image',
        mimeType: 'image/png',
        data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
      },
    ],
  }),
);

await server.connect(new StdioServerTransport());
