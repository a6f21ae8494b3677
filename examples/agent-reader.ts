/**
 * Agent builders, 30 seconds: call any MCP server with the official SDK client and
 * branch the same way on every result, whether the server speaks an envelope
 * contract or knows nothing of envelopes. Run it:
 *
 * @example
 * ```sh
 * npx tsx examples/agent-reader.ts
 * ```
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isOk, type ToolOutcome } from 'tool-envelope/core';
import { readToolResult } from '../src/mcp/index.js';

/** What the agent decides to do next, from the outcome alone. */
export function nextStep(outcome: ToolOutcome): string {
  if (isOk(outcome)) return 'use the result';
  switch (outcome.error?.category) {
    case 'invalid-argument':
      return 'fix the arguments';
    case 'timeout':
    case 'no-target':
    case 'stale-element':
      return 'retry later';
    default:
      return outcome.error?.retryable ? 'retry' : 'give up and report';
  }
}

export async function agentReader(): Promise<Array<{ tool: string; ok: boolean; category?: string; next: string }>> {
  // The reference memory server: a plain MCP server that has never heard of envelopes.
  const server = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-memory/dist/index.js');
  const dir = mkdtempSync(join(tmpdir(), 'agent-reader-'));
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [server], stderr: 'ignore', env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } }),
  );
  try {
    const calls = [
      { name: 'read_graph', arguments: {} },
      // Bad arguments: the server answers `isError` with "MCP error -32602: Input validation error: ...",
      // which the reader classifies as invalid-argument, so the agent fixes the arguments instead of retrying.
      { name: 'create_entities', arguments: { entities: 'not-a-list' } },
    ];
    const steps = [];
    for (const call of calls) {
      const outcome = readToolResult((await client.callTool(call)) as CallToolResult);
      steps.push({ tool: call.name, ok: isOk(outcome), category: outcome.error?.category, next: nextStep(outcome) });
    }
    return steps;
  } finally {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(await agentReader());
}
