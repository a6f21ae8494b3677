// An MCP tool result read through the AI SDK's own MCP client (@ai-sdk/mcp, stdio) against the
// reference server-memory becomes a canonical outcome; with withEnvelopeOutput the model sees it.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ToolEnvelopeError } from '../../core/errors.js';
import { createEnvelopeServer } from '../../mcp/server-adapter.js';
import { plainFixture } from '../test-support/tools.js';
import { expectValidEnvelopes } from '../../runtime/test-support/envelopes.js';
import { outcomeFromMcpResult, withEnvelopeOutput } from './index.js';

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

describe('tool-envelope/ai-sdk with the AI SDK MCP client (server-memory over stdio)', () => {
  let dir: string;
  let client: Awaited<ReturnType<typeof createMCPClient>>;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'te-ai-mcp-'));
    const server = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-memory/dist/index.js');
    client = await createMCPClient({
      transport: new Experimental_StdioMCPTransport({
        command: process.execPath,
        args: [server],
        env: { MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl') },
        stderr: 'ignore',
      }),
    });
  });
  afterAll(async () => {
    await client?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a plain success and a plain failure become canonical outcomes', async () => {
    const tools = await client.tools();
    const ok = outcomeFromMcpResult(await tools.read_graph!.execute!({}, { toolCallId: 'm1', messages: [], context: {} }));
    expect(ok).toMatchObject({ status: 'ok', result: { entities: [], relations: [] } });
    expectValidEnvelopes(ok);
    const bad = outcomeFromMcpResult(await tools.create_entities!.execute!({ entities: 'not-a-list' }, { toolCallId: 'm2', messages: [], context: {} }));
    expect(bad).toMatchObject({ status: 'error', error: { category: 'invalid-argument' } });
    expectValidEnvelopes(bad);
  });

  it('in a generateText loop the model sees the outcome as json / error-json', async () => {
    const tools = withEnvelopeOutput(await client.tools());
    const model = new MockLanguageModelV4({
      doGenerate: async (options) =>
        options.prompt.some((m) => m.role === 'tool')
          ? { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] }
          : {
              content: [
                { type: 'tool-call', toolCallId: 'a', toolName: 'read_graph', input: '{}' },
                { type: 'tool-call', toolCallId: 'b', toolName: 'open_nodes', input: '{"names":"x"}' },
              ],
              finishReason: { unified: 'tool-calls', raw: undefined },
              usage,
              warnings: [],
            },
    });
    const result = await generateText({ model, tools, prompt: 'Look at the graph.', stopWhen: stepCountIs(3) });
    expect(result.text).toBe('done');
    const seen = model.doGenerateCalls[1]!.prompt.filter((m) => m.role === 'tool').flatMap((m) =>
      m.content.map((p) => (p.type === 'tool-result' ? p.output : null)),
    );
    expect(seen[0]).toEqual({ type: 'json', value: { entities: [], relations: [] } });
    expect(seen[1]).toMatchObject({ type: 'error-json', value: { status: 'error', category: 'invalid-argument', retryable: false } });
  });

  it('an envelope-speaking server (the server adapter, DW dialect): its envelope is decoded, category and code kept', async () => {
    const server = createEnvelopeServer(plainFixture().runtime, { dialect: 'dw' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const envelopeClient = await createMCPClient({ transport: clientSide });
    try {
      const tools = await envelopeClient.tools();
      const failed = outcomeFromMcpResult(await tools.fail!.execute!({ category: 'focus' }, { toolCallId: 'e1', messages: [], context: {} }));
      expect(failed).toMatchObject({ status: 'error', error: { category: 'focus', code: 'focus-failure', detail: 'Failed with focus.' } });
      expectValidEnvelopes(failed);
      const ok = outcomeFromMcpResult(await tools['notes.read']!.execute!({ id: 'welcome' }, { toolCallId: 'e2', messages: [], context: {} }));
      expect(ok).toMatchObject({ status: 'ok', result: { id: 'welcome', text: 'Hello from tool-envelope.' } });
      expectValidEnvelopes(ok);
    } finally {
      await envelopeClient.close();
      await server.close();
    }
  });

  it('rejects what is not a tool result with a typed error', () => {
    expect(() => outcomeFromMcpResult('nope')).toThrow(ToolEnvelopeError);
    expect(() => outcomeFromMcpResult({ foo: 1 })).toThrow(expect.objectContaining({ code: 'invalid-option' }));
  });
});
