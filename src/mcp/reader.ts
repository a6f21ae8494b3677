/**
 * The client reader: any `CallToolResult`, from any MCP server, becomes one
 * canonical outcome, so an agent branches the same way on every server.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { contracts, type ContractId } from '../core/contract.js';
import { isJsonObject, type JsonObject } from '../core/json.js';
import { failure, success, toolError, type ContentBlock, type ToolOutcome } from '../core/model.js';
import { truncateUtf8 } from '../core/preview.js';
import type { ErrorCategory } from '../core/taxonomy.js';

/**
 * Where {@link inspectToolResult} found the outcome.
 *
 * @example
 * ```ts
 * const s: ToolResultSource = 'structuredContent';
 * ```
 */
export type ToolResultSource = 'structuredContent' | 'text' | 'plain';

/**
 * A read tool result: the outcome, the contract it was written in (`null` for
 * plain MCP results) and where it was found.
 *
 * @example
 * ```ts
 * const r: ReadResult = { outcome: success({}), contract: null, source: 'plain' };
 * ```
 */
export interface ReadResult {
  outcome: ToolOutcome;
  contract: ContractId | null;
  source: ToolResultSource;
}

// Durable Workflow and ContextOS carry markers; MCEC (only `ok` required) is tried last.
const DETECTION_ORDER: readonly ContractId[] = ['dw', 'contextos', 'mcec'];

/** Longest `detail` taken from a plain error's text. */
const MAX_DETAIL_BYTES = 16 * 1024;

function detect(doc: unknown): ContractId | null {
  if (!isJsonObject(doc)) return null;
  for (const id of DETECTION_ORDER) {
    // A ContextOS *call* envelope is not a result.
    if (id === 'contextos' && doc.envelope_version !== 'contextos.tool_result.v1') continue;
    if (contracts[id].validate(doc)) return id;
  }
  return null;
}

/** How the SDK's `McpServer` words a JSON-RPC error it turned into an `isError` result. */
const SDK_ERROR_TEXT = /^MCP error (-?\d+): ([\s\S]*)$/;

/**
 * The category and code of a plain `isError` result. Servers built on the SDK's `McpServer` report
 * bad arguments and unknown tools as results whose text is the JSON-RPC error
 * (`MCP error -32602: Input validation error: ...`, `MCP error -32602: Tool x not found`).
 */
function classifyPlainError(text: string): { category: ErrorCategory; code: string; rpcCode?: number } {
  const m = SDK_ERROR_TEXT.exec(text);
  if (!m || Number(m[1]) !== -32602) return { category: 'internal', code: 'tool-error' };
  const message = m[2]!;
  const rpcCode = -32602;
  if (/^Tool [\s\S]* not found$/.test(message)) return { category: 'no-target', code: 'tool-not-found', rpcCode };
  if (/^Tool [\s\S]* disabled$/.test(message)) return { category: 'no-target', code: 'tool-disabled', rpcCode };
  // The tool's own result broke its output schema: a fault of the tool, not of the caller.
  if (message.startsWith('Output validation error:')) return { category: 'internal', code: 'output-schema-violation', rpcCode };
  return { category: 'invalid-argument', code: 'invalid-params', rpcCode };
}

function textOf(content: CallToolResult['content'] | undefined): string {
  const parts: string[] = [];
  for (const b of content ?? []) if (b.type === 'text' && typeof b.text === 'string') parts.push(b.text);
  return parts.join('\n');
}

function parseEnvelopeText(content: CallToolResult['content'] | undefined): { doc: JsonObject; id: ContractId } | null {
  const first = content?.[0];
  if (!first || first.type !== 'text' || typeof first.text !== 'string') return null;
  const text = first.text.trimStart();
  if (!text.startsWith('{')) return null;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return null;
  }
  const id = detect(doc);
  return id ? { doc: doc as JsonObject, id } : null;
}

/**
 * Reads a tool result and says where the outcome came from.
 *
 * @example
 * ```ts
 * inspectToolResult({ content: [{ type: 'text', text: 'boom' }], isError: true }).outcome.error?.code; // 'tool-error'
 * ```
 */
export function inspectToolResult(result: CallToolResult): ReadResult {
  const structured = result.structuredContent;
  const id = detect(structured);
  if (id) return { outcome: contracts[id].decode(structured), contract: id, source: 'structuredContent' };
  const fromText = parseEnvelopeText(result.content);
  if (fromText) return { outcome: contracts[fromText.id].decode(fromText.doc), contract: fromText.id, source: 'text' };

  const content = (result.content ?? []) as ContentBlock[];
  const text = textOf(result.content);
  if (result.isError === true) {
    const cut = truncateUtf8(text === '' ? 'The tool reported an error without a message.' : text, MAX_DETAIL_BYTES);
    const kind = classifyPlainError(text);
    const outcome = failure(toolError(kind.category, kind.code, cut.text + (cut.truncated ? ' […]' : '')), { content });
    if (isJsonObject(structured)) outcome.error!.details = structured as JsonObject;
    else if (kind.rpcCode !== undefined) outcome.error!.details = { rpcCode: kind.rpcCode };
    return { outcome, contract: null, source: 'plain' };
  }
  let payload: JsonObject;
  if (isJsonObject(structured)) payload = structured as JsonObject;
  else if (content.every((b) => b.type === 'text')) payload = { text };
  else payload = { content };
  return { outcome: success(payload, { content }), contract: null, source: 'plain' };
}

/**
 * Turns any `CallToolResult` into a canonical outcome: an envelope of any of the three
 * contracts (in `structuredContent`, or as JSON in the first text block) is decoded; a plain
 * MCP result becomes a failure when `isError`, the text as detail: `internal`/`tool-error`, or,
 * for the errors the SDK's `McpServer` reports as results, `invalid-argument`/`invalid-params`
 * (bad arguments), `no-target`/`tool-not-found` or `tool-disabled`, `internal`/`output-schema-violation`;
 * otherwise a success whose result is the `structuredContent`, or `{ text }` for text-only
 * content, or `{ content }`.
 *
 * @example
 * ```ts
 * const outcome = readToolResult(await client.callTool({ name: 'echo', arguments: { message: 'hi' } }) as CallToolResult);
 * if (isOk(outcome)) console.log(outcome.result); else console.log(outcome.error?.category);
 * ```
 */
export function readToolResult(result: CallToolResult): ToolOutcome {
  return inspectToolResult(result).outcome;
}
