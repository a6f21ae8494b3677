/**
 * The tool registry: the tools a runtime serves, listed with their schemas and
 * approval modes for the MCP layer to publish.
 */
import { ToolEnvelopeError, type JsonObject, type ApprovalMode } from 'tool-envelope/core';
import type { ToolAnnotations, ToolDefinition } from './define.js';

/** One tool as published. */
export interface ToolListing {
  name: string;
  title?: string;
  description: string;
  /** JSON Schema of the arguments (MCP `inputSchema`). */
  inputSchema: JsonObject;
  /** JSON Schema of the result (MCP `outputSchema`), when the tool declares one. */
  outputSchema?: JsonObject;
  /** The ceiling (ContextOS `approval_mode_highest`). */
  approvalMode: ApprovalMode;
  riskTags: string[];
  annotations: ToolAnnotations;
  /** The default deadline, when the tool sets one. */
  timeoutMs?: number;
  /** MCP `_meta`. */
  meta?: JsonObject;
}

/** A set of tool definitions by name. */
export class ToolRegistry {
  readonly #tools = new Map<string, ToolDefinition>();

  constructor(tools?: Iterable<ToolDefinition>) {
    if (tools !== undefined) for (const t of tools) this.register(t);
  }

  /**
   * Adds a tool.
   *
   * @throws ToolEnvelopeError `invalid-tool-definition` when the name is taken or the value is not a defined tool.
   */
  register(tool: ToolDefinition): this {
    if (typeof tool !== 'object' || tool === null || typeof tool.handler !== 'function' || typeof tool.name !== 'string') {
      throw new ToolEnvelopeError('invalid-tool-definition', 'register() takes a tool made by defineTool()');
    }
    if (this.#tools.has(tool.name)) throw new ToolEnvelopeError('invalid-tool-definition', `a tool named ${JSON.stringify(tool.name)} is already registered`);
    this.#tools.set(tool.name, tool);
    return this;
  }

  /** Removes a tool; true when it was there. */
  unregister(name: string): boolean {
    return this.#tools.delete(name);
  }

  /** The tool by name, or undefined. */
  get(name: string): ToolDefinition | undefined {
    return this.#tools.get(name);
  }

  has(name: string): boolean {
    return this.#tools.has(name);
  }

  get size(): number {
    return this.#tools.size;
  }

  /** The definitions in registration order. */
  definitions(): ToolDefinition[] {
    return [...this.#tools.values()];
  }

  /** The published listing of every tool, in registration order. */
  list(): ToolListing[] {
    return this.definitions().map(toListing);
  }
}

/** The published listing of one tool (copies; changing it changes nothing). */
export function toListing(def: ToolDefinition): ToolListing {
  const l: ToolListing = {
    name: def.name,
    description: def.description,
    inputSchema: structuredClone(def.inputSchema),
    approvalMode: def.approvalMode,
    riskTags: [...def.riskTags],
    annotations: { ...def.annotations },
  };
  if (def.title !== undefined) l.title = def.title;
  if (def.outputSchema !== undefined) l.outputSchema = structuredClone(def.outputSchema);
  if (def.timeoutMs !== undefined) l.timeoutMs = def.timeoutMs;
  if (def.meta !== undefined) l.meta = structuredClone(def.meta);
  return l;
}
