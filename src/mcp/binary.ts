/**
 * Binary content in the envelope, described instead of copied. A plain upstream result with
 * image, audio or blob-resource blocks keeps those blocks in `content` as they are; the
 * envelope's result lists each block, and a binary one as its kind, MIME type, size, SHA-256 and
 * index in `content`, so the base64 travels once, not twice. When the result is structured (an
 * object), the binary blocks are described beside its own keys, under {@link BINARY_RESULT_KEY}.
 */
import { createHash } from 'node:crypto';
import { isJsonObject, type JsonObject, isOk, type ContentBlock, type ToolOutcome } from 'tool-envelope/core';

/** What the envelope says about one binary content block. */
export interface BinaryDescription {
  /** The block's own `type` (`image`, `audio`, `resource`). */
  type: string;
  /** What the bytes are: `image`, `audio`, or `blob` for an embedded resource's blob. */
  kind: 'image' | 'audio' | 'blob';
  mimeType: string | null;
  /** Size of the decoded bytes. */
  bytes: number;
  /** SHA-256 of the decoded bytes, lowercase hex. */
  sha256: string;
  /** Index of the block in the result's `content`, where the bytes are. */
  contentIndex: number;
  /** For an embedded resource: its URI. */
  uri?: string;
}

function describe(data: string, base: Omit<BinaryDescription, 'bytes' | 'sha256'>): BinaryDescription {
  const buf = Buffer.from(data, 'base64');
  return { ...base, bytes: buf.length, sha256: createHash('sha256').update(buf).digest('hex') };
}

/** The description of a content block when it carries base64 bytes, else `undefined`. */
export function describeBinaryBlock(block: ContentBlock, contentIndex: number): BinaryDescription | undefined {
  if ((block.type === 'image' || block.type === 'audio') && typeof block.data === 'string') {
    return describe(block.data, { type: block.type, kind: block.type, mimeType: typeof block.mimeType === 'string' ? block.mimeType : null, contentIndex });
  }
  const resource = block.type === 'resource' ? block.resource : undefined;
  if (resource && typeof resource === 'object' && !Array.isArray(resource) && typeof resource.blob === 'string') {
    return describe(resource.blob, {
      type: 'resource',
      kind: 'blob',
      mimeType: typeof resource.mimeType === 'string' ? resource.mimeType : null,
      contentIndex,
      ...(typeof resource.uri === 'string' ? { uri: resource.uri } : {}),
    });
  }
  return undefined;
}

/** `content` with every binary block replaced by its description; `undefined` when no block is binary. */
export function describeContent(content: readonly ContentBlock[]): JsonObject[] | undefined {
  let any = false;
  const out = content.map((block, i) => {
    const d = describeBinaryBlock(block, i);
    if (d) any = true;
    return (d ?? block) as unknown as JsonObject;
  });
  return any ? out : undefined;
}

/** The key of a structured result under which its binary content blocks are described. */
export const BINARY_RESULT_KEY = 'tool-envelope/binary';

/**
 * For a successful plain result whose outcome is `{ content }` (what the reader makes of content
 * that is not only text), the same outcome with the binary blocks described. For one whose result
 * is an object (the upstream's `structuredContent`), the same object with the descriptions of the
 * binary blocks added under {@link BINARY_RESULT_KEY} (an object that has that key already is left
 * as it is). Otherwise `outcome`.
 */
export function withBinaryDescribed(outcome: ToolOutcome, content: readonly ContentBlock[] | undefined): ToolOutcome {
  if (!content || !isOk(outcome)) return outcome;
  const result = outcome.result;
  if (!isJsonObject(result)) return outcome;
  const blocks = result.content;
  if (Array.isArray(blocks) && Object.keys(result).length === 1 && blocks.length === content.length) {
    if (blocks.some((b, i) => b !== (content[i] as unknown))) return outcome;
    const described = describeContent(content);
    return described ? { ...outcome, result: { content: described } } : outcome;
  }
  if (BINARY_RESULT_KEY in result) return outcome;
  const binary: JsonObject[] = [];
  content.forEach((block, i) => {
    const d = describeBinaryBlock(block, i);
    if (d) binary.push(d as unknown as JsonObject);
  });
  return binary.length > 0 ? { ...outcome, result: { ...result, [BINARY_RESULT_KEY]: binary } } : outcome;
}
