// Child process for the concurrent first-open test, on the built package (plain node: no
// transpiler to start in ten processes at once). Prints `ready`, then for each line on stdin
// (`{"round":i,"at":epochMs,"record":{...}}`) waits until `at`, opens a store at
// `<dir>/round-<i>.db` (a file no one has created yet), writes the record and closes it, and
// prints `ok <i>` or `fail <i> <message>`. argv: <dir>
import path from 'node:path';
import { createInterface } from 'node:readline';

const { openSqliteStore } = await import(new URL('../../../dist/src/store/sqlite/index.js', import.meta.url).href);
const [dir] = process.argv.slice(2);
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const { round, at, record } = JSON.parse(line);
  while (at - Date.now() > 20) await new Promise((r) => setTimeout(r, 10));
  // The last milliseconds spinning: the processes open within a millisecond of each other.
  while (Date.now() < at);
  try {
    const store = await openSqliteStore({ path: path.join(dir, `round-${round}.db`) });
    await store.appendAudit([record]);
    await store.close();
    process.stdout.write(`ok ${round}\n`);
  } catch (e) {
    process.stdout.write(`fail ${round} ${String(e?.message ?? e).replace(/\n/g, ' ')}\n`);
  }
}
