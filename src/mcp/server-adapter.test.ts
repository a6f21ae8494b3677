// The server adapter (runtime tools on MCP) and the client reader, with the SDK's own Client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client as V2Client, InMemoryTransport as V2InMemoryTransport } from '@modelcontextprotocol/client';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { oracleValidate } from '../../test/oracle.js';
import { contracts } from '../core/contracts/registry.js';
import { ToolFailure } from '../core/classify.js';
import { failure, success, toolError } from '../core/model.js';
import { createRuntime, defineTool } from '../runtime/index.js';
import { annotationsForMode, envelopeOutputSchema, type Dialect } from './envelope.js';
import { META_KEYS } from './wire/meta-keys.js';
import { inspectToolResult, readToolResult } from './reader.js';
import { createEnvelopeServer } from './server-adapter.js';
import { clientFor, directClient, memorySpec, tempDir } from './test-support/harness.js';

const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const runtime = createRuntime({
  tools: [
    defineTool({
      name: 'add',
      description: 'Adds.',
      approvalMode: 'read_only',
      input: z.object({ a: z.number(), b: z.number() }),
      handler: async ({ a, b }) => ({ sum: a + b }),
    }),
    defineTool({
      name: 'remove',
      description: 'Removes.',
      approvalMode: 'destructive',
      handler: async () => {
        throw new ToolFailure({ category: 'no-target', code: 'file-not-found', detail: 'No such file.' });
      },
    }),
    defineTool({ name: 'fetch', description: 'Fetches.', approvalMode: 'network', handler: async () => ({ ok: 1 }) }),
    defineTool({ name: 'big', description: 'Large.', approvalMode: 'read_only', handler: async () => ({ text: 'x'.repeat(100_000) }) }),
    defineTool({ name: 'shot', description: 'Binary.', approvalMode: 'read_only', handler: async (_a, ctx) => ({ png: ctx.binary(PNG, 'image/png') }) }),
  ],
});

describe.each<Dialect>(['mcec', 'dw', 'contextos'])('createEnvelopeServer (%s)', (dialect) => {
  it('publishes input schemas, the envelope outputSchema and annotations from the approval mode', async () => {
    const client = await clientFor(createEnvelopeServer(runtime, { dialect }));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'big', 'fetch', 'remove', 'shot']);
    for (const t of tools) {
      const listing = runtime.list().find((l) => l.name === t.name)!;
      expect(t.inputSchema).toEqual(listing.inputSchema);
      expect(t.outputSchema).toEqual(envelopeOutputSchema(dialect));
      expect(t._meta?.[META_KEYS.approvalMode]).toBe(listing.approvalMode);
      expect(t.annotations).toMatchObject(annotationsForMode(listing.approvalMode, listing.annotations.idempotentHint));
    }
    expect(tools.find((t) => t.name === 'remove')!.annotations).toMatchObject({ destructiveHint: true, readOnlyHint: false });
    expect(tools.find((t) => t.name === 'fetch')!.annotations).toMatchObject({ openWorldHint: true });
    await client.close();
  });

  it('answers with envelopes that validate, isError == !ok, previews and image blocks', async () => {
    const client = await clientFor(createEnvelopeServer(runtime, { dialect, previewLimitBytes: 1024 }));
    await client.listTools(); // the SDK client then checks structuredContent against outputSchema itself
    const check = (r: CallToolResult): void => {
      expect(oracleValidate(dialect === 'contextos' ? 'contextos-result' : dialect, r.structuredContent).errors).toEqual([]);
      const o = contracts[dialect].decode(r.structuredContent);
      expect(r.isError).toBe(o.status !== 'ok');
    };
    const ok = (await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } })) as CallToolResult;
    check(ok);
    expect(JSON.parse((ok.content[0] as { text: string }).text)).toEqual(ok.structuredContent);
    expect(readToolResult(ok).result).toEqual({ sum: 3 });

    const bad = (await client.callTool({ name: 'add', arguments: { a: 'x' } })) as CallToolResult;
    check(bad);
    expect(readToolResult(bad).error?.category).toBe('invalid-argument');

    const failed = (await client.callTool({ name: 'remove', arguments: {} })) as CallToolResult;
    check(failed);
    expect(failed.isError).toBe(true);
    expect(readToolResult(failed).error).toMatchObject({ category: 'no-target' });

    const big = (await client.callTool({ name: 'big', arguments: {} })) as CallToolResult;
    check(big);
    const text = (big.content[0] as { text: string }).text;
    expect(Buffer.byteLength(text.split('\n[tool-envelope:')[0]!)).toBeLessThanOrEqual(1024);
    expect(text).toContain('complete envelope is in structuredContent');

    const shot = (await client.callTool({ name: 'shot', arguments: {} })) as CallToolResult;
    check(shot);
    expect(shot.content.some((b) => b.type === 'image' && b.mimeType === 'image/png' && b.data === Buffer.from(PNG).toString('base64'))).toBe(true);

    await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });
});

