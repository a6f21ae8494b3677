/**
 * Defining a tool: name, description, schemas, the approval mode it needs (its
 * ContextOS ceiling), a default timeout, risk tags and a plain async handler.
 */
import { ToolEnvelopeError, type JsonObject, type ApprovalMode, isApprovalMode } from 'tool-envelope/core';
import type { ToolContext } from './context.js';
import { type Check, type JsonSchema, type ToolSchema, compileSchema } from './schema.js';
import type { StandardSchemaV1 } from './standard-schema.js';

/** MCP tool annotations (hints for clients; never trusted for security). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * The arguments type a schema yields: the Standard Schema output type, or a
 * plain object for a JSON Schema.
 */
export type InferArgs<S> = S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : Record<string, unknown>;

/** A tool handler: typed arguments and a context in, any value out. */
export type ToolHandler<Args = Record<string, unknown>, Result = unknown> = (args: Args, ctx: ToolContext) => Result | Promise<Result>;

/** What a tool author writes; see {@link defineTool}. */
export interface ToolSpec<S extends ToolSchema | undefined = ToolSchema | undefined, Result = unknown> {
  /** 1-128 characters of `A-Z a-z 0-9 _ - . /`; also the ContextOS `capability_id`. */
  name: string;
  title?: string;
  description: string;
  /** Input schema: a Standard Schema (zod, valibot, arktype, ...) or a JSON Schema object. Absent: any object. */
  input?: S;
  /** Output schema; when given, every result is checked against it. */
  output?: ToolSchema;
  /**
   * The highest approval mode the tool can produce (ContextOS `approval_mode_highest`).
   * Default: derived from `annotations` (read-only hint: `read_only`, or `network` when open-world;
   * non-destructive hint: `local_write`/`network`), otherwise `destructive` (fail closed, like MCP's
   * `destructiveHint` default).
   */
  approvalMode?: ApprovalMode;
  /** Default deadline in ms for a call; `0` or `Infinity`: none. Absent: the runtime default. */
  timeoutMs?: number;
  /** Risk tags of the capability, echoed in every outcome (ContextOS `risk_tags`). */
  riskTags?: readonly string[];
  /** MCP annotations; derived from `approvalMode` when absent. */
  annotations?: ToolAnnotations;
  /** MCP `_meta` for the tool listing. */
  meta?: JsonObject;
  handler: ToolHandler<InferArgs<S>, Result>;
}

/** A defined tool: validated, with schemas compiled. Immutable. */
// biome-ignore lint/suspicious/noExplicitAny: a definition of unknown arguments must accept any handler's argument type (contravariance).
export interface ToolDefinition<Args = any, Result = unknown> {
  readonly name: string;
  readonly title: string | undefined;
  readonly description: string;
  /** The JSON Schema of the arguments (MCP `inputSchema`). */
  readonly inputSchema: JsonObject;
  /** The JSON Schema of the result (MCP `outputSchema`), when one was given. */
  readonly outputSchema: JsonObject | undefined;
  readonly approvalMode: ApprovalMode;
  readonly timeoutMs: number | undefined;
  readonly riskTags: readonly string[];
  readonly annotations: ToolAnnotations;
  readonly meta: JsonObject | undefined;
  /** Why a published schema is only `{ type: 'object' }` (the library could not convert it). */
  readonly schemaNotes: readonly string[];
  readonly handler: ToolHandler<Args, Result>;
  /** Compiled argument check; undefined when there is no input schema. */
  readonly checkInput: Check | undefined;
  /** Compiled result check; undefined when there is no output schema. */
  readonly checkOutput: Check | undefined;
  /** True when the output check takes the JSON form of the result (a JSON Schema), false for a Standard Schema. */
  readonly checkOutputOnJson: boolean;
}

const NAME = /^[A-Za-z0-9_.\-/]{1,128}$/;

