/**
 * Tool authors, 30 seconds: write a plain async function, get a correct
 * envelope for every call in all three contracts. Run it:
 *
 * @example
 * ```sh
 * npx tsx examples/quickstart-tool.ts
 * ```
 */
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { encodeContextosResult, encodeDw, encodeMcec } from 'tool-envelope/core';
import { createRuntime, defineTool } from '../src/runtime/index.js';

// 1. Define the tool once: schema, approval ceiling, timeout, and a plain async handler.
const readNote = defineTool({
  name: 'notes.read',
  description: 'Reads a note by id.',
  input: z.object({ id: z.string().min(1) }),
  approvalMode: 'read_only',
  timeoutMs: 2_000,
  handler: async ({ id }, ctx) => {
    const notes: Record<string, string> = { welcome: 'Hello from tool-envelope.' };
    const text = notes[id];
    if (text === undefined) {
      // A failure the agent can act on: a typed failure, not an exception it has to parse.
      return ctx.fail({ category: 'no-target', code: 'note-not-found', detail: `No note "${id}".`, remediation: 'List the notes first.' });
    }
    if (text.length > 20) ctx.warn('long-note', 'The note is longer than 20 characters.');
    return { id, text };
  },
});

// 2. Invoke it: every call resolves to an outcome, whatever the handler does.
export async function quickstart() {
  const runtime = createRuntime({ tools: [readNote] });
  const ok = await runtime.invoke('notes.read', { id: 'welcome' });
  const missing = await runtime.invoke('notes.read', { id: 'nope' });
  const invalid = await runtime.invoke('notes.read', { id: 42 });

  // 3. Encode the outcome as whichever contract the caller speaks.
  return {
    mcec: encodeMcec(ok), //       { ok: true, result: { id, text }, warnings: [...] }
    dw: encodeDw(missing), //      { schema: 'durable-workflow.v2.mcp-tool-result', status: 'error', error: { code: 'note-not-found', ... } }
    contextos: encodeContextosResult(invalid), // { envelope_version: 'contextos.tool_result.v1', status: 'error', ... }
    tools: runtime.list(), //      what an MCP server publishes: names, JSON Schemas, approval modes
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await quickstart(), null, 2));
}