describe('readToolResult', () => {
  it('detects envelopes of every contract in structuredContent or in the first text block', () => {
    const outcome = failure(toolError('timeout', 'wait-timeout', 'Waited 5 s.'));
    for (const id of ['mcec', 'dw', 'contextos'] as const) {
      const doc = contracts[id].encode(outcome) as unknown as Record<string, unknown>;
      const structured = inspectToolResult({ content: [], structuredContent: doc, isError: true });
      expect(structured).toMatchObject({ contract: id, source: 'structuredContent' });
      expect(structured.outcome.error?.detail).toBe('Waited 5 s.');
      const inText = inspectToolResult({ content: [{ type: 'text', text: JSON.stringify(doc) }] });
      expect(inText).toMatchObject({ contract: id, source: 'text' });
      expect(inText.outcome.status).not.toBe('ok');
    }
  });

  it('reads plain MCP results: isError, text, structuredContent, other blocks', () => {
    expect(readToolResult({ content: [{ type: 'text', text: 'disk full' }], isError: true }).error).toMatchObject({
      category: 'internal',
      code: 'tool-error',
      detail: 'disk full',
    });
    expect(readToolResult({ content: [], isError: true }).error?.detail).toMatch(/without a message/);
    expect(
      readToolResult({
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }).result,
    ).toEqual({ text: 'a\nb' });
    expect(readToolResult({ content: [{ type: 'text', text: '{}' }], structuredContent: { rows: 2 } }).result).toEqual({ rows: 2 });
    const image = { type: 'image' as const, data: 'AAAA', mimeType: 'image/png' };
    expect(readToolResult({ content: [image] }).result).toEqual({ content: [image] });
    // A text block that merely looks like JSON is not an envelope.
    expect(readToolResult({ content: [{ type: 'text', text: '{"ok": "yes"}' }] }).result).toEqual({ text: '{"ok": "yes"}' });
    expect(readToolResult({ content: [{ type: 'text', text: '{not json' }] }).status).toBe('ok');
    expect(readToolResult({ content: [{ type: 'text', text: 'x' }], structuredContent: success({ a: 1 }) as never }).status).toBe('ok');
  });
});

describe('readToolResult on the reference memory server (SDK McpServer errors reported as results)', () => {
  let client: Client;
  beforeAll(async () => {
    client = await directClient(memorySpec(tempDir()));
  });
  afterAll(() => client?.close());

  it('bad arguments are invalid-argument/invalid-params, with the server text as detail', async () => {
    const raw = (await client.callTool({ name: 'create_entities', arguments: { entities: 'not-a-list' } })) as CallToolResult;
    expect(raw.isError).toBe(true);
    const outcome = readToolResult(raw);
    expect(outcome.error).toMatchObject({ category: 'invalid-argument', code: 'invalid-params', retryable: false, details: { rpcCode: -32602 } });
    expect(outcome.error?.detail).toMatch(/^MCP error -32602: Input validation error: .*create_entities/s);
    expect(oracleValidate('mcec', contracts.mcec.encode(outcome)).valid).toBe(true);
  });

  it('an unknown tool is no-target/tool-not-found', async () => {
    const outcome = readToolResult((await client.callTool({ name: 'no_such_tool', arguments: {} })) as CallToolResult);
    expect(outcome.error).toMatchObject({ category: 'no-target', code: 'tool-not-found' });
    expect(outcome.error?.detail).toContain('no_such_tool');
  });

  it('other text that only resembles an SDK error stays a plain tool error', () => {
    expect(readToolResult({ content: [{ type: 'text', text: 'MCP error -32603: boom' }], isError: true }).error).toMatchObject({
      category: 'internal',
      code: 'tool-error',
    });
    expect(
      readToolResult({
        content: [{ type: 'text', text: 'MCP error -32602: Output validation error: Invalid structured content for tool t: x' }],
        isError: true,
      }).error,
    ).toMatchObject({ category: 'internal', code: 'output-schema-violation' });
    expect(readToolResult({ content: [{ type: 'text', text: 'MCP error -32602: Tool t disabled' }], isError: true }).error?.code).toBe('tool-disabled');
  });
});

describe('createEnvelopeServer on SDK v2, both protocol eras', () => {
  const connect = async (mode: 'legacy' | 'auto' | { pin: string }): Promise<V2Client> => {
    const [clientSide, serverSide] = V2InMemoryTransport.createLinkedPair();
    serveStdio(() => createEnvelopeServer(runtime, { dialect: 'mcec' }), { transport: serverSide });
    const client = new V2Client({ name: 'v2-test', version: '1' }, { versionNegotiation: { mode } });
    await client.connect(clientSide);
    return client;
  };

  it.each([
    ['pinned to 2026-07-28', { pin: '2026-07-28' }, '2026-07-28'],
    ['in auto mode', 'auto', '2026-07-28'],
    ['in legacy mode', 'legacy', '2025-11-25'],
  ] as const)('a v2 client %s lists and calls tools; envelopes validate', async (_label, mode, era) => {
    const client = await connect(mode);
    expect(client.getNegotiatedProtocolVersion()).toBe(era);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['add', 'big', 'fetch', 'remove', 'shot']);
    const ok = (await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })) as CallToolResult;
    expect(oracleValidate('mcec', ok.structuredContent).errors).toEqual([]);
    expect(readToolResult(ok).result).toEqual({ sum: 5 });
    const failed = (await client.callTool({ name: 'remove', arguments: {} })) as CallToolResult;
    expect(failed.isError).toBe(true);
    expect(oracleValidate('mcec', failed.structuredContent).errors).toEqual([]);
    await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });
});
