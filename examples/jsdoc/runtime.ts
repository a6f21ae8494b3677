// The @example of each public entry point of tool-envelope/runtime (see core.ts).
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { createGovernedRuntime, createRuntime, createSession, defineTool, invokeTool, type ToolDefinition } from '../../src/runtime/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';

export function example_defineTool() {
  //#region defineTool
  const readText = defineTool({
    name: 'fs.read',
    description: 'Reads a UTF-8 text file.',
    approvalMode: 'read_only',
    input: z.object({ path: z.string() }),
    handler: async ({ path }) => ({ text: await readFile(path, 'utf8') }),
  });
  //#endregion
  return readText;
}

export async function example_createRuntime(readText: ToolDefinition) {
  //#region createRuntime
  const runtime = createRuntime({ tools: [readText], defaultTimeoutMs: 5000 });
  const off = runtime.on('invoke:end', (inv) => console.log(inv.toolName, inv.outcome?.status));
  const outcome = await runtime.invoke('fs.read', { path: 'README.md' });
  off();
  //#endregion
  return outcome;
}

export async function example_invokeTool(echo: ToolDefinition) {
  //#region invokeTool
  const outcome = await invokeTool(echo, { text: 'hi' }, { timeoutMs: 1000 });
  outcome.status; // 'ok'
  //#endregion
  return outcome;
}

export function example_createSession() {
  //#region createSession
  const session = createSession({ id: 'desk-1' });
  //#endregion
  return session;
}

export async function example_createGovernedRuntime(writeFile: ToolDefinition) {
  //#region createGovernedRuntime
  const store = await openSqliteStore({ path: './tool-envelope.db' });
  const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [writeFile] }), store });
  await governed.invoke('fs.write', { path: 'a.txt' }, { idempotencyKey: 'job-7:a.txt' });
  //#endregion
}
