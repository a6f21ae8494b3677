/**
 * tool-envelope/ai-sdk: tool-envelope tools as Vercel AI SDK (`ai` v7) tools, and AI SDK results as
 * canonical outcomes.
 *
 * - each tool's `execute` returns the envelope (in the chosen contract); `toModelOutput` gives the
 *   model `json` on success and `error-json` (category, code, detail, retryable, remediation) on failure;
 * - `toolApproval` (the v7 successor of `needsApproval`) comes from the approval mode, or from the
 *   governed runtime's policy: a paused call is a `tool-approval-request`, released by
 *   {@link AiSdkToolkit.respond} (the tool runs exactly once, or never: the model then sees `execution-denied`);
 * - `repairToolCall` hands a call whose arguments are not JSON to the runtime (an `invalid-argument`
 *   envelope) instead of the SDK's own `error-text`, which no envelope, `outcomeOf` or `onOutcome` sees;
 * - {@link outcomeFromMcpResult}: the output of an `@ai-sdk/mcp` client tool as a canonical outcome.
 */
import {
  InvalidToolInputError,
  type Tool,
  type ToolApprovalConfiguration,
  type ToolApprovalRequestOutput,
  type ToolApprovalResponse,
  type ToolCallRepairFunction,
  type ToolSet,
  jsonSchema,
  tool,
} from 'ai';
import { type ContractId, contracts, ToolEnvelopeError, isJsonObject, type JsonObject, type ToolOutcome, isSuccessStatus } from 'tool-envelope/core';
import { readToolResult } from '../../mcp/reader.js';
import { type ApprovalDecision, type BridgeOptions, ToolBridge, type ToolSource } from '../bridge.js';
import { checkContract, envelopeOf, modelError, modelResult } from '../model-view.js';

// The vocabulary the three adapters share: what a call is, how it is decided, what the model is shown.
export type { ApprovalDecision, BridgeOptions, FrameworkCall, ToolSource } from '../bridge.js';
export { modelError, modelResult, modelText } from '../model-view.js';

/** A tool result output part as the AI SDK gives it to the model. */
export type AiSdkToolOutput = Awaited<ReturnType<NonNullable<Tool['toModelOutput']>>>;

export interface AiSdkToolsOptions extends BridgeOptions {
  /** The contract of the envelope each `execute` returns (default `mcec`). */
  contract?: ContractId;
}

/** What {@link aiSdkTools} returns. */
export interface AiSdkToolkit {
  /** The AI SDK tools, by framework name. */
  tools: ToolSet;
  /** Pass as `toolApproval` to `generateText`/`streamText`/`ToolLoopAgent`. */
  toolApproval: ToolApprovalConfiguration<ToolSet, unknown>;
  /**
   * Pass as `repairToolCall` to `generateText`/`streamText`/`ToolLoopAgent`: a call of one of these tools
   * whose arguments are not JSON then reaches the runtime (an `invalid-argument` envelope, `onOutcome`,
   * the audit log). Without it the SDK answers such a call itself, before any tool sees it.
   */
  repairToolCall: ToolCallRepairFunction<ToolSet>;
  /**
   * Decides a `tool-approval-request`: approved, the tool runs now, exactly once (through the governed
   * runtime's approval pipeline when there is one); rejected, never. Returns the response to add to
   * the messages (in a `role: 'tool'` message) before calling the model again.
   */
  respond(request: Pick<ToolApprovalRequestOutput<ToolSet>, 'approvalId' | 'toolCall'>, decision: ApprovalDecision): Promise<ToolApprovalResponse>;
  /** The outcome of a call, by the AI SDK's `toolCallId` (paused, rejected and blocked ones included). */
  outcomeOf(toolCallId: string): ToolOutcome | undefined;
  /** The tool-envelope tool name of an AI SDK tool name. */
  toolNameOf(frameworkName: string): string | undefined;
}

// The envelope documents this module produced, with their outcomes (no decode needed to build the model output).
const produced = new WeakMap<object, ToolOutcome>();

/**
 * The model-facing output part of an outcome: `json` on success, `execution-denied` for a rejected
 * call, otherwise `error-json` with the category, code, detail, retryable and remediation.
 */
export function toAiSdkOutput(outcome: ToolOutcome): AiSdkToolOutput {
  if (isSuccessStatus(outcome.status)) return { type: 'json', value: modelResult(outcome) };
  if (outcome.status === 'rejected') return { type: 'execution-denied', reason: outcome.error?.detail ?? 'Not approved.' };
  return { type: 'error-json', value: modelError(outcome) };
}

/**
 * The canonical outcome of what an `@ai-sdk/mcp` client tool's `execute` returned (an MCP
 * `CallToolResult`): envelope-speaking servers are decoded, plain ones read (`isError`, text content).
 *
 * @throws ToolEnvelopeError `invalid-option` when `output` is not a tool result object.
 */
