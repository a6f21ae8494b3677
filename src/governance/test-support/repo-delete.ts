/**
 * The destructive `repo.delete` tool that the governance tests pause, join and approve; `ran` sees the
 * arguments of each run. Test support only (excluded from the build).
 */
import { z } from 'zod';
import { defineTool } from '../../runtime/define.js';

export function repoDeleteTool(ran: (args: { name: string }) => void) {
  return defineTool({
    name: 'repo.delete',
    description: 'Deletes a repository.',
    approvalMode: 'destructive',
    input: z.object({ name: z.string() }),
    handler: async (args) => {
      ran(args);
      return { deleted: args.name };
    },
  });
}
