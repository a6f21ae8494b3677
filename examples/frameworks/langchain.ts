/**
 * tool-envelope in LangChain.js, 30 seconds: defineTool tools become LangChain tools whose
 * ToolMessage has `status: 'error'` on failure, `content` for the model and `artifact` the envelope;
 * a destructive call answers "paused" until a human approves it. No network, no model service: the
 * model is @langchain/core's own fakeModel. Run it:
 *
 * @example
 * ```sh
 * npx tsx examples/frameworks/langchain.ts
 * ```
 */
import { fileURLToPath } from 'node:url';
import { AIMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { createAgent } from 'langchain';
import { langchainTools } from '../../src/frameworks/langchain/index.js';
import { createRuntime } from '../../src/runtime/index.js';
import { deleteNote, readNote } from './notes.js'; // notes.read (read_only) and notes.delete (destructive)

export async function langchainExample(): Promise<ToolMessage[]> {
  const kit = langchainTools(createRuntime({ tools: [readNote, deleteNote] }));
  const model = fakeModel()
    .respondWithTools([{ name: 'notes_read', args: { id: 'todo' }, id: 'c1' }])
    .respondWithTools([{ name: 'notes_delete', args: { id: 'todo' }, id: 'c2' }])
    .respond(new AIMessage('The delete waits for an approval.'));
  const agent = createAgent({ model, tools: kit.tools });

  const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'Remove the todo note.' }] });
  const seen = messages.filter((m) => ToolMessage.isInstance(m)); // c1: error (no-target), c2: paused
  const approved = await kit.approve('c2', { approver: 'alice' }); // runs it, once
  return [...seen, approved];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const m of await langchainExample())
    console.log(JSON.stringify({ tool_call_id: m.tool_call_id, status: m.status, content: m.content, artifact: m.artifact }));
}
