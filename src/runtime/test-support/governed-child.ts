/**
 * Child process for the cross-process idempotency test: opens the shared store, waits for a
 * common start time, fires `count` concurrent calls with one idempotency key, prints one JSON
 * line per outcome, flushes the audit log and exits.
 * argv: <sqlite|postgres> <path-or-url> <schema|-> <side-effect-file> <key> <count> <startAtEpochMs>
 */
import { appendFileSync } from 'node:fs';
import { openStore } from '../../store/index.js';
import { defineTool } from '../define.js';
import { createGovernedRuntime } from '../governed.js';
import { createRuntime } from '../runtime.js';

const [, location, schema, sideEffects, key, count, startAt] = process.argv.slice(2);
const store = await openStore(location as string, schema && schema !== '-' ? { schema } : {});
const ledger = defineTool({
  name: 'ledger.append',
  description: 'Appends one line to a file: a side effect that must happen once per key.',
  approvalMode: 'local_write',
  handler: async () => {
    appendFileSync(sideEffects as string, `${process.pid}\n`);
    await new Promise((r) => setTimeout(r, 50));
    return { pid: process.pid };
  },
});
const governed = createGovernedRuntime({
  runtime: createRuntime({ tools: [ledger] }),
  store,
  // Both processes act for one principal: idempotency keys are scoped to the originating principal.
  principalChain: [{ kind: 'automation', id: 'ledger-worker' }],
  idempotency: { pollMs: 5 },
});
await new Promise((r) => setTimeout(r, Math.max(0, Number(startAt) - Date.now())));
const outcomes = await Promise.all(
  Array.from({ length: Number(count) }, () => governed.invoke('ledger.append', { entry: 'x' }, { idempotencyKey: key as string })),
);
for (const o of outcomes) process.stdout.write(`${JSON.stringify({ status: o.status, replay: o.metadata?.replay === true, result: o.result ?? null })}\n`);
await governed.close();
await store.close();
