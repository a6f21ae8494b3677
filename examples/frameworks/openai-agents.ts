/**
 * tool-envelope in the OpenAI Agents SDK, 30 seconds: defineTool tools become function tools; a
 * failure reaches the model as text built from the envelope, a destructive call interrupts the run
 * until a human approves it. No network, no model service: the model is the SDK's own ScriptedModel.
 * Run it:
 *
 * @example
 * ```sh
 * npx tsx examples/frameworks/openai-agents.ts
 * ```
 */
import { fileURLToPath } from 'node:url';
import { Agent, run, setTracingDisabled } from '@openai/agents';
import { ScriptedModel, assistantMessage, functionCall } from '@openai/agents/testing';
import { openAiAgentsTools } from '../../src/frameworks/openai-agents/index.js';
import { createRuntime } from '../../src/runtime/index.js';
import { deleteNote, readNote } from './notes.js'; // notes.read (read_only) and notes.delete (destructive)

setTracingDisabled(true); // nothing leaves the process

export async function openAiAgentsExample(): Promise<unknown[]> {
  const kit = openAiAgentsTools(createRuntime({ tools: [readNote, deleteNote] }));
  const model = new ScriptedModel([
    [functionCall('notes_read', { id: 'todo' }, { callId: 'c1' })],
    [functionCall('notes_delete', { id: 'todo' }, { callId: 'c2' })],
    [assistantMessage('Deleted the note.')],
  ]);
  const agent = new Agent({ name: 'notes', instructions: 'Manage the notes.', model, tools: kit.tools });

  let result = await run(agent, 'Remove the todo note.');
  for (const item of result.interruptions) await kit.approve(result.state, item, { approver: 'alice' }); // runs it, once
  result = await run(agent, result.state);

  // What the model saw of each tool call (the full envelopes: kit.envelopeOf('c1'), kit.envelopeOf('c2')):
  const input = model.lastCall!.request.input;
  return (Array.isArray(input) ? input : []).filter((item) => item.type === 'function_call_result');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const item of await openAiAgentsExample()) console.log(JSON.stringify(item));
}
