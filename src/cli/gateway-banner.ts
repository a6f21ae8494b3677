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
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import type { Gateway } from '../mcp/gateway.js';
import { META_KEYS } from '../mcp/meta.js';

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
 * `caller` is who unauthenticated calls act for (the operator's principal): an approval is refused
 * when its approver is in the call's own chain, so the banner says who may not release them.
 *
 * @example
 * ```ts
 * approvalBanner(['delete_entities'], 'tool-envelope', '--store ./tool-envelope.db', 'user:alice');
 * ```
 */
export function approvalBanner(tools: readonly string[], command: string, storeArgs: string, caller?: string): string[] {
  if (tools.length === 0) return [];
  const shown = tools.length > 6 ? `${tools.slice(0, 6).join(', ')} and ${tools.length - 6} more` : tools.join(', ');
  const lines = [
    `Destructive tools pause for an approver (the default policy; --policy to change it): ${shown}`,
    `  release a paused call: ${command} audit approvals ${storeArgs}  then  ${command} audit approvals approve ID ${storeArgs}`,
  ];
  if (caller !== undefined) {
    lines.push(
      `  the approver is the OS user running that command (or an approver token's identity) and may not be ${caller}, who the calls act for; to let ${caller} approve its own calls, give a --policy with selfApproval (docs/governance.md)`,
    );
  }
  return lines;
}
