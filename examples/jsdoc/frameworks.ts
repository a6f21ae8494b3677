// The @example of each public entry point of tool-envelope/ai-sdk, /openai-agents and /langchain (see core.ts).
import { Agent, run } from '@openai/agents';
import { generateText, type LanguageModel, type ModelMessage, type ToolSet } from 'ai';
import { aiSdkTools, withEnvelopeOutput } from '../../src/frameworks/ai-sdk/index.js';
import { langchainTools } from '../../src/frameworks/langchain/index.js';
import { openAiAgentsTools } from '../../src/frameworks/openai-agents/index.js';
import type { GovernedRuntime, Runtime } from '../../src/runtime/index.js';

export async function example_aiSdkTools(governed: GovernedRuntime, model: LanguageModel, messages: ModelMessage[]) {
  //#region aiSdkTools
  const kit = aiSdkTools(governed);
  const first = await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, repairToolCall: kit.repairToolCall, messages });
  messages.push(...first.responseMessages);
  const request = first.content.find((p) => p.type === 'tool-approval-request');
  if (request) messages.push({ role: 'tool', content: [await kit.respond(request, { approved: true, approver: 'alice' })] });
  const second = await generateText({ model, tools: kit.tools, toolApproval: kit.toolApproval, repairToolCall: kit.repairToolCall, messages });
  //#endregion
  return second;
}

export async function example_withEnvelopeOutput(mcpTools: ToolSet, model: LanguageModel) {
  //#region withEnvelopeOutput
  const tools = withEnvelopeOutput(mcpTools);
  await generateText({ model, tools, prompt: 'Read the welcome note.' });
  //#endregion
}

export async function example_openAiAgentsTools(runtime: Runtime) {
  //#region openAiAgentsTools
  const kit = openAiAgentsTools(runtime);
  const result = await run(new Agent({ name: 'notes', tools: kit.tools }), 'Read the welcome note.');
  //#endregion
  return result;
}

export async function example_langchainTools(governed: GovernedRuntime, toolCallId: string) {
  //#region langchainTools
  const kit = langchainTools(governed, { contract: 'contextos' });
  const paused = kit.outcomeOf(toolCallId); // after the agent called repo_delete
  const final = await kit.approve(toolCallId, { approver: 'alice' }); // ToolMessage, status 'success'
  //#endregion
  return { paused, final };
}
