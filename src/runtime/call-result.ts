/**
 * Pieces of building an outcome that need no call state: the error for schema
 * violations, and binary results turned into MCP content blocks.
 */
import { bytesToBase64, type JsonObject, type JsonValue, type ContentBlock, type ToolError, defaultRetryable } from 'tool-envelope/core';
import { ToolBinary } from './context.js';
import type { Violation } from './schema.js';

/**
 * The tool error for arguments or a result that fail their schema: the first five
 * violations in `detail`, all of them in `details.violations`.
 */
export function violationsError(category: 'invalid-argument' | 'internal', code: string, what: string, violations: Violation[]): ToolError {
  const shown = violations.slice(0, 5).map((v) => `${v.path || '(root)'} ${v.message}`);
  const more = violations.length > 5 ? `; and ${violations.length - 5} more` : '';
  const details: JsonObject = { violations: violations.map((v) => ({ ...v })) as unknown as JsonValue[] };
  return {
    category,
    code,
    detail: `${what}: ${shown.join('; ')}${more}`,
    retryable: defaultRetryable(category),
    details,
  };
}

/** True for an object whose prototype is `Object.prototype` or null (what tool arguments must be). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * A handler's value with its binaries (a {@link ToolBinary}, bytes, or either at the top
 * level of an array or plain object) replaced by descriptors, and the content blocks
 * (image, audio or embedded resource) that carry them.
 */
export function extractBinaries(
  value: unknown,
  toolCallId: string,
): { value: unknown; content: ContentBlock[] | undefined; firstBinary: ToolBinary | undefined } {
  const content: ContentBlock[] = [];
  let first: ToolBinary | undefined;
  const take = (b: ToolBinary): JsonObject => {
    first ??= b;
    const index = content.length;
    const mime = b.mimeType;
    const data = bytesToBase64(b.data);
    if (mime.startsWith('image/')) content.push({ type: 'image', data, mimeType: mime });
    else if (mime.startsWith('audio/')) content.push({ type: 'audio', data, mimeType: mime });
    else {
      const uri = b.uri ?? `tool-envelope://calls/${encodeURIComponent(toolCallId)}/content/${index}`;
      content.push({ type: 'resource', resource: { uri, mimeType: mime, blob: data } });
    }
    const descriptor: JsonObject = { contentIndex: index, mimeType: mime, sizeBytes: b.data.byteLength };
    if (b.name !== undefined) descriptor.name = b.name;
    return descriptor;
  };
  let out: unknown = value;
  if (value instanceof ToolBinary) out = take(value);
  else if (value instanceof Uint8Array || value instanceof ArrayBuffer) {
    out = take(new ToolBinary(value instanceof ArrayBuffer ? new Uint8Array(value) : value, 'application/octet-stream'));
  } else if (Array.isArray(value)) out = value.map((item) => (item instanceof ToolBinary ? take(item) : item));
  else if (isPlainObject(value)) {
    // Only the top level is searched: a binary deeper down becomes { $binary } JSON through toJsonSafe.
    out = Object.fromEntries(Object.entries(value).map(([k, item]) => [k, item instanceof ToolBinary ? take(item) : item]));
  }
  return { value: out, content: content.length === 0 ? undefined : content, firstBinary: first };
}
