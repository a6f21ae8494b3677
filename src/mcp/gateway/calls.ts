/**
 * The pure parts of the gateway's tool path: what one call is (read from its request, with the
 * session's verified identity), the client's answer to it (the envelope next to the upstream's own
 * fields), a call no client waits for (an approved one), the tools as published, and the
 * capabilities the gateway announces.
 */
import { ProtocolErrorCode as ErrorCode, type CallToolResult, type Request, type ServerCapabilities, type Tool } from '@modelcontextprotocol/server';
import { isJsonObject, type JsonObject, failure, toolError, type Principal, type ToolOutcome, type ApprovalMode } from 'tool-envelope/core';
import { composeChain, verifiedChain, type Identity } from '../../governance/identity.js';
import type { PolicyIdentity } from '../../governance/policy-types.js';
import { newUuidV7 } from '../../runtime/ids.js';
import { copyOutcome } from '../../governance/pipeline-outcomes.js';
import { type Dialect, outcomeToCallToolResult, type ToCallToolResultOptions } from '../envelope.js';
import { faultOutcome, rpcToolFailure, toProtocolError } from '../upstream/fault-outcomes.js';
import { withBinaryDescribed } from '../binary.js';
import { readToolResult } from '../reader.js';
import { answerBytesOver, tooLargeOutcome } from '../wire/result-size.js';
import type { CallExecuted, GatewayCall } from '../call.js';
import { tenantKey, type UpstreamPool } from '../upstream/instances.js';
import { parsePrincipalChain } from './governor.js';
import { META_KEYS } from '../wire/meta-keys.js';
import { rpcError } from '../wire/rpc-errors.js';
import { traceIdFrom } from '../wire/trace-id.js';
import { toolOutputSchema, type OutputSchemaStyle } from './output-schema.js';
import { type Upstream, UpstreamFault } from '../upstream/upstream.js';

/** Where a gateway tool goes: its upstream, its name there, its listing and its approval mode. */
export interface ToolRoute {
  upstream: Upstream;
  upstreamTool: string;
  tool: Tool;
  mode: ApprovalMode;
}

/**
 * The call a `tools/call` request describes. Who it acts for is `identity` (the session's
 * authentication, or the operator); the client's `_meta` chain only adds the agents acting under
 * it, and without one the client itself is that agent. Malformed `_meta` is a JSON-RPC error.
 */
export function describeCall(
  params: Record<string, unknown> & { name: string },
  route: ToolRoute,
  { identity, clientName, sessionId }: { identity: Identity; clientName?: string | undefined; sessionId?: string | undefined },
): GatewayCall {
  const meta = isJsonObject(params._meta) ? params._meta : {};
  const traceparent = typeof meta[META_KEYS.traceparent] === 'string' ? (meta[META_KEYS.traceparent] as string) : undefined;
  const idem = meta[META_KEYS.idempotencyKey] ?? meta[META_KEYS.idempotencyKeyShort];
  const chain = parsePrincipalChain(meta[META_KEYS.principalChain]);
  if (typeof chain === 'string') throw rpcError(ErrorCode.InvalidParams, `_meta["${META_KEYS.principalChain}"] ${chain}`);
  const evidence = meta[META_KEYS.evidenceRefs];
  if (evidence !== undefined && (!Array.isArray(evidence) || evidence.some((e) => typeof e !== 'string'))) {
    throw rpcError(ErrorCode.InvalidParams, `_meta["${META_KEYS.evidenceRefs}"] must be a list of strings`);
  }
  const requested = meta[META_KEYS.requestedMode];
  const composed = composeChain(verifiedOf(identity), chain ?? [{ kind: 'agent', id: clientName || 'mcp-client' }]);
  if (typeof composed === 'string') throw rpcError(ErrorCode.InvalidParams, `_meta["${META_KEYS.principalChain}"] ${composed}`);
  // Time-ordered: the audit log indexes it where the previous calls' ids are (see toolCallKey).
  const toolCallId = newUuidV7();
  const runId = meta[META_KEYS.runId];
  // Built by assignment in the order of the keys (per call: conditional spreads are V8's slow path).
  const metadata: JsonObject = { upstream: route.upstream.name, upstream_tool: route.upstreamTool };
  if (traceparent) metadata.traceparent = traceparent;
  const call: GatewayCall = {
    tool: params.name,
    ceiling: route.mode,
    args: isJsonObject(params.arguments) ? (params.arguments as JsonObject) : {},
    principalChain: composed.chain,
    verifiedPrincipals: composed.verified,
    evidenceRefs: (evidence as string[] | undefined) ?? NO_REFS,
    metadata,
    toolCallId,
    runId: typeof runId === 'string' ? runId : toolCallId,
    traceId: traceIdFrom(traceparent),
    identity: policyIdentityOf(identity),
    upstream: route.upstream.name,
    upstreamTool: route.upstreamTool,
    startedAt: Date.now(),
    caller: identity,
  };
  if (typeof idem === 'string' && idem !== '') call.idempotencyKey = idem;
  if (requested !== undefined) call.requestedMode = String(requested);
  if (sessionId) call.sessionId = sessionId;
  if (route.tool.annotations) call.toolAnnotations = route.tool.annotations as JsonObject;
  if (traceparent) call.traceparent = traceparent;
  if (clientName) call.clientName = clientName;
  return call;
}