function invalid(name: string, message: string): ToolEnvelopeError {
  return new ToolEnvelopeError('invalid-tool-definition', `tool ${JSON.stringify(name)}: ${message}`);
}

function modeFromAnnotations(a: ToolAnnotations | undefined): ApprovalMode {
  if (a?.readOnlyHint === true) return a.openWorldHint === true ? 'network' : 'read_only';
  if (a?.destructiveHint === false) return a.openWorldHint === true ? 'network' : 'local_write';
  return 'destructive';
}

function annotationsFromMode(mode: ApprovalMode): ToolAnnotations {
  switch (mode) {
    case 'read_only':
      return { readOnlyHint: true, destructiveHint: false, openWorldHint: false };
    case 'local_write':
      return { readOnlyHint: false, destructiveHint: false, openWorldHint: false };
    case 'network':
    case 'delegated':
      return { readOnlyHint: false, destructiveHint: false, openWorldHint: true };
    case 'destructive':
      return { readOnlyHint: false, destructiveHint: true };
  }
}

/**
 * Defines a tool. Schemas are compiled here, once; invoking never compiles.
 *
 * @throws ToolEnvelopeError `invalid-tool-definition` for a bad name, mode,
 *   timeout, risk tag, schema or handler.
 *
 * @example
 * ```ts
 * const readText = defineTool({
 *   name: 'fs.read',
 *   description: 'Reads a UTF-8 text file.',
 *   approvalMode: 'read_only',
 *   input: z.object({ path: z.string() }),
 *   handler: async ({ path }) => ({ text: await readFile(path, 'utf8') }),
 * });
 * ```
 */
export function defineTool<S extends ToolSchema | undefined = undefined, Result = unknown>(spec: ToolSpec<S, Result>): ToolDefinition<InferArgs<S>, Result> {
  const name = spec?.name;
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new ToolEnvelopeError('invalid-tool-definition', `tool name must be 1-128 characters of A-Z a-z 0-9 _ - . /, got ${JSON.stringify(name)}`);
  }
  if (typeof spec.description !== 'string') throw invalid(name, 'description must be a string');
  if (typeof spec.handler !== 'function') throw invalid(name, 'handler must be a function');
  if (spec.title !== undefined && typeof spec.title !== 'string') throw invalid(name, 'title must be a string');
  if (spec.approvalMode !== undefined && !isApprovalMode(spec.approvalMode)) {
    throw invalid(name, `unknown approval mode ${JSON.stringify(spec.approvalMode)}`);
  }
  const t = spec.timeoutMs;
  if (t !== undefined && (typeof t !== 'number' || Number.isNaN(t) || t < 0)) throw invalid(name, 'timeoutMs must be a non-negative number');
  const riskTags = spec.riskTags ?? [];
  if (!Array.isArray(riskTags) || riskTags.some((tag) => typeof tag !== 'string')) throw invalid(name, 'riskTags must be an array of strings');
  const input = compileSchema(spec.input as JsonSchema | StandardSchemaV1 | undefined, 'input', name);
  const output = spec.output === undefined ? undefined : compileSchema(spec.output, 'output', name);
  const approvalMode = spec.approvalMode ?? modeFromAnnotations(spec.annotations);
  const notes = [input.note, output?.note].filter((n): n is string => n !== undefined);
  return Object.freeze({
    name,
    title: spec.title,
    description: spec.description,
    inputSchema: input.jsonSchema,
    outputSchema: output?.jsonSchema,
    approvalMode,
    timeoutMs: t,
    riskTags: Object.freeze([...riskTags]),
    annotations: Object.freeze({ ...(spec.annotations ?? annotationsFromMode(approvalMode)) }),
    meta: spec.meta,
    schemaNotes: Object.freeze(notes),
    handler: spec.handler as ToolHandler<InferArgs<S>, Result>,
    checkInput: input.check,
    checkOutput: output?.check,
    checkOutputOnJson: output?.kind === 'json',
  });
}
