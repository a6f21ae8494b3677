/**
 * Starts the tasks test upstream (task-server.mjs, a real SDK v2 process on stdio) behind the
 * SDK v2 client the gateway uses, with the raw task dispatch tapped on its transport.
 */
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { JsonObject } from '../../core/index.js';
import { type Dialect, outcomeToCallToolResult } from '../envelope.js';
import { readToolResult } from '../reader.js';
import { tapTaskDispatch } from '../tasks/dispatch.js';
import { type TaskUpstream, upstreamHasTasks } from '../tasks/router.js';

const here = path.dirname(fileURLToPath(import.meta.url));

/** A script of this folder, by file name. */
export const testServer = (file: string): string => path.join(here, file);

/**
 * The upstream process, connected (modern era), as the router sees it.
 *
 * @example
 * ```ts
 * const up = await startTaskUpstream(600);
 * await up.close();
 * ```
 */
export async function startTaskUpstream(
  taskMs: number,
): Promise<{ client: Client; transport: StdioClientTransport; upstream: TaskUpstream; close: () => Promise<void> }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [testServer('task-server.mjs')],
    env: { TASK_MS: String(taskMs) },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'tool-envelope-gateway', version: '0.0.0-test' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(transport);
  const version = client.getNegotiatedProtocolVersion() ?? '2026-07-28';
  const dispatch = tapTaskDispatch(transport, {
    envelope: () => ({
      'io.modelcontextprotocol/protocolVersion': version,
      'io.modelcontextprotocol/clientInfo': { name: 'tool-envelope-gateway', version: '0.0.0-test' },
      'io.modelcontextprotocol/clientCapabilities': {},
    }),
  });
  return { client, transport, upstream: { name: 'jobs', tasks: upstreamHasTasks(client.getServerCapabilities()), dispatch }, close: () => client.close() };
}

/**
 * What the gateway does with any tool result: read it as an outcome, encode it in the dialect,
 * keep the upstream's own content blocks.
 *
 * @example
 * ```ts
 * const envelope = envelopeIn('mcec');
 * ```
 */
export function envelopeIn(dialect: Dialect): (result: JsonObject) => JsonObject {
  return (result) => {
    const raw = result as unknown as CallToolResult;
    return outcomeToCallToolResult(readToolResult(raw), { dialect, content: raw.content }).result as unknown as JsonObject;
  };
}
