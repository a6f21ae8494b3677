/**
 * tool-envelope/langchain: tool-envelope tools as LangChain.js (`@langchain/core`) tools whose
 * `ToolMessage` has `status: 'error'` on failure, `content` the model-facing summary (the result's
 * JSON, or the category, code, detail, retryable and remediation) and `artifact` the envelope in
 * the chosen contract.
 *
 * A destructive call (from the approval mode, or paused by the governed runtime's policy) answers
 * with a paused `ToolMessage` (`status: 'error'`, "do not call it again"); {@link LangChainToolkit.approve}
 * runs it exactly once (through `governed.approve` when governed) and {@link LangChainToolkit.reject}
 * never, each returning the call's final `ToolMessage`.
 */
import { randomUUID } from 'node:crypto';
import { ToolMessage } from '@langchain/core/messages';
import { type DynamicStructuredTool, ToolInputParsingException, tool } from '@langchain/core/tools';
import { type ContractId, type JsonObject, type ToolOutcome, isSuccessStatus } from 'tool-envelope/core';
import { type BridgeOptions, type FrameworkCall, ToolBridge, type ToolSource } from '../bridge.js';
import { checkContract, envelopeOf, modelText } from '../model-view.js';

// The vocabulary the three adapters share: what a call is, how it is decided, what the model is shown.
export type { ApprovalDecision, BridgeOptions, FrameworkCall, ToolSource } from '../bridge.js';
export { modelError, modelResult, modelText } from '../model-view.js';

export interface LangChainToolsOptions extends BridgeOptions {
  /** The contract of each `ToolMessage`'s `artifact` (default `mcec`). */
  contract?: ContractId;
}

/** A decision on a paused call. */
export interface LangChainDecision {
  approver: string;
  reason?: string;
}

/** What {@link langchainTools} returns. */
export interface LangChainToolkit {
  /** The LangChain tools, for `createAgent({ tools })`, `model.bindTools(tools)` or a `ToolNode`. */
  tools: DynamicStructuredTool[];
  /** Approves a paused call by its tool call id: the tool runs now, exactly once. Resolves to its final `ToolMessage`. */
  approve(toolCallId: string, decision: LangChainDecision): Promise<ToolMessage>;
  /** Rejects a paused call by its tool call id: the tool never runs. Resolves to its `rejected` `ToolMessage`. */
  reject(toolCallId: string, decision: LangChainDecision): Promise<ToolMessage>;
  /** The outcome of a call, by tool call id. */
  outcomeOf(toolCallId: string): ToolOutcome | undefined;
}

/**
 * The `ToolMessage` of an outcome: `status` `success` or `error`, `content` for the model,
 * `artifact` the envelope in `contract`.
 */
export function toToolMessage(outcome: ToolOutcome, call: { toolCallId: string; name: string; contract?: ContractId }): ToolMessage {
  return new ToolMessage({
    tool_call_id: call.toolCallId,
    name: call.name,
    status: isSuccessStatus(outcome.status) ? 'success' : 'error',
    content: modelText(outcome),
    artifact: envelopeOf(outcome, checkContract(call.contract)),
  });
}

/**
 * Every tool of a runtime (or a governed runtime) as LangChain tools.
 *
 * @example
 * ```ts
 * const kit = langchainTools(governed, { contract: 'contextos' });
 * const paused = kit.outcomeOf(toolCallId); // after the agent called repo_delete
 * const final = await kit.approve(toolCallId, { approver: 'alice' }); // ToolMessage, status 'success'
 * ```
 */
export function langchainTools(source: ToolSource, options: LangChainToolsOptions = {}): LangChainToolkit {
  const contract = checkContract(options.contract);
  const bridge = new ToolBridge('langchain', source, options);
  const names = new Map<string, string>();
  const message = (outcome: ToolOutcome, call: FrameworkCall): ToolMessage =>
    toToolMessage(outcome, { toolCallId: call.callId, name: names.get(call.tool) ?? call.tool, contract });

  async function answer(call: FrameworkCall): Promise<ToolMessage> {
    const gate = await bridge.gate(call);
    return message(gate.kind === 'approval' ? gate.outcome : await bridge.run(call), call);
  }

  const tools = bridge.tools().map(({ listing, name }) => {
    names.set(listing.name, name);
    const t = tool(
      async (input: unknown, config) => {
        const toolCallId = config?.toolCall?.id;
        const reply = await answer({ tool: listing.name, callId: toolCallId ?? randomUUID(), args: input });
        // Called without a tool call (tool.invoke(args)): LangChain expects the content.
        return toolCallId ? reply : reply.content;
      },
      { name, description: listing.description, schema: listing.inputSchema as JsonObject },
    ) as unknown as DynamicStructuredTool;
    // LangChain validates JSON Schema input itself and throws; the runtime's own validation gives an `invalid-argument` envelope instead.
    const call = t.call.bind(t) as (arg: unknown, config?: unknown, tags?: unknown) => Promise<unknown>;
    (t as { call: typeof call }).call = async (arg, config, tags) => {
      try {
        return await call(arg, config, tags);
      } catch (e) {
        if (!(e instanceof ToolInputParsingException)) throw e;
        // `invoke` passes a tool call's arguments here and the call itself as `config.toolCall`; `call` may also get the tool call.
        const isToolCall = typeof arg === 'object' && arg !== null && (arg as { type?: unknown }).type === 'tool_call';
        const args = isToolCall ? (arg as { args: unknown }).args : arg;
        const id = isToolCall ? (arg as { id?: string }).id : (config as { toolCall?: { id?: string } } | undefined)?.toolCall?.id;
        const reply = await answer({ tool: listing.name, callId: id ?? randomUUID(), args });
        return id ? reply : reply.content;
      }
    };
    return t;
  });

  async function decide(toolCallId: string, approved: boolean, decision: LangChainDecision): Promise<ToolMessage> {
    const outcome = await bridge.decide(toolCallId, { approved, ...decision });
    const tool = outcome.capabilityId ?? '';
    return toToolMessage(outcome, { toolCallId, name: names.get(tool) ?? tool, contract });
  }

  return {
    tools,
    approve: (id, d) => decide(id, true, d),
    reject: (id, d) => decide(id, false, d),
    outcomeOf: (id) => bridge.outcomeOf(id),
  };
}
