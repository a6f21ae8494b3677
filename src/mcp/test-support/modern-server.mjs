#!/usr/bin/env node
// A modern-era MCP server for the tests: the SDK v2 McpServer served over stdio by `serveStdio`,
// speaking only 2026-07-28 (a 2025 `initialize` is refused with the unsupported-version error), so
// a test proves the gateway talks to such an upstream in its own era: `server/discover`, the
// `_meta` envelope on every request, `resultType`, and input asked for inside results
// (elicitation and sampling as `input_required`, fulfilled by the gateway's client and retried).
import { acceptedContent, completable, inputRequired, McpServer, ResourceTemplate } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const COLOURS = ['red', 'green', 'blue', 'rebeccapurple'];

// How a tool announces that a resource changed: the stdio instance's own notification (the SDK's
// stdio entry delivers it on the listen streams that name the URI), or the HTTP handler's bus.
let resourceUpdated = async (_uri) => {};

function build() {
  const server = new McpServer(
    { name: 'modern-test-server', version: '2.0.0' },
    { instructions: 'A 2026-07-28 test server.', capabilities: { resources: { subscribe: true } } },
  );
  if (process.argv.indexOf('--http') === -1) resourceUpdated = (uri) => server.server.sendResourceUpdated({ uri });

  server.registerTool(
    'echo',
    { description: 'Echoes its text.', inputSchema: z.object({ text: z.string() }), annotations: { readOnlyHint: true } },
    async ({ text }) => ({
      content: [{ type: 'text', text }],
      structuredContent: { echoed: text },
    }),
  );

  server.registerTool(
    'chart',
    { description: 'An image and its data.', inputSchema: z.object({ title: z.string() }), annotations: { readOnlyHint: true } },
    async ({ title }) => ({
      content: [
        { type: 'text', text: `chart: ${title}` },
        { type: 'image', data: PNG, mimeType: 'image/png' },
      ],
      structuredContent: { title, points: [1, 2, 3] },
    }),
  );

  server.registerTool('fail', { description: 'Always fails.', inputSchema: z.object({}) }, async () => ({
    content: [{ type: 'text', text: 'Error: ENOENT: no such file or directory, open /nope' }],
    isError: true,
  }));

  server.registerTool('big', { description: 'Answers with `bytes` bytes of text.', inputSchema: z.object({ bytes: z.number().int() }) }, async ({ bytes }) => ({
    content: [{ type: 'text', text: 'x'.repeat(bytes) }],
  }));

  server.registerTool(
    'confirm_delete',
    {
      description: 'Asks the user to confirm, then deletes.',
      inputSchema: z.object({ item: z.string() }),
      annotations: { destructiveHint: false, readOnlyHint: false },
    },
    async ({ item }, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
      if (answer === undefined) {
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({
              message: `Delete ${item}?`,
              requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
            }),
          },
        });
      }
      return {
        content: [{ type: 'text', text: answer.confirm === true ? `deleted ${item}` : `kept ${item}` }],
        structuredContent: { item, deleted: answer.confirm === true },
      };
    },
  );

  server.registerTool(
    'summarise',
    { description: 'Asks the client to sample a summary.', inputSchema: z.object({ text: z.string() }), annotations: { readOnlyHint: true } },
    async ({ text }, ctx) => {
      const sampled = ctx.mcpReq.inputResponses?.summary;
      if (!sampled || typeof sampled !== 'object' || !('content' in sampled)) {
        return inputRequired({
          inputRequests: {
            summary: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: `Summarise: ${text}` } }], maxTokens: 50 }),
          },
        });
      }
      const content = /** @type {{ content: { type: string, text?: string } }} */ (sampled).content;
      return { content: [{ type: 'text', text: `summary: ${content.type === 'text' ? content.text : '?'}` }] };
    },
  );

  let added = 0;
  server.registerTool('add_tool', { description: 'Registers one more tool (its list changes).', inputSchema: z.object({}) }, async () => {
    const name = `extra_${++added}`;
    server.registerTool(name, { description: 'Added at run time.', inputSchema: z.object({}) }, async () => ({ content: [{ type: 'text', text: name }] }));
    return { content: [{ type: 'text', text: `added ${name}` }] };
  });

  server.registerTool('touch_note', { description: 'Changes modern://note (its subscribers are told).', inputSchema: z.object({}) }, async () => {
    await resourceUpdated('modern://note');
    return { content: [{ type: 'text', text: 'touched modern://note' }] };
  });

  server.registerResource('note', 'modern://note', { title: 'A note', mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'a modern note' }],
  }));

  server.registerResource(
    'colour',
    new ResourceTemplate('modern://colour/{name}', { list: undefined, complete: { name: (value) => COLOURS.filter((c) => c.startsWith(value)) } }),
    { title: 'A colour', mimeType: 'text/plain' },
    async (uri, { name }) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `colour ${name}` }] }),
  );

  server.registerPrompt(
    'paint',
    { description: 'Paints in a colour.', argsSchema: z.object({ colour: completable(z.string(), (value) => COLOURS.filter((c) => c.startsWith(value))) }) },
    ({ colour }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Paint it ${colour}.` } }] }),
  );

  return server;
}

const http = process.argv.indexOf('--http');
if (http === -1) serveStdio(build, { legacy: 'reject' });
else {
  // Streamable HTTP on 127.0.0.1 (port 0 unless given); the URL is the first line on stdout.
  const { createServer } = await import('node:http');
  const { createMcpHandler } = await import('@modelcontextprotocol/server');
  const { toNodeHandler } = await import('@modelcontextprotocol/node');
  const handler = createMcpHandler(build);
  resourceUpdated = async (uri) => handler.notify.resourceUpdated(uri);
  const handle = toNodeHandler(handler);
  const server = createServer((req, res) => void handle(req, res));
  server.listen(Number(process.argv[http + 1] ?? 0), '127.0.0.1', () => {
    process.stdout.write(`http://127.0.0.1:${server.address().port}/mcp\n`);
  });
}
