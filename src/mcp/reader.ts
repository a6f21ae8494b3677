/**
 * The client reader: any `CallToolResult`, from any MCP server, becomes one
 * canonical outcome, so an agent branches the same way on every server.
 */
import type { CallToolResult } from '@modelcontextprotocol/client';
import {
  contracts,
  type ContractId,
  detectContract,
  isJsonObject,
  type JsonObject,
  type JsonValue,
  failure,
  toolError,
  type ContentBlock,
  type ToolOutcome,
  CompiledFailureRules,
  classifyPlainFailure,
  shippedFailureRules,
  type PlainFailureInput,
  truncateUtf8,
  ToolEnvelopeError,
} from 'tool-envelope/core';
import { canonicalErrorOfToolFailure } from './wire/tool-failure.js';

/** Where {@link inspectToolResult} found the outcome. */
export type ToolResultSource = 'structuredContent' | 'text' | 'plain';

/**
 * A read tool result: the outcome, the contract it was written in (`null` for
 * plain MCP results) and where it was found.
 */
export interface ReadResult {
  outcome: ToolOutcome;
  contract: ContractId | null;
  source: ToolResultSource;
}

/** Longest `detail` taken from a plain error's text. */
const MAX_DETAIL_BYTES = 16 * 1024;

function detect(doc: unknown): ContractId | null {
  // The markers name the contract (and the revision the document needs); it must also be valid.
  const id = detectContract(doc);
  if (id === undefined || id === 'contextos-call') return null;
  if (contracts[id].validate(doc)) return id;
  // A DW 14 object that breaks 14's schema is an unknown property under 13.
  return id === 'dw@14' && contracts.dw.validate(doc) ? 'dw' : null;
}

/** How the SDK's `McpServer` words a JSON-RPC error it turned into an `isError` result. */
const SDK_ERROR_TEXT = /^MCP error (-?\d+): /;

/** Options of {@link readToolResult} and {@link inspectToolResult}. */
export interface ReadOptions {
  /** Plain-failure rules tried before the shipped ones (compile them once with `compileFailureRules`). */
  rules?: CompiledFailureRules | readonly CompiledFailureRules[];
  /** Try the shipped rules after the user's (default true). */
  shippedRules?: boolean;
  /** The clock a draft ToolFailure's `retryNotBefore` is read against (epoch ms); default `Date.now`. */
  now?: () => number;
}

function ruleSets(options: ReadOptions | undefined): readonly CompiledFailureRules[] {
  const user = options?.rules;
  const shipped = options?.shippedRules === false ? [] : [shippedFailureRules()];
  if (user === undefined) return shipped;
  return [...(user instanceof CompiledFailureRules ? [user] : user), ...shipped];
}

/** A failure the reader met as plain text: an `isError` result's text, or a JSON-RPC error's message. */
interface PlainFailed {
  text: string;
  /** The result's `structuredContent`, or the error's `data`. */
  structured: unknown;
  content?: ContentBlock[] | undefined;
  /** The code when no rule matches: `tool-error` for an `isError` text, `rpc-error` for a JSON-RPC error. */
  unmatchedCode: string;
  rpcCode?: number | undefined;
}

/**
 * The canonical failure of a plain failure text: the category, code and `retryable` of the first
 * rule that matches (user rules first), marked in `error.extensions.classification` (`inferred`,
 * the `rule` id and its `ruleSet`); `internal`/`unmatchedCode` when none does. The detail is the
 * upstream's own text (cut to 16 KiB).
 */
function plainFailure(failed: PlainFailed, options: ReadOptions | undefined): ToolOutcome {
  const { text, structured, content, rpcCode } = failed;
  const input: PlainFailureInput = { text };
  if (structured !== undefined) input.structured = structured as JsonValue;
  const match = classifyPlainFailure(input, ruleSets(options));
  const detail = detailOf(text);
  const error = match
    ? toolError(match.category, match.code, detail, { retryable: match.retryable, ...(match.reason !== undefined ? { reason: match.reason } : {}) })
    : toolError('internal', failed.unmatchedCode, detail, { retryable: false });
  error.extensions = { classification: match ? { inferred: true, rule: match.rule, ruleSet: match.ruleSet } : { inferred: false, rule: null, ruleSet: null } };
  if (isJsonObject(structured)) error.details = structured as JsonObject;
  else if (rpcCode !== undefined) error.details = { rpcCode };
  return failure(error, content ? { content } : undefined);
}

/** A failure text as a `detail`: cut to 16 KiB, and never empty. */
function detailOf(text: string): string {
  const cut = truncateUtf8(text === '' ? 'The tool reported an error without a message.' : text, MAX_DETAIL_BYTES);
  return cut.text + (cut.truncated ? ' […]' : '');
}

/**
 * Throws `invalid-option` for what cannot be an MCP tool result (not an object; `content` not a list
 * of objects), before anything reads it: a caller's mistake is a library error, not a TypeError from
 * inside. An object with neither `content` nor `structuredContent` still reads as an empty result.
 */
