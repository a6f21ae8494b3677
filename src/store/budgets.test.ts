// The budget table on every store: exact counts per window, all or none across charges, an ended
// window starting over; on SQLite and PostgreSQL, exact under concurrency from several processes.
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BudgetCharge } from './budgets.js';
import { createMemoryStore } from './memory.js';
import { openPostgresStore } from './postgres/index.js';
import { openSqliteStore } from './sqlite/index.js';
import { describePg, freshSchemas } from './test-support/pg.js';
import type { Store } from './types.js';

const dir = mkdtempSync(path.join(tmpdir(), 'te-budgets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const charge = (key: string, limit: number, windowEnd: number): BudgetCharge => ({ key, limit, windowEnd });

function suite(open: () => Promise<Store>) {
  it('counts up to the limit in a window, refuses past it, and starts over in the next window', async () => {
    const store = await open();
    try {
      const takes: number[] = [];
      for (let i = 0; i < 5; i++) takes.push(await store.budgets.take([charge('k', 3, 1000)]));
      expect(takes).toEqual([-1, -1, -1, 0, 0]);
      // Another key has its own count.
      expect(await store.budgets.take([charge('other', 1, 1000)])).toBe(-1);
      // The next window: the count starts over at this call.
      expect(await store.budgets.take([charge('k', 3, 2000)])).toBe(-1);
      expect(await store.budgets.take([charge('k', 3, 2000)])).toBe(-1);
      expect(await store.budgets.take([charge('k', 3, 2000)])).toBe(-1);
      expect(await store.budgets.take([charge('k', 3, 2000)])).toBe(0);
      // A process whose clock is behind (the previous window) counts against the newer window, never resets it.
      expect(await store.budgets.take([charge('k', 3, 1000)])).toBe(0);
      expect(await store.budgets.sweep(2000)).toBe(2);
      expect(await store.budgets.take([charge('k', 3, 2000)])).toBe(-1);
    } finally {
      await store.close();
    }
  });

  it('counts a call against all of its charges or none', async () => {
    const store = await open();
    try {
      expect(await store.budgets.take([charge('b', 5, 1000), charge('a', 1, 1000)])).toBe(-1);
      // 'a' is full: the call is refused at index 1 and 'b' does not count it.
      expect(await store.budgets.take([charge('b', 5, 1000), charge('a', 1, 1000)])).toBe(1);
      const left: number[] = [];
      for (let i = 0; i < 5; i++) left.push(await store.budgets.take([charge('b', 5, 1000)]));
      expect(left).toEqual([-1, -1, -1, -1, 0]);
    } finally {
      await store.close();
    }
  });

  it('grants exactly the limit to concurrent calls', async () => {
    const store = await open();
    try {
      const all = await Promise.all(Array.from({ length: 40 }, () => store.budgets.take([charge('c', 25, 1000), charge('d', 100, 1000)])));
      expect(all.filter((r) => r === -1)).toHaveLength(25);
    } finally {
      await store.close();
    }
  });

  it('refuses malformed charges with a typed error', async () => {
    const store = await open();
    try {
      for (const bad of [
        [charge('', 1, 1)],
        [charge('k', 0, 1)],
        [charge('k', 1, 1.5)],
        [charge('k', 1, 1), charge('k', 2, 1)],
        [charge('x'.repeat(1025), 1, 1)],
      ]) {
        await expect(store.budgets.take(bad)).rejects.toMatchObject({ code: 'invalid-option' });
      }
    } finally {
      await store.close();
    }
  });
}

/** A child process that opens the store named by its argv and takes `n` charges of one key, printing how many it got. */
const CHILD = path.join(dir, 'take-child.mjs');
writeFileSync(
  CHILD,
  `const [kind, target, schema, n, limit] = process.argv.slice(2);
const mod = await import(kind === 'sqlite' ? ${JSON.stringify(new URL('./sqlite/index.ts', import.meta.url).pathname)} : ${JSON.stringify(new URL('./postgres/index.ts', import.meta.url).pathname)});
const store = kind === 'sqlite'
  ? await mod.openSqliteStore({ path: target, chainKey: false, auditWorker: false })
  : await mod.openPostgresStore({ connectionString: target, schema, chainKey: false });
process.send('ready');
await new Promise((r) => process.once('message', r));
const got = await Promise.all(Array.from({ length: Number(n) }, () => store.budgets.take([{ key: 'shared', limit: Number(limit), windowEnd: 10_000 }])));
await store.close();
process.send(got.filter((x) => x === -1).length);
`,
);

/** Three processes take 30 charges each of a budget of 50, started together: 50 granted in all. */
async function acrossProcesses(kind: 'sqlite' | 'postgres', target: string, schema: string): Promise<number> {
  const kids = [0, 1, 2].map(() =>
    fork(CHILD, [kind, target, schema, '30', '50'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  await Promise.all(kids.map((k) => new Promise((r) => k.once('message', r))));
  const granted = kids.map((k) => new Promise<number>((r) => k.once('message', (m) => r(Number(m)))));
  for (const k of kids) k.send('go');
  return (await Promise.all(granted)).reduce((a, b) => a + b, 0);
}

describe('budgets: memory store', () => {
  suite(async () => createMemoryStore());
});

describe('budgets: SQLite store', () => {
  let n = 0;
  suite(async () => openSqliteStore({ path: path.join(dir, `b${++n}.db`), chainKey: false, auditWorker: false }));

  it('three processes on one file grant a budget exactly once', async () => {
    const file = path.join(dir, 'shared.db');
    (await openSqliteStore({ path: file, chainKey: false, auditWorker: false })).close();
    expect(await acrossProcesses('sqlite', file, '')).toBe(50);
  });
});

describePg('budgets: PostgreSQL store', (url) => {
  const fresh = freshSchemas(url);
  suite(async () => openPostgresStore({ connectionString: url, schema: fresh(), chainKey: false }));

  it('three processes on one database grant a budget exactly once', async () => {
    const schema = fresh();
    await (await openPostgresStore({ connectionString: url, schema, chainKey: false })).close();
    expect(await acrossProcesses('postgres', url, schema)).toBe(50);
  });
});
