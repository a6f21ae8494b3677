/**
 * The server adapter: publishes the tools of a tool-envelope runtime on an MCP
 * server (the SDK v2 low-level `Server`, `@modelcontextprotocol/server`), in a chosen contract.
 * The same server serves both protocol eras (2025-11-25 sessions and 2026-07-28 per-request
 * envelopes): hand {@link createEnvelopeServer} to `serveStdio` or `createMcpHandler` as the factory.
 */
import { ProtocolErrorCode, Server, type Tool } from '@modelcontextprotocol/server';
import { PACKAGE_VERSION } from '../version.js';
import { isToolEnvelopeError, isJsonObject, type ToolOutcome } from 'tool-envelope/core';
import type { InvokeOptions } from '../runtime/invoke.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Session } from '../runtime/session.js';
import { DEFAULT_PREVIEW_LIMIT_BYTES, annotationsForMode, envelopeOutputSchema, outcomeToCallToolResult, type Dialect } from './envelope.js';
import { META_KEYS } from './wire/meta-keys.js';
import { rpcError } from './wire/rpc-errors.js';
import { traceIdFrom } from './wire/trace-id.js';

export interface EnvelopeServerOptions {
  /** Contract of the envelopes; default `mcec`. */
  dialect?: Dialect;
  /** Byte limit of the text block's preview (and DW `payload_preview`); default 4096. */
  previewLimitBytes?: number;
  /** `serverInfo`; default `tool-envelope` 0.1.0. */
  name?: string;
  version?: string;
  /** An MCEC session shared by every call of this server (observations, `lastObservation`). */
  session?: Session;
  /**
   * How a call runs; default `runtime.invoke`. Pass a governed invoker here to add policy,
   * idempotency and audit.
   */
  invoke?: (name: string, args: unknown, options: InvokeOptions) => Promise<ToolOutcome>;
  /**
   * Draft (off by default): a failed result also carries MCP's draft ToolFailure metadata,
   * `_meta["io.modelcontextprotocol/toolFailure"]` (SEP PR #3313), mapped from the canonical error.
   */
  toolFailureMeta?: boolean;
}

/**
 * An MCP server that publishes every runtime tool: `tools/list` gives each its input schema,
 * the contract's envelope schema as `outputSchema` and annotations derived from its approval
 * mode; `tools/call` answers with the envelope as `structuredContent`, a text block (the
 * envelope JSON, or its preview and a note), image/audio blocks for binary results, and
 * `isError` = !ok. An unknown tool or malformed request stays a JSON-RPC error.
 *
 * @example
 * ```ts
 * const runtime = createRuntime({ tools: [readText] });
 * serveStdio(() => createEnvelopeServer(runtime, { dialect: 'mcec' }));
 * ```
 */
export function createEnvelopeServer(runtime: Runtime, options: EnvelopeServerOptions = {}): Server {
  const dialect = options.dialect ?? 'mcec';
  const limit = options.previewLimitBytes ?? DEFAULT_PREVIEW_LIMIT_BYTES;
  const invoke = options.invoke ?? ((name, args, o) => runtime.invoke(name, args, o));
  const server = new Server(
    { name: options.name ?? 'tool-envelope', version: options.version ?? PACKAGE_VERSION },
    { capabilities: { tools: { listChanged: false } } },
  );

  server.setRequestHandler('tools/list', async () => ({
    tools: runtime.list().map((t): Tool => {
      const meta: Record<string, unknown> = { ...t.meta, [META_KEYS.approvalMode]: t.approvalMode };
      if (t.outputSchema) meta[META_KEYS.upstreamOutputSchema] = t.outputSchema;
      return {
        name: t.name,
        ...(t.title !== undefined ? { title: t.title } : {}),
        description: t.description,
        inputSchema: t.inputSchema as Tool['inputSchema'],
        outputSchema: envelopeOutputSchema(dialect),
        annotations: { ...t.annotations, ...annotationsForMode(t.approvalMode, t.annotations.idempotentHint) },
        _meta: meta,
      };
    }),
  }));

  server.setRequestHandler('tools/call', async (req, ctx) => {
    const { name } = req.params;
    if (!runtime.get(name)) throw rpcError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
    // The SDK lifts the 2026-07-28 envelope keys out of `_meta`: what is left is the caller's own.
    const meta = ctx.mcpReq._meta ?? req.params._meta;
    const progressToken = meta?.progressToken;
    const traceparent = isJsonObject(meta) && typeof meta[META_KEYS.traceparent] === 'string' ? (meta[META_KEYS.traceparent] as string) : undefined;
    const invokeOptions: InvokeOptions = {
      signal: ctx.mcpReq.signal,
      ...(options.session ? { session: options.session } : {}),
      ...(traceparent ? { ids: { traceId: traceIdFrom(traceparent) } } : {}),
      ...(progressToken !== undefined
        ? {
            onProgress: (p) => {
              void ctx.mcpReq
                .notify({
                  method: 'notifications/progress',
                  params: {
                    progressToken,
                    progress: p.progress,
                    ...(p.total !== undefined ? { total: p.total } : {}),
                    ...(p.message !== undefined ? { message: p.message } : {}),
                  },
                })
                .catch(() => {});
            },
          }
        : {}),
    };
    let outcome: ToolOutcome;
    try {
      outcome = await invoke(name, req.params.arguments ?? {}, invokeOptions);
    } catch (err) {
      if (isToolEnvelopeError(err, 'unknown-tool')) throw rpcError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
      if (isToolEnvelopeError(err)) throw rpcError(ProtocolErrorCode.InvalidParams, err.message);
      throw err;
    }
    return outcomeToCallToolResult(outcome, { dialect, previewLimitBytes: limit, ...(options.toolFailureMeta ? { toolFailure: {} } : {}) }).result;
  });
  return server;
}
