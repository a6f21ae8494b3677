/**
 * The two tools the framework examples share: a read that can fail, and a destructive delete.
 *
 * @example
 * ```ts
 * import { readNote, deleteNote } from './notes.js';
 * ```
 */
import { z } from 'zod';
import { defineTool } from '../../src/runtime/index.js';

/**
 * Reads a note; a missing one is a `no-target` failure the agent can act on.
 *
 * @example
 * ```ts
 * createRuntime({ tools: [readNote] });
 * ```
 */
export const readNote = defineTool({
  name: 'notes.read',
  description: 'Reads a note by id.',
  input: z.object({ id: z.string() }),
  approvalMode: 'read_only',
  handler: async ({ id }, ctx) =>
    id === 'welcome' ? { text: 'Hello.' } : ctx.fail({ category: 'no-target', code: 'note-not-found', detail: `No note "${id}".` }),
});

/**
 * Deletes a note: `destructive`, so every framework asks a human first.
 *
 * @example
 * ```ts
 * createRuntime({ tools: [deleteNote] });
 * ```
 */
export const deleteNote = defineTool({
  name: 'notes.delete',
  description: 'Deletes a note.',
  input: z.object({ id: z.string() }),
  approvalMode: 'destructive',
  handler: async ({ id }) => ({ deleted: id }),
});
