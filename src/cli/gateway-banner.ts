/**
 * The part of the gateway's start banner that says which upstream tools pause for an approver
 * under the default policy (the destructive ones: the ContextOS per-mode default) and how to
 * release them. Read through an in-process MCP client of the gateway, so the banner shows exactly
 * the tools and modes a real client sees.
 *
 * @example
 * ```ts
 * const lines = await approvalBanner(gateway, 'tool-envelope audit approvals --store ./tool-envelope.db');
 * ```
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Gateway } from '../mcp/gateway.js';
import { META_KEYS } from '../mcp/gateway.js';

/**
 * The names of the gateway's tools whose approval mode is `destructive`.
 *
 * @example
 * ```ts
 * await destructiveTools(gateway); // ['write_file', 'move_file']
 * ```
 */
export async function destructiveTools(gateway: Gateway): Promise<string[]> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = gateway.createServer();
  await server.connect(serverSide);
  const client = new Client({ name: 'tool-envelope-banner', version: '1' });
  await client.connect(clientSide);
  try {
    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      for (const t of page.tools) if (t._meta?.[META_KEYS.approvalMode] === 'destructive') names.push(t.name);
      cursor = page.nextCursor;
    } while (cursor);
    return names;
  } finally {
    await client.close();
    await server.close();
  }
}

/**
 * The banner lines for `tools` (none when there are none): which pause, why, how to release them.
 *
 * @example
 * ```ts
 * approvalBanner(['delete_entities'], 'tool-envelope', '--store ./tool-envelope.db');
 * ```
 */
export function approvalBanner(tools: readonly string[], command: string, storeArgs: string): string[] {
  if (tools.length === 0) return [];
  const shown = tools.length > 6 ? `${tools.slice(0, 6).join(', ')} and ${tools.length - 6} more` : tools.join(', ');
  return [
    `Destructive tools pause for an approver (the default policy; --policy to change it): ${shown}`,
    `  release a paused call: ${command} audit approvals ${storeArgs}  then  ${command} audit approvals approve ID ${storeArgs}`,
  ];
}
