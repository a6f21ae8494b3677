/**
 * tool-envelope/openai-agents: tool-envelope tools as OpenAI Agents SDK (`@openai/agents`) function tools.
 *
 * - `needsApproval` comes from the approval mode, or from the governed runtime's policy: a paused
 *   call is the run's interruption; {@link OpenAiAgentsToolkit.approve} / {@link OpenAiAgentsToolkit.reject}
 *   release it (through `governed.approve` / `governed.reject` when governed: the tool runs exactly
 *   once, or never) and record the decision on the run state, then `run(agent, state)` resumes;
 * - the model sees a success as the result's JSON and a failure as text built from the envelope
 *   (category, code, detail, retryable, remediation); the full envelope stays with the application
 *   (each tool output item's `customData.envelope`, {@link OpenAiAgentsToolkit.outcomeOf},
 *   {@link OpenAiAgentsToolkit.envelopeOf}, `onOutcome`).
 */
import { randomUUID } from 'node:crypto';
import { type FunctionTool, type RunState, type RunToolApprovalItem, tool } from '@openai/agents';
import { type ContractId, ToolEnvelopeError, type JsonObject, type ToolOutcome } from 'tool-envelope/core';
import { type BridgeOptions, ToolBridge, type ToolSource } from '../bridge.js';
import { checkContract, envelopeOf, modelText } from '../model-view.js';

// The vocabulary the three adapters share: what a call is, how it is decided, what the model is shown.
export type { ApprovalDecision, BridgeOptions, FrameworkCall, ToolSource } from '../bridge.js';
export { modelError, modelResult, modelText } from '../model-view.js';

export interface OpenAiAgentsToolsOptions extends BridgeOptions {
  /** The contract of {@link OpenAiAgentsToolkit.envelopeOf} (default `mcec`). */
  contract?: ContractId;
}

/** A decision on an interruption. */
export interface AgentsDecision {
  approver: string;
  reason?: string;
}

/** What {@link openAiAgentsTools} returns. */
export interface OpenAiAgentsToolkit {
  /** The function tools, for `new Agent({ tools })`. */
  // biome-ignore lint/suspicious/noExplicitAny: the framework's own signatures use `any` here (`Tool<Context>`, `RunState`), and `unknown` breaks assignability to `new Agent({ tools })`
  tools: FunctionTool<any, any, any>[];
  /** Approves an interruption: the tool runs now, exactly once; then `state.approve(item)`. */
  // biome-ignore lint/suspicious/noExplicitAny: the framework's own signatures use `any` here (`Tool<Context>`, `RunState`), and `unknown` breaks assignability to `new Agent({ tools })`
  approve(state: RunState<any, any>, item: RunToolApprovalItem, decision: AgentsDecision): Promise<ToolOutcome>;
  /** Rejects an interruption: the tool never runs; `state.reject(item)` with the model-facing text of the `rejected` outcome. */
  // biome-ignore lint/suspicious/noExplicitAny: the framework's own signatures use `any` here (`Tool<Context>`, `RunState`), and `unknown` breaks assignability to `new Agent({ tools })`
  reject(state: RunState<any, any>, item: RunToolApprovalItem, decision: AgentsDecision): Promise<ToolOutcome>;
  /** The outcome of a call, by the SDK's `callId`. */
  outcomeOf(callId: string): ToolOutcome | undefined;
  /** The envelope of a call in the chosen contract, by `callId`. */
  envelopeOf(callId: string): JsonObject | undefined;
}

function callIdOf(item: RunToolApprovalItem): string {
  const raw = item.rawItem as { callId?: unknown };
  if (typeof raw.callId !== 'string') throw new ToolEnvelopeError('invalid-option', 'the interruption is not a function tool call');
  return raw.callId;
}

/**
 * Every tool of a runtime (or a governed runtime) as OpenAI Agents SDK function tools.
 *
 * @example
 * ```ts
 * const kit = openAiAgentsTools(runtime);
 * const result = await run(new Agent({ name: 'notes', tools: kit.tools }), 'Read the welcome note.');
 * ```
 */
export function openAiAgentsTools(source: ToolSource, options: OpenAiAgentsToolsOptions = {}): OpenAiAgentsToolkit {
  const contract = checkContract(options.contract);
  const bridge = new ToolBridge('openai-agents', source, options);
  const tools = bridge.tools().map(({ listing, name }) => {
    const schema = listing.inputSchema as JsonObject;
    // Non-strict: the runtime validates the arguments, so that bad ones become an `invalid-argument` envelope.
    const parameters = { ...schema, type: 'object', properties: schema.properties ?? {}, required: schema.required ?? [], additionalProperties: true } as const;
    return tool({
      name,
      description: listing.description,
      parameters: parameters as unknown as { type: 'object'; properties: Record<string, never>; required: never[]; additionalProperties: true },
      strict: false,
      needsApproval: async (_ctx, input, callId) => {
        if (callId === undefined) return false;
        return (await bridge.gate({ tool: listing.name, callId, args: input })).kind === 'approval';
      },
      execute: async (input, _ctx, details) => {
        const callId = details?.toolCall?.callId ?? randomUUID();
        return modelText(await bridge.run({ tool: listing.name, callId, args: input }, details?.signal));
      },
      // The tool never throws for a tool failure (that is data); what reaches here is a library fault.
      errorFunction: null,
      // The full envelope rides on the run's own tool output item (`item.customData.envelope`), never shown to the model.
      customDataExtractor: ({ toolCall }) => {
        const o = bridge.outcomeOf(toolCall.callId);
        return o ? { envelope: envelopeOf(o, contract), status: o.status } : undefined;
      },
    });
  });
  return {
    tools,
    async approve(state, item, decision) {
      const outcome = await bridge.decide(callIdOf(item), { approved: true, ...decision });
      state.approve(item);
      return outcome;
    },
    async reject(state, item, decision) {
      const outcome = await bridge.decide(callIdOf(item), { approved: false, ...decision });
      state.reject(item, { message: modelText(outcome) });
      return outcome;
    },
    outcomeOf: (id) => bridge.outcomeOf(id),
    envelopeOf: (id) => {
      const o = bridge.outcomeOf(id);
      return o && envelopeOf(o, contract);
    },
  };
}
