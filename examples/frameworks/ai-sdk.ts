/**
 * tool-envelope in the Vercel AI SDK, 30 seconds: a defineTool tool becomes an AI SDK tool; failures
 * reach the model as `error-json`, a destructive call waits for a human. No network, no model service:
 * the model is the AI SDK's own MockLanguageModelV4, playing a script. Run it:
 *
 * @example
 * ```sh
 * npx tsx examples/frameworks/ai-sdk.ts
 * ```
 */
import { fileURLToPath } from 'node:url';
import { type ModelMessage, generateText, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { aiSdkTools } from '../../src/frameworks/ai-sdk/index.js';
import { createRuntime } from '../../src/runtime/index.js';
import { deleteNote, readNote } from './notes.js'; // notes.read (read_only) and notes.delete (destructive)

// The mock model's script: call a tool, then another, then answer.
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const call = (toolCallId: string, toolName: string, input: object) => ({
  content: [{ type: 'tool-call' as const, toolCallId, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls' as const, raw: undefined },
  usage,
  warnings: [],
});
const say = (text: string) => ({ content: [{ type: 'text' as const, text }], finishReason: { unified: 'stop' as const, raw: undefined }, usage, warnings: [] });
const script = [call('c1', 'notes_read', { id: 'todo' }), call('c2', 'notes_delete', { id: 'todo' }), say('Deleted the note.')];

export async function aiSdkExample(): Promise<unknown[]> {
  const kit = aiSdkTools(createRuntime({ tools: [readNote, deleteNote] }));
  const model = new MockLanguageModelV4({ doGenerate: async () => script.shift()! });
  const settings = { model, tools: kit.tools, toolApproval: kit.toolApproval, repairToolCall: kit.repairToolCall, stopWhen: stepCountIs(5) };
  const messages: ModelMessage[] = [{ role: 'user', content: 'Remove the todo note.' }];

  const first = await generateText({ ...settings, messages }); // stops at the approval request
  messages.push(...first.responseMessages);
  const request = first.content.find((part) => part.type === 'tool-approval-request')!;
  messages.push({ role: 'tool', content: [await kit.respond(request, { approved: true, approver: 'alice' })] });
  await generateText({ ...settings, messages });

  // What the model saw of each tool call, in its last prompt:
  const lastPrompt = model.doGenerateCalls.at(-1)!.prompt;
  return lastPrompt.flatMap((m) => (m.role === 'tool' ? m.content.filter((part) => part.type === 'tool-result') : []));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const part of await aiSdkExample()) console.log(JSON.stringify(part));
}