export function outcomeFromMcpResult(output: unknown): ToolOutcome {
  if (!isJsonObject(output) || (!Array.isArray(output.content) && output.structuredContent === undefined && output.toolResult === undefined)) {
    throw new ToolEnvelopeError('invalid-option', 'not an MCP tool result: expected an object with content or structuredContent');
  }
  return readToolResult(output as Parameters<typeof readToolResult>[0]);
}

/**
 * The same MCP client tools, whose model output comes from the canonical outcome
 * ({@link toAiSdkOutput}): the model sees every server's failures in one vocabulary.
 *
 * @example
 * ```ts
 * const tools = withEnvelopeOutput(mcpTools);
 * await generateText({ model, tools, prompt: 'Read the welcome note.' });
 * ```
 */
export function withEnvelopeOutput<T extends ToolSet>(tools: T): T {
  const out: Record<string, Tool> = {};
  for (const [name, t] of Object.entries(tools)) {
    out[name] = { ...t, toModelOutput: ({ output }: { output: unknown }) => toAiSdkOutput(outcomeFromMcpResult(output)) } as Tool;
  }
  return out as T;
}

/**
 * Every tool of a runtime (or a governed runtime) as AI SDK tools.
 *
 * @example
 * ```ts
 * const kit = aiSdkTools(governed);
 * const first = await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, repairToolCall: kit.repairToolCall, messages });
 * messages.push(...first.responseMessages);
 * const request = first.content.find((p) => p.type === 'tool-approval-request');
 * if (request) messages.push({ role: 'tool', content: [await kit.respond(request, { approved: true, approver: 'alice' })] });
 * const second = await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, repairToolCall: kit.repairToolCall, messages });
 * ```
 */
export function aiSdkTools(source: ToolSource, options: AiSdkToolsOptions = {}): AiSdkToolkit {
  const contract = checkContract(options.contract);
  const bridge = new ToolBridge('ai-sdk', source, options);
  const tools: ToolSet = {};
  const names = new Map<string, string>();
  for (const { listing, name } of bridge.tools()) {
    names.set(name, listing.name);
    tools[name] = tool({
      description: listing.description,
      // No validation here: the runtime validates, so bad arguments become an `invalid-argument` envelope.
      inputSchema: jsonSchema<JsonObject>(listing.inputSchema as Parameters<typeof jsonSchema>[0]),
      // The same gate for callers that do not pass `toolApproval` (which, when given, takes precedence).
      needsApproval: async (input, { toolCallId }) => (await bridge.gate({ tool: listing.name, callId: toolCallId, args: input })).kind === 'approval',
      execute: async (input, { toolCallId, abortSignal }) => {
        const outcome = await bridge.run({ tool: listing.name, callId: toolCallId, args: input }, abortSignal);
        const envelope = envelopeOf(outcome, contract);
        produced.set(envelope, outcome);
        return envelope;
      },
      toModelOutput: ({ output }) => toAiSdkOutput(outcomeOfEnvelope(output, contract)),
    });
  }
  const toolApproval: ToolApprovalConfiguration<ToolSet, unknown> = async ({ toolCall }) => {
    const name = names.get(toolCall.toolName);
    if (name === undefined) return undefined;
    const gate = await bridge.gate({ tool: name, callId: toolCall.toolCallId, args: toolCall.input });
    return gate.kind === 'approval' ? { type: 'user-approval', reason: gate.reason } : undefined;
  };
  // The SDK parses the arguments' JSON before any tool sees them; text that is not JSON is handed on
  // as a JSON string (the input schema does not validate), so that the runtime answers it.
  const repairToolCall: ToolCallRepairFunction<ToolSet> = async ({ toolCall, error }) =>
    InvalidToolInputError.isInstance(error) && names.has(toolCall.toolName) ? { ...toolCall, input: JSON.stringify(toolCall.input) } : null;
  return {
    tools,
    toolApproval,
    repairToolCall,
    async respond(request, decision) {
      await bridge.decide(request.toolCall.toolCallId, decision);
      return {
        type: 'tool-approval-response',
        approvalId: request.approvalId,
        approved: decision.approved === true,
        ...(decision.reason !== undefined && { reason: decision.reason }),
      };
    },
    outcomeOf: (id) => bridge.outcomeOf(id),
    toolNameOf: (frameworkName) => names.get(frameworkName),
  };
}

function outcomeOfEnvelope(output: unknown, contract: ContractId): ToolOutcome {
  const known = typeof output === 'object' && output !== null ? produced.get(output) : undefined;
  // Messages that were serialised and read back carry the envelope only: decode it.
  return known ?? contracts[contract].decode(output);
}