function checkToolResult(result: unknown): void {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) {
    throw new ToolEnvelopeError('invalid-option', 'not an MCP tool result: expected an object with content or structuredContent');
  }
  const content = (result as { content?: unknown }).content;
  if (content === undefined) return;
  if (!Array.isArray(content)) throw new ToolEnvelopeError('invalid-option', 'not an MCP tool result: content must be a list of content blocks');
  for (const block of content) {
    if (typeof block !== 'object' || block === null) {
      throw new ToolEnvelopeError('invalid-option', 'not an MCP tool result: each content block must be an object');
    }
  }
}

function textOf(content: CallToolResult['content'] | undefined): string {
  const parts: string[] = [];
  for (const b of content ?? []) if (b.type === 'text' && typeof b.text === 'string') parts.push(b.text);
  return parts.join('\n');
}

function parseEnvelopeText(content: CallToolResult['content'] | undefined): { doc: JsonObject; id: ContractId } | null {
  const first = content?.[0];
  if (first?.type !== 'text' || typeof first.text !== 'string') return null;
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

/** Reads a tool result and says where the outcome came from. */
export function inspectToolResult(result: CallToolResult, options?: ReadOptions): ReadResult {
  checkToolResult(result);
  const structured = result.structuredContent;
  const id = detect(structured);
  if (id) return { outcome: contracts[id].decode(structured), contract: id, source: 'structuredContent' };
  const fromText = parseEnvelopeText(result.content);
  if (fromText) return { outcome: contracts[fromText.id].decode(fromText.doc), contract: fromText.id, source: 'text' };

  const content = (result.content ?? []) as ContentBlock[];
  const text = textOf(result.content);
  if (result.isError === true) {
    // MCP's draft ToolFailure metadata (wire/tool-failure.ts) says what the failure is: no rule guesses.
    const drafted = canonicalErrorOfToolFailure(result._meta, detailOf(text), (options?.now ?? Date.now)());
    if (drafted) return { outcome: failure(drafted.error, { content, toolCallId: drafted.correlationId }), contract: null, source: 'plain' };
    const rpc = SDK_ERROR_TEXT.exec(text);
    const failed: PlainFailed = { text, structured, content, unmatchedCode: 'tool-error', rpcCode: rpc ? Number(rpc[1]) : undefined };
    return { outcome: plainFailure(failed, options), contract: null, source: 'plain' };
  }
  let payload: JsonObject;
  if (isJsonObject(structured)) payload = structured as JsonObject;
  else if (content.every((b) => b.type === 'text')) payload = { text };
  else payload = { content };
  // What success(payload, { content }) gives, key for key, as one literal: spreading a non-empty
  // init and then adding keys is V8's slow path (see copyOutcome), and this runs once per plain call.
  const outcome: ToolOutcome = { content, status: 'ok', result: payload };
  return { outcome, contract: null, source: 'plain' };
}

/**
 * Turns any `CallToolResult` into a canonical outcome: an envelope of any of the three
 * contracts (in `structuredContent`, or as JSON in the first text block) is decoded; a plain
 * MCP result becomes a failure when `isError`, the text as detail, classified by the
 * plain-failure rules (`options.rules` first, then the shipped ones; docs/contracts.md): e.g.
 * the SDK's input-validation error is `invalid-argument`/`invalid-params`, an ENOENT text
 * `no-target`/`not-found`; a text no rule matches stays `internal`/`tool-error`. Otherwise a
 * success whose result is the `structuredContent`, or `{ text }` for text-only content, or `{ content }`.
 *
 * @throws ToolEnvelopeError `invalid-option` when `result` is not an object or its `content` is not a list of objects.
 *
 * @example
 * ```ts
 * const outcome = readToolResult(await client.callTool({ name: 'echo', arguments: { message: 'hi' } }));
 * if (isOk(outcome)) console.log(outcome.result);
 * else console.log(outcome.error?.category);
 * ```
 */
export function readToolResult(result: CallToolResult, options?: ReadOptions): ToolOutcome {
  return inspectToolResult(result, options).outcome;
}

/**
 * The canonical failure of a JSON-RPC error a `tools/call` was answered with (an `McpError`
 * thrown by `client.callTool`, e.g. a low-level server's invalid-params error), classified by the
 * same rules as a plain `isError` text; `internal`/`rpc-error` when no rule matches.
 */
export function readCallError(err: unknown, options?: ReadOptions): ToolOutcome {
  const e = err as { code?: unknown; message?: unknown; data?: unknown } | null;
  const code = typeof e?.code === 'number' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  // McpError already words its message "MCP error <code>: ..."; a bare JSON-RPC error gets the same words.
  const text = code !== undefined && !SDK_ERROR_TEXT.test(message) ? `MCP error ${code}: ${message}` : message;
  return plainFailure({ text, structured: isJsonObject(e?.data) ? e!.data : undefined, unmatchedCode: 'rpc-error', rpcCode: code }, options);
}