const NO_REFS: readonly string[] = Object.freeze([]);

const policyIdentities = new WeakMap<Identity, PolicyIdentity>();
/** What policy conditions (and hidden tools, hidden-tools.ts) see of each identity (`identity` in a `when`), derived once per identity. */
export function policyIdentityOf(identity: Identity): PolicyIdentity {
  let seen = policyIdentities.get(identity);
  if (!seen) {
    const { principal } = identity;
    seen = { principal: `${principal.kind}:${principal.id}`, roles: identity.roles };
    if (principal.tenant_id !== undefined) seen.tenant = principal.tenant_id;
    if (identity.claims !== undefined) seen.claims = identity.claims;
    policyIdentities.set(identity, seen);
  }
  return seen;
}

/** The verified chain of each identity, derived once: `composeChain` copies its entries into every call's chain. */
const verifiedChains = new WeakMap<Identity, Principal[]>();
function verifiedOf(identity: Identity): Principal[] {
  let chain = verifiedChains.get(identity);
  if (!chain) verifiedChains.set(identity, (chain = verifiedChain(identity)));
  return chain;
}

/**
 * Stamps an executed outcome with the call's ids where it is made (it is the gateway's own object,
 * fresh from the upstream's answer): the gateway's ids replace any an upstream's envelope carried,
 * and the pipeline, finding them, copies nothing.
 */
export function stampIds(outcome: ToolOutcome, call: GatewayCall, policyDecisionId: string | undefined): void {
  outcome.capabilityId = call.tool;
  outcome.toolCallId = call.toolCallId;
  outcome.runId = call.runId;
  outcome.traceId = call.traceId;
  if (policyDecisionId !== undefined) outcome.policyDecisionId = policyDecisionId;
  if (call.sessionId) outcome.sessionId = call.sessionId;
}

/**
 * The client's answer to a finished call: the outcome (with the call's ids, stamped where it was
 * made) and the call's latency, as an envelope next to the upstream's own content blocks and every
 * other field of its answer (`_meta`, extensions). The outcome is copied once, here.
 */
export function answerOf(
  outcome: ToolOutcome,
  started: number,
  raw: CallToolResult | undefined,
  options: { dialect: Dialect; previewLimitBytes: number; toolFailureMeta?: boolean },
): { result: CallToolResult; envelope: JsonObject; enriched: ToolOutcome } {
  // Copied, then a key set by assignment: a spread followed by new keys is V8's slow path (copyOutcome).
  const enriched = copyOutcome(outcome);
  enriched.latencyMs = Math.round(performance.now() - started);
  const toResult: ToCallToolResultOptions = { dialect: options.dialect, previewLimitBytes: options.previewLimitBytes };
  // The upstream's own blocks stay exactly as they were; only gateway-made outcomes get a text block.
  if (outcome.content) toResult.content = outcome.content as CallToolResult['content'];
  if (options.toolFailureMeta) toResult.toolFailure = { upstreamMeta: raw?._meta };
  const { result, envelope } = outcomeToCallToolResult(enriched, toResult);
  if (raw) {
    // Keep every field of the upstream's answer (`_meta`, extensions); the envelope fields are ours.
    for (const key of Object.keys(raw)) {
      if (key === 'structuredContent' || key === 'isError' || key === 'content' || Object.hasOwn(result, key)) continue;
      Object.defineProperty(result, key, { value: raw[key], enumerable: true, writable: true, configurable: true });
    }
  }
  return { result, envelope, enriched };
}

/**
 * A tool as the gateway lists it: its gateway name, the envelope `outputSchema`, and in `_meta` its
 * approval mode, its upstream and the upstream's own output schema.
 */
export function publishTool(name: string, r: ToolRoute, dialect: Dialect, style: OutputSchemaStyle | undefined): Tool {
  const { outputSchema, ...tool } = r.tool;
  const meta: Record<string, unknown> = { ...tool._meta, [META_KEYS.approvalMode]: r.mode, [META_KEYS.upstream]: r.upstream.name };
  if (outputSchema) meta[META_KEYS.upstreamOutputSchema] = outputSchema;
  return { ...tool, name, outputSchema: toolOutputSchema(dialect, style), _meta: meta };
}

