/**
 * The SDK v2 `Server` of one gateway session. Through the SDK's `_wrapHandler` hook, a 2025-era
 * `tools/call` of the common shape (string `name`, object `arguments`, a plain `_meta`) skips the SDK's
 * three zod checks, the last of which only re-validates the gateway's own envelope; any other request
 * takes the SDK's path, so malformed input gets the SDK's errors. A speed trick (bench/README.md); its
 * reference, {@link useReferenceToolDispatch}, must give the same answers (session-server.test.ts).
 */
import { Server } from '@modelcontextprotocol/server';
import type { JSONRPCRequest, Result, ServerContext } from '@modelcontextprotocol/server';
import { withClientEra } from '../upstream/client-era.js';

/** A `tools/call` handler as the gateway registers it. */
export type ToolCallHandler = (req: { method: 'tools/call'; params: Record<string, unknown> & { name: string } }, ctx: ServerContext) => Promise<Result>;

let referenceDispatch = false;

/**
 * Makes every {@link SessionServer} built from now on dispatch `tools/call` as the SDK's `Server`
 * does (zod checks of the request and the result), the reference of the plain path; returns
 * whether it was on. For A/B measurements (a gateway process turns it on with `--import`) and the tests.
 */
export function useReferenceToolDispatch(on: boolean): boolean {
  const before = referenceDispatch;
  referenceDispatch = on;
  return before;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  // An own `__proto__` key stays data in a parsed body but not in the SDK's copy: the SDK's path.
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !Object.hasOwn(v, '__proto__');
}

/**
 * Whether a `tools/call` request has the shape for which the SDK's request check is the identity:
 * it would accept it and hand the handler the same `name`, `arguments` and `_meta`.
 */
export function isPlainToolCall(request: JSONRPCRequest): boolean {
  const params: unknown = request.params;
  if (!isRecord(params)) return false;
  for (const key in params) if (key !== 'name' && key !== 'arguments' && key !== '_meta') return false;
  if (typeof params.name !== 'string') return false;
  if (params.arguments !== undefined && !isRecord(params.arguments)) return false;
  const meta = params._meta;
  if (meta === undefined) return true;
  if (!isRecord(meta) || 'io.modelcontextprotocol/related-task' in meta) return false;
  const token = meta.progressToken;
  return token === undefined || typeof token === 'string' || Number.isSafeInteger(token);
}

/**
 * An SDK `Server` whose 2025-era `tools/call` requests of the common shape skip the SDK's zod
 * re-validation (see the file's comment); everything else is the SDK's `Server`.
 */
export class SessionServer extends Server {
  /** Set by {@link serveToolCalls} just before it registers, so that `_wrapHandler` sees it. */
  private toolCalls: ToolCallHandler | undefined;

  /** Serves `tools/call` with `handler` (in the session's client era): through the SDK's checks, or for a plain 2025-era request, directly. */
  serveToolCalls(handler: ToolCallHandler, era: 'modern' | 'legacy' = 'modern'): void {
    const inEra: ToolCallHandler = era === 'legacy' ? (req, ctx) => withClientEra('legacy', handler, req, ctx) : handler;
    this.toolCalls = referenceDispatch ? undefined : inEra;
    this.setRequestHandler('tools/call', (req, ctx) => inEra(req as Parameters<ToolCallHandler>[0], ctx) as ReturnType<ToolCallHandler> as never);
  }

  /**
   * `completion/complete` is served whatever the capabilities say: an upstream may answer it without
   * declaring `completions` (the SDK v2 McpServer with templates does), and the gateway relays what
   * it answers rather than refuse it. The gateway still announces only what its upstreams declare.
   */
  protected override assertRequestHandlerCapability(method: string): void {
    if (method !== 'completion/complete') super.assertRequestHandlerCapability(method);
  }

  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    const sdk = super._wrapHandler(method, handler);
    const direct = this.toolCalls;
    if (method !== 'tools/call' || direct === undefined) return sdk;
    // A modern-era request carries its `_meta` envelope: the SDK's input-required rules apply to it.
    return (request, ctx) =>
      ctx.mcpReq.envelope === undefined && isPlainToolCall(request)
        ? direct({ method: 'tools/call', params: request.params as Parameters<ToolCallHandler>[0]['params'] }, ctx)
        : sdk(request, ctx);
  }
}
