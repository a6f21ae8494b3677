/**
 * Tools a policy hides from a caller (`hide: true` on a deny rule, see `PolicyRule.hide`): left out
 * of that caller's `tools/list`, and a call to one answered exactly as for a tool no upstream has,
 * so the caller cannot tell a hidden tool from a missing one. Per caller: one the policy lets call
 * the tool still sees it. Decided on the policy in force when the list or the call is made.
 */
import { ProtocolErrorCode as ErrorCode, type Tool } from '@modelcontextprotocol/server';
import type { JsonObject } from 'tool-envelope/core';
import { verifiedChain, type Identity } from '../../governance/identity.js';
import { isCompiledPolicy } from '../../governance/policy-resolve.js';
import type { Policy } from '../../governance/policy-types.js';
import { rpcError } from '../wire/rpc-errors.js';
import { policyIdentityOf } from './calls.js';

/** True when `policy` hides the tool `name` (with its MCP annotations) from `identity`. */
export function hidesTool(policy: Policy | undefined, name: string, annotations: unknown, identity: Identity): boolean {
  if (policy === undefined || !isCompiledPolicy(policy)) return false;
  return policy.hides({
    tool: name,
    principalChain: verifiedChain(identity),
    identity: policyIdentityOf(identity),
    ...(annotations !== undefined && { toolAnnotations: annotations as JsonObject }),
  });
}

/** The tools `identity` may see under `policy` (the list as it is when the policy hides nothing from it). */
export function visibleTools(policy: Policy | undefined, tools: Tool[], identity: Identity): Tool[] {
  if (policy === undefined || !isCompiledPolicy(policy)) return tools;
  // One policy for the whole list: a reload meanwhile does not mix two.
  const hidden = tools.filter((t) => hidesTool(policy, t.name, t.annotations, identity));
  return hidden.length === 0 ? tools : tools.filter((t) => !hidden.includes(t));
}

/** The error a call to a tool no upstream has gets (`ToolRoutes.routeOf`), for a hidden one. */
export function unknownToolError(name: string): Error {
  return rpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
}