/** The capabilities the gateway announces: the union of the upstreams', plus tools. */
export function mergeCapabilities(upstreams: readonly Upstream[]): ServerCapabilities {
  const caps: ServerCapabilities = { tools: { listChanged: true } };
  for (const up of upstreams) {
    // The upstream client's view of its capabilities (v1 or v2 types: the same wire shape).
    const c = (up.capabilities ?? {}) as ServerCapabilities;
    if (c.resources) {
      caps.resources = {
        ...caps.resources,
        ...(c.resources.subscribe ? { subscribe: true } : {}),
        ...(c.resources.listChanged ? { listChanged: true } : {}),
      };
    }
    if (c.prompts) caps.prompts = { ...caps.prompts, ...(c.prompts.listChanged ? { listChanged: true } : {}) };
    if (c.completions) caps.completions = {};
    if (c.logging) caps.logging = {};
    if (c.experimental) caps.experimental = { ...caps.experimental, ...c.experimental };
    // An upstream's 2025-11-25 `tasks` capability is not announced: the gateway refuses task ids it
    // cannot bind to the caller; tasks go through the extension (`Gateway.getCapabilities`).
  }
  return caps;
}

/**
 * What {@link callDetached} needs of the gateway: its routes, the instance pool of an isolated
 * upstream, and its way of executing a routed call (on an instance when one is given).
 */
export interface DetachedHost {
  routeOf(tool: string): Promise<ToolRoute>;
  pool(upstream: Upstream): UpstreamPool | undefined;
  execute(route: ToolRoute, req: Request, instance?: Upstream): Promise<ToolOutcome>;
}

/**
 * Calls a tool with no client waiting for the answer (a call approved after its client got
 * `paused`). Never throws for a tool or upstream fault: an unknown tool and an upstream's JSON-RPC
 * error are failures. A tenant-isolated upstream runs it on the instance of the call's tenant.
 */
export async function callDetached(
  host: DetachedHost,
  tool: string,
  args: JsonObject,
  options: { traceparent?: string; principal?: Principal } = {},
): Promise<ToolOutcome> {
  let route: ToolRoute;
  try {
    route = await host.routeOf(tool);
  } catch (err) {
    return failure(toolError('no-target', 'tool-not-found', err instanceof Error ? err.message : String(err)));
  }
  const params: Record<string, unknown> = { name: route.upstreamTool, arguments: args };
  if (options.traceparent) params._meta = { traceparent: options.traceparent };
  try {
    const pool = route.upstream.spec.isolation === 'tenant' && options.principal ? host.pool(route.upstream) : undefined;
    const instance = pool && options.principal ? await pool.get(tenantKey(options.principal)) : undefined;
    return await host.execute(route, { method: 'tools/call', params }, instance);
  } catch (err) {
    const fault = toProtocolError(err) as Error & { code?: number; data?: unknown };
    return failure(
      toolError('internal', 'upstream-rpc-error', fault.message, {
        details: { upstream: route.upstream.name, rpcCode: typeof fault.code === 'number' ? fault.code : null },
      }),
    );
  }
}

/**
 * The outcome of an upstream's `tools/call` answer, beside the answer: read by the plain-failure
 * rules, binary content described, the answer's size checked against the one result limit (over it,
 * the answer is not kept: its content blocks never reach the client).
 */
export function toolOutcomeOf(upstream: Upstream, raw: CallToolResult, previewLimitBytes: number, maxResultBytes: number): CallExecuted {
  const rules = upstream.spec.failureRules;
  const outcome = withBinaryDescribed(
    readToolResult(raw as Parameters<typeof readToolResult>[0], rules ? { rules } : undefined),
    raw.content as ToolOutcome['content'],
  );
  const over = answerBytesOver(raw, outcome.result, previewLimitBytes, maxResultBytes);
  if (over !== undefined) return { outcome: tooLargeOutcome(upstream.name, over, maxResultBytes, 'client') };
  outcome.content = raw.content as ToolOutcome['content'];
  return { outcome, raw };
}

/**
 * The outcome of a `tools/call` that threw, made once from the fault as it happened: an upstream
 * fault, or an upstream's JSON-RPC error that means the tool failed, becomes an envelope; anything
 * else (a protocol fault, an unknown tool) is thrown on as the JSON-RPC error the client gets.
 */
export function failedOutcomeOf(upstream: Upstream, err: unknown, deadlineMs: number): ToolOutcome {
  if (err instanceof UpstreamFault && err.kind !== 'rpc') return faultOutcome(err, deadlineMs);
  const protocol = toProtocolError(err);
  const failed = rpcToolFailure(protocol, upstream.spec.failureRules);
  if (failed) return failed;
  throw protocol;
}
