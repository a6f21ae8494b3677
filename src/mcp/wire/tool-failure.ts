/**
 * The draft ToolFailure metadata of MCP (`_meta["io.modelcontextprotocol/toolFailure"]`, SEP PR #3313,
 * schema prototype PR #3312; a draft, not part of any released protocol version): the canonical
 * error written as it, and read back from it. Vendored as JSON Schema in
 * schemas/mcp-drafts/tool-failure.sep-3313.schema.json.
 */
import { isErrorCategory, isJsonObject, type ErrorCategory, type JsonObject, type ToolError } from 'tool-envelope/core';

/** The `_meta` key of the draft. */
export const TOOL_FAILURE_META_KEY = 'io.modelcontextprotocol/toolFailure';

/**
 * The canonical category beside the draft's object: its three classes cannot say which of the
 * twelve a failure is, and a reader of tool-envelope's own results gets it back exactly.
 */
export const TOOL_FAILURE_CATEGORY_META_KEY = 'tool-envelope/error-category';

/** The draft's `ToolFailure` object. */
export interface ToolFailureMeta {
  class: 'capability' | 'reliability' | 'governance';
  code: string;
  retryable?: boolean;
  retryNotBefore?: number;
  correlationId: string;
  agentGuidance?: string;
}

/**
 * The draft's object for a canonical error: `reliability` when retrying can succeed (the draft lets
 * only that class say `retryable: true`), `governance` for `elevation` (policy, approval, privilege),
 * `capability` otherwise; the canonical code, `retryAfterMs` as an epoch `retryNotBefore`, the
 * remediation as `agentGuidance`.
 */
export function toolFailureOf(error: ToolError, correlationId: string, now: number): ToolFailureMeta {
  const retryable = error.retryable === true;
  const meta: ToolFailureMeta = {
    class: retryable ? 'reliability' : error.category === 'elevation' ? 'governance' : 'capability',
    code: typeof error.code === 'string' && error.code !== '' ? error.code : error.category,
    retryable,
    correlationId,
  };
  if (retryable && error.retryAfterMs !== undefined) meta.retryNotBefore = now + error.retryAfterMs;
  if (typeof error.remediation === 'string' && error.remediation !== '') meta.agentGuidance = error.remediation;
  return meta;
}

/**
 * The `_meta` a failed result carries: the draft's object and the canonical category. An
 * upstream's own ToolFailure is kept unchanged (the draft requires intermediaries to preserve it).
 */
export function toolFailureMetaOf(error: ToolError, correlationId: string, now: number, upstreamMeta?: unknown): JsonObject {
  const meta: JsonObject = isJsonObject(upstreamMeta) ? { ...upstreamMeta } : {};
  if (!isJsonObject(meta[TOOL_FAILURE_META_KEY])) {
    meta[TOOL_FAILURE_META_KEY] = toolFailureOf(error, correlationId, now) as unknown as JsonObject;
    meta[TOOL_FAILURE_CATEGORY_META_KEY] = error.category;
  }
  return meta;
}

/** A plain server's class and code as a category, when it does not name one of the twelve. */
function categoryOf(failure: ToolFailureMeta): ErrorCategory {
  if (failure.class === 'governance') return 'elevation';
  if (failure.class === 'reliability') return 'timeout';
  if (failure.code === 'resource_not_found') return 'no-target';
  return 'invalid-argument';
}

/**
 * The draft's object of a result's `_meta`, when it is one (everything from an upstream is
 * hostile: a wrong type anywhere and it is not read).
 */
function readToolFailure(value: unknown): ToolFailureMeta | undefined {
  if (!isJsonObject(value)) return undefined;
  const v = value as Record<string, unknown>;
  if (v.class !== 'capability' && v.class !== 'reliability' && v.class !== 'governance') return undefined;
  if (typeof v.code !== 'string' || typeof v.correlationId !== 'string') return undefined;
  if (v.retryable !== undefined && typeof v.retryable !== 'boolean') return undefined;
  if (v.retryNotBefore !== undefined && !(typeof v.retryNotBefore === 'number' && Number.isFinite(v.retryNotBefore))) return undefined;
  if (v.agentGuidance !== undefined && typeof v.agentGuidance !== 'string') return undefined;
  return v as unknown as ToolFailureMeta;
}

/**
 * The canonical error a result's draft ToolFailure metadata stands for, with its correlation id;
 * undefined when the `_meta` has none (or a malformed one). The category is the one tool-envelope
 * wrote beside it, else the class's: `governance` -> `elevation`, `reliability` -> `timeout`,
 * `capability` -> `no-target` for `resource_not_found`, `invalid-argument` otherwise.
 */
export function canonicalErrorOfToolFailure(meta: unknown, detail: string, now: number): { error: ToolError; correlationId: string } | undefined {
  if (!isJsonObject(meta)) return undefined;
  const failure = readToolFailure(meta[TOOL_FAILURE_META_KEY]);
  if (!failure) return undefined;
  const named = meta[TOOL_FAILURE_CATEGORY_META_KEY];
  const category = isErrorCategory(named) ? named : categoryOf(failure);
  const retryable = failure.class === 'reliability' && failure.retryable === true;
  const error: ToolError = { category, code: failure.code, detail, retryable };
  if (retryable && failure.retryNotBefore !== undefined) error.retryAfterMs = Math.max(0, Math.round(failure.retryNotBefore - now));
  if (failure.agentGuidance !== undefined) error.remediation = failure.agentGuidance;
  return { error, correlationId: failure.correlationId };
}
