/**
 * Envelopes on MCP: the `outputSchema` a tool publishes for a contract, the
 * tool annotations that match an approval mode (and back), and the
 * `CallToolResult` that carries an outcome.
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult, Tool, ToolAnnotations } from '@modelcontextprotocol/server';
import {
  contracts,
  type ContractId,
  contextosSchema,
  dwSchema,
  mcecSchema,
  mcec202607Schema,
  dw14Schema,
  type JsonObject,
  isOk,
  type ContentBlock,
  type ToolOutcome,
  createPreview,
  type ApprovalMode,
} from 'tool-envelope/core';
import { toolFailureMetaOf } from './wire/tool-failure.js';

/** The contract the envelopes are written in. */
export type Dialect = ContractId;

/** The default preview byte limit, the one the Durable Workflow owner uses. */
export const DEFAULT_PREVIEW_LIMIT_BYTES = 4096;

type OutputSchema = NonNullable<Tool['outputSchema']>;

function withoutMeta(schema: Record<string, unknown>): Record<string, unknown> {
  // MCP clients compile outputSchema with whatever JSON Schema dialect they default to; the
  // contracts only use keywords that mean the same in draft-07 and 2020-12, so the $schema
  // marker is dropped to keep such validators from rejecting an unknown meta-schema.
  const { $schema: _s, ...rest } = schema;
  return rest;
}

const OUTPUT_SCHEMAS: Partial<Record<Dialect, OutputSchema>> = {
  mcec: withoutMeta(mcecSchema) as OutputSchema,
  dw: withoutMeta(dwSchema) as OutputSchema,
  // MCP requires `type: object` at the root: publish the result envelope definition (it has no refs).
  contextos: {
    title: 'ContextOS ToolEnvelope v1 result',
    ...(contextosSchema.$defs.ToolResultEnvelope as unknown as Record<string, unknown>),
  } as unknown as OutputSchema,
};

/** The `outputSchema` tools publish when their results are envelopes of `dialect`. */
export function envelopeOutputSchema(dialect: Dialect): OutputSchema {
  // The revisions' schemas are parsed only when a revision is used.
  if (dialect === 'mcec@2026-07') return (OUTPUT_SCHEMAS[dialect] ??= withoutMeta(mcec202607Schema()) as OutputSchema);
  if (dialect === 'dw@14') return (OUTPUT_SCHEMAS[dialect] ??= withoutMeta(dw14Schema()) as OutputSchema);
  return OUTPUT_SCHEMAS[dialect]!;
}

/**
 * The approval mode a tool's MCP annotations imply: `readOnlyHint` → `read_only`,
 * `destructiveHint` → `destructive`, `openWorldHint` → `network`, otherwise `local_write`.
 * Only hints that are explicitly `true` count (MCP's own defaults would make every
 * unannotated tool destructive).
 */
export function modeFromAnnotations(annotations: ToolAnnotations | undefined): ApprovalMode {
  if (annotations?.readOnlyHint === true) return 'read_only';
  if (annotations?.destructiveHint === true) return 'destructive';
  if (annotations?.openWorldHint === true) return 'network';
  return 'local_write';
}

/** The MCP annotations that describe an approval mode. */
export function annotationsForMode(mode: ApprovalMode, idempotent?: boolean): ToolAnnotations {
  const readOnly = mode === 'read_only';
  return {
    readOnlyHint: readOnly,
    destructiveHint: mode === 'destructive',
    idempotentHint: idempotent ?? readOnly,
    openWorldHint: mode === 'network' || mode === 'delegated',
  };
}

export interface ToCallToolResultOptions {
  dialect: Dialect;
  /** Byte limit of the text block and of the DW preview; default 4096. */
  previewLimitBytes?: number;
  /**
   * Content blocks to send as they are (the gateway passes the upstream's). When absent, the
   * result gets a text block with the envelope JSON (or its preview) plus the outcome's binary blocks.
   */
  content?: CallToolResult['content'];
  /**
   * Draft: a failed result also carries MCP's draft ToolFailure metadata (wire/tool-failure.ts), its
   * `correlationId` the outcome's `toolCallId` (else this one, else a fresh UUID), merged into
   * `upstreamMeta` (an upstream's own ToolFailure is kept as it is).
   */
  toolFailure?: { now?: number; correlationId?: string; upstreamMeta?: unknown };
}

/**
 * Turns an outcome into the `CallToolResult` that carries it: `structuredContent` is the
 * envelope, `isError` is `!ok`, and the content is either the given blocks or a text block
 * with the envelope JSON (its byte-bounded preview and a note when it is too long) followed
 * by the outcome's image/audio blocks.
 *
 * @example
 * ```ts
 * const { result } = outcomeToCallToolResult(success({ n: 1 }), { dialect: 'mcec' });
 * result.structuredContent; // { ok: true, result: { n: 1 } }
 * ```
 */
export function outcomeToCallToolResult(outcome: ToolOutcome, options: ToCallToolResultOptions): { result: CallToolResult; envelope: JsonObject } {
  const limit = options.previewLimitBytes ?? DEFAULT_PREVIEW_LIMIT_BYTES;
  // Content blocks travel in `content`; repeating them inside the envelope would double large payloads.
  const { content: blocks, ...rest } = outcome;
  const envelope = contracts[options.dialect].encode(rest, { previewLimitBytes: limit }) as unknown as JsonObject;
  let content = options.content;
  if (!content) {
    content = [envelopeTextBlock(envelope, limit)];
    for (const b of blocks ?? []) if (isBinaryBlock(b)) content.push(b as CallToolResult['content'][number]);
  }
  const result: CallToolResult = { content, structuredContent: envelope, isError: !isOk(outcome) };
  const tf = options.toolFailure;
  if (tf && result.isError && outcome.error) {
    const correlationId = outcome.toolCallId ?? tf.correlationId ?? randomUUID();
    result._meta = toolFailureMetaOf(outcome.error, correlationId, tf.now ?? Date.now(), tf.upstreamMeta) as CallToolResult['_meta'];
  }
  return { result, envelope };
}

/** A text block with the envelope JSON, or its byte-bounded preview and a note when it is longer. */
export function envelopeTextBlock(envelope: JsonObject, limitBytes: number): { type: 'text'; text: string } {
  const preview = createPreview(envelope, limitBytes);
  if (!preview.truncated) return { type: 'text', text: preview.text };
  return {
    type: 'text',
    text: `${preview.text}\n[tool-envelope: preview cut to ${limitBytes} bytes; the complete envelope is in structuredContent]`,
  };
}

function isBinaryBlock(b: ContentBlock): boolean {
  return b.type === 'image' || b.type === 'audio';
}
