/**
 * Child process for the concurrent first-open test: for each round, waits until the round's
 * start time, then opens a store at `<dir>/round-<i>.db` (a file no one has created yet), writes
 * one audit record and closes it. Prints `ok <i>` or `fail <i> <message>` per round.
 * argv: <dir> <rounds> <t0 epoch ms> <round interval ms>
 */
import path from 'node:path';
import { openSqliteStore } from '../sqlite/index.js';
import { makeAudit } from './store-suite.js';

const [dir, rounds, t0, every] = process.argv.slice(2);
for (let i = 0; i < Number(rounds); i++) {
  const at = Number(t0) + i * Number(every);
  while (at - Date.now() > 20) await new Promise((r) => setTimeout(r, 10));
  // The last milliseconds spinning: the processes open within a millisecond of each other.
  while (Date.now() < at);
  try {
    const store = await openSqliteStore({ path: path.join(dir as string, `round-${i}.db`) });
    await store.appendAudit([makeAudit({ tool: 'first.open' })]);
    await store.close();
    process.stdout.write(`ok ${i}\n`);
  } catch (e) {
    process.stdout.write(`fail ${i} ${(e as Error).message.replace(/\n/g, ' ')}\n`);
  }
}
