/**
 * The part of the gateway's start banner that says which upstream tools pause for an approver
 * (under the default policy the destructive ones: the ContextOS per-mode default; under --policy
 * what the policy decides for each) and how to release them. Read through an in-process MCP client of the gateway, so the banner shows exactly
 * the tools and modes a real client sees.
 */
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { isApprovalMode, type JsonObject, type Principal } from 'tool-envelope/core';
import { explainInput } from '../../governance/policy-explain.js';
import type { CompiledPolicy, ResolveApprovalInput } from '../../governance/policy-types.js';
import type { Gateway } from '../../mcp/gateway/gateway.js';
import { META_KEYS } from '../../mcp/wire/meta-keys.js';
import { printable } from '../../store/printable.js';

/** The names of the gateway's tools whose approval mode is `destructive`. */
export async function destructiveTools(gateway: Gateway): Promise<string[]> {
  return (await listedTools(gateway)).filter((t) => t.mode === 'destructive').map((t) => t.name);
}

/** A tool as a client of the gateway lists it: its name, approval mode and MCP annotations. */
export interface ListedTool {
  name: string;
  mode: unknown;
  annotations: JsonObject | undefined;
}

/** Every tool of the gateway, read through an in-process MCP client. */
export async function listedTools(gateway: Gateway): Promise<ListedTool[]> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = gateway.createServer();
  await server.connect(serverSide);
  const client = new Client({ name: 'tool-envelope-banner', version: '1' });
  await client.connect(clientSide);
  try {
    const tools: ListedTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      for (const t of page.tools) tools.push({ name: t.name, mode: t._meta?.[META_KEYS.approvalMode], annotations: t.annotations as JsonObject | undefined });
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  } finally {
    await client.close();
    await server.close();
  }
}

/**
 * Which tools a policy file pauses, asked of the policy the way the pipeline asks it (through
 * `explainInput`): a call at the tool's mode by `principalChain` (who unauthenticated calls act
 * for). `pause`: paused whatever the arguments; `depends`: a require-approval rule with a `when`
 * condition was reached, so whether a call pauses depends on its arguments.
 */
export function policyPauses(
  tools: readonly ListedTool[],
  policy: CompiledPolicy,
  principalChain: readonly Principal[],
): { pause: string[]; depends: string[] } {
  const pause: string[] = [];
  const depends: string[] = [];
  const rules = policy.document.rules ?? [];
  for (const t of tools) {
    if (!isApprovalMode(t.mode)) continue;
    const input: ResolveApprovalInput = {
      tool: t.name,
      ceiling: t.mode,
      requested: t.mode,
      principalChain,
      args: {},
      evidenceRefs: [],
      idempotencyKey: null,
      riskTags: [],
    };
    if (t.annotations !== undefined) input.toolAnnotations = t.annotations;
    const { decision, explanation } = explainInput(policy, input);
    const reached = (explanation?.rules ?? []).filter((r) => explanation!.deciding === -1 || r.index <= explanation!.deciding);
    const conditional = reached.some((r) => r.when !== undefined && rules[r.index]?.effect === 'require-approval');
    if (conditional) depends.push(t.name);
    else if (decision.effect === 'require-approval') pause.push(t.name);
  }
  return { pause, depends };
}

/** Longest tool name the banner prints whole: names come from upstreams (hostile), a line is for a reader. */
const NAME_MAX = 80;

function listOf(tools: readonly string[]): string {
  const shown = tools.slice(0, 6).map((t) => printable(t.length > NAME_MAX ? `${t.slice(0, NAME_MAX)}… (${t.length} characters)` : t));
  return tools.length > 6 ? `${shown.join(', ')} and ${tools.length - 6} more` : shown.join(', ');
}

/**
 * How a paused call is released: `command` (`tool-envelope`) `audit approvals` on the store
 * (`storeArgs`), or, when the approvals are in the gateway's memory (`inMemory` says why: the flag),
 * only in its console at `consoleUrl` (none without `--console`).
 */
export type Release = { command: string; storeArgs: string } | { command: string; inMemory: string; consoleUrl: string | undefined };

/** The lines on releasing paused calls, and on who may. */
function releaseLines(release: Release, caller: string | undefined): string[] {
  const selfApproval = (who: string) =>
    `${who} and may not be ${caller}, who the calls act for; to let ${caller} approve its own calls, give a --policy with selfApproval (docs/governance.md)`;
  if ('storeArgs' in release) {
    const { command, storeArgs } = release;
    return [
      `  release a paused call: ${command} audit approvals ${storeArgs}  then  ${command} audit approvals approve ID ${storeArgs}`,
      ...(caller === undefined ? [] : [`  ${selfApproval("the approver is the OS user running that command (or an approver token's identity)")}`]),
    ];
  }
  const where = `with ${release.inMemory} the approvals are held in this process's memory, out of reach of '${release.command} audit approvals'`;
  if (release.consoleUrl === undefined)
    return [
      `  paused calls cannot be released, only expire (--approval-ttl): ${where}; give --console to release them in this gateway's console, or --store FILE`,
    ];
  return [
    `  release a paused call: in this gateway's console only, ${release.consoleUrl}: ${where} (give --store FILE for that)`,
    ...(caller === undefined ? [] : [`  ${selfApproval("the approver is the console's operator (without --auth or OIDC: the OS user running this gateway)")}`]),
  ];
}

/**
 * The banner lines for `tools` (none when there are none): which pause, why, how to release them.
 * `caller` is who unauthenticated calls act for (the operator's principal): an approval is refused
 * when its approver is in the call's own chain, so the banner says who may not release them.
 */
export function approvalBanner(tools: readonly string[], release: Release, caller?: string, policy?: { file: string; depends: readonly string[] }): string[] {
  if (tools.length === 0 && (policy?.depends.length ?? 0) === 0) return [];
  const lines: string[] = [];
  if (policy === undefined) lines.push(`Destructive tools pause for an approver (the default policy; --policy to change it): ${listOf(tools)}`);
  else {
    if (tools.length > 0) lines.push(`Tools that pause for an approver (the policy ${policy.file}): ${listOf(tools)}`);
    if (policy.depends.length > 0)
      lines.push(`Tools that may pause, depending on the call's arguments (a 'when' condition of the policy ${policy.file}): ${listOf(policy.depends)}`);
  }
  lines.push(...releaseLines(release, caller));
  return lines;
}
