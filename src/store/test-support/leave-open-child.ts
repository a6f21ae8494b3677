/**
 * Child process for the exit test: opens a SQLite store, submits `count` audit records without
 * waiting for them, never closes the store, and returns from its main module.
 * argv: <path> <count>
 */
import { AuditWriter } from '../audit-writer.js';
import { openSqliteStore } from '../sqlite/index.js';
import { makeAudit } from './store-suite.js';

const [location, count] = process.argv.slice(2);
const store = await openSqliteStore({ path: location as string });
const writer = new AuditWriter(store, { maxBatch: 100 });
for (let i = 0; i < Number(count); i++) void writer.submit(makeAudit({ tool: 'left.open' }));
process.stdout.write('submitted\n');
