/**
 * A process that owns a destructive tool: a governed runtime over a shared store with its
 * approval worker running. With `pause`, it first makes one call that pauses for approval and
 * prints `approval <id>`. Every real run of the tool appends one line to the counter file.
 * Prints `watching` once polling; stops cleanly on SIGTERM. Test support only.
 * argv: <sqlite|postgres> <path-or-url> <schema|-> <counter-file> [pause]
 */
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { defineTool } from '../../runtime/define.js';
import { createGovernedRuntime } from '../../runtime/governed.js';
import { createRuntime } from '../../runtime/runtime.js';
import type { Store } from '../../store/types.js';

const [kind, location, schema, counter, mode] = process.argv.slice(2) as [string, string, string, string, string | undefined];
let store: Store;
if (kind === 'sqlite') {
  const { openSqliteStore } = await import('../../store/sqlite/index.js');
  store = await openSqliteStore({ path: location });
} else {
  const { openPostgresStore } = await import('../../store/postgres/index.js');
  store = await openPostgresStore({ connectionString: location, ...(schema !== '-' && { schema }) });
}
const purge = defineTool({
  name: 'warehouse_purge',
  description: 'Deletes every item of a warehouse.',
  approvalMode: 'destructive',
  input: z.object({ warehouse: z.string() }),
  handler: async ({ warehouse }, ctx) => {
    appendFileSync(counter, `${process.pid} ${warehouse}\n`);
    ctx.artifact(`file:///var/purge/${warehouse}.log`);
    return { purged: warehouse, by: process.pid };
  },
});
const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [purge] }), store, principalChain: [{ kind: 'user', id: 'ops' }] });
if (mode === 'pause') {
  const paused = await governed.invoke('warehouse_purge', { warehouse: 'north' }, { idempotencyKey: `purge-north-${process.pid}` });
  await governed.flush();
  process.stdout.write(`approval ${String(paused.metadata?.approvalId)}\n`);
  const rejectMe = await governed.invoke('warehouse_purge', { warehouse: 'east' }, { idempotencyKey: `purge-east-${process.pid}` });
  await governed.flush();
  process.stdout.write(`approval ${String(rejectMe.metadata?.approvalId)}\n`);
}
const stop = governed.watchApprovals({ intervalMs: 50, onError: (e) => process.stderr.write(`worker: ${String(e)}\n`) });
process.stdout.write('watching\n');
process.once('SIGTERM', () => {
  void (async () => {
    await stop();
    await governed.close();
    await store.close();
    process.exit(0);
  })();
});
