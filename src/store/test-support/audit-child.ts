/**
 * Child process for the crash test: writes audit records through the AuditWriter forever and
 * prints the id of every record whose commit was acknowledged, one per line, until killed.
 * argv: <sqlite|postgres> <path-or-url> [schema]
 */
import { AuditWriter } from '../audit-writer.js';
import type { Store } from '../types.js';
import { makeAudit } from './store-suite.js';

const [kind, location, schema] = process.argv.slice(2);
let store: Store;
if (kind === 'sqlite') {
  const { openSqliteStore } = await import('../sqlite/index.js');
  store = await openSqliteStore({ path: location as string });
} else {
  const { openPostgresStore } = await import('../postgres/index.js');
  store = await openPostgresStore({ connectionString: location as string, ...(schema ? { schema } : {}) });
}
const writer = new AuditWriter(store, { maxQueue: 2000, maxBatch: 250 });
process.stdout.write('ready\n');
for (;;) {
  const record = makeAudit({ tool: `crash.${kind}` });
  const { committed } = await writer.submit(record);
  committed.then(
    () => process.stdout.write(`${record.id}\n`),
    (e: unknown) => process.stderr.write(`failed ${record.id}: ${String(e)}\n`),
  );
}
