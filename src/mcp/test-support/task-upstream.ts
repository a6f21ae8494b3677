/**
 * Starts the tasks test upstream (task-server.mjs, a real SDK v2 process on stdio) behind the
 * SDK v2 client the gateway uses, with the raw task dispatch tapped on its transport.
 */
import { spawn } from 'node:child_process';
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

/** The upstream process, connected (modern era), as the router sees it. */
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
 */
export function envelopeIn(dialect: Dialect): (result: JsonObject) => JsonObject {
  return (result) => {
    const raw = result as unknown as CallToolResult;
    return outcomeToCallToolResult(readToolResult(raw), { dialect, content: raw.content }).result as unknown as JsonObject;
  };
}

/**
 * The tasks test upstream over Streamable HTTP (task-server.mjs --http: the SDK's `createMcpHandler`,
 * 2026-07-28), one process that any number of gateways reach by URL, as replicas reach an HTTP upstream.
 */
export async function startHttpTaskServer(taskMs: number): Promise<{ url: string; close: () => Promise<void> }> {
  const child = spawn(process.execPath, [testServer('task-server.mjs'), '--http', '0'], {
    env: { ...process.env, TASK_MS: String(taskMs) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const gone = new Promise<void>((r) => child.once('exit', () => r()));
  const deadline = Date.now() + 20_000;
  for (;;) {
    const url = /^(http:\/\/127\.0\.0\.1:\d+\/mcp)\n/.exec(out)?.[1];
    if (url) {
      return {
        url,
        close: () => {
          child.kill('SIGTERM');
          return gone;
        },
      };
    }
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`task-server --http did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}
