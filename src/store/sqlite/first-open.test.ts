/**
 * Several processes opening one SQLite store that does not exist yet, at the same moment (two
 * gateways sharing one `--store` on their first run): every open succeeds, migrations run once.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { makeAudit } from '../test-support/store-suite.js';
import { openSqliteStore } from './index.js';

const childFile = fileURLToPath(new URL('../test-support/first-open-child.mjs', import.meta.url));

/** A child and its output lines, in order, as they come. */
interface Opener {
  process: ChildProcess;
  next(): Promise<string>;
}

function startOpener(dir: string): Opener {
  const p = spawn(process.execPath, [childFile, dir], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const lines = createInterface({ input: p.stdout! })[Symbol.asyncIterator]();
  return {
    process: p,
    async next() {
      const { value, done } = await lines.next();
      if (done) throw new Error(`child ended (${p.exitCode ?? p.signalCode}): ${err}`);
      return value as string;
    },
  };
}

describe('sqlite: concurrent first open', () => {
  it('10 processes opening one new store at once, 30 times: no failure, migrations applied once', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-first-open-'));
    const rounds = 30;
    const processes = 10;
    const openers = Array.from({ length: processes }, () => startOpener(dir));
    try {
      expect(await Promise.all(openers.map((o) => o.next()))).toEqual(Array(processes).fill('ready'));
      const lines: string[] = [];
      for (let i = 0; i < rounds; i++) {
        // Every round begins at one wall-clock instant, once the last round has ended in every process.
        const at = Date.now() + 150;
        for (const o of openers) o.process.stdin!.write(`${JSON.stringify({ round: i, at, record: makeAudit({ tool: 'first.open' }) })}\n`);
        lines.push(...(await Promise.all(openers.map((o) => o.next()))));
      }
      expect(lines.filter((l) => !l.startsWith('ok '))).toEqual([]);
      expect(lines).toHaveLength(rounds * processes);
      for (let i = 0; i < rounds; i++) {
        const store = await openSqliteStore({ path: path.join(dir, `round-${i}.db`), auditWorker: false });
        expect(await store.countAudit()).toBe(processes);
        const versions = store.db.prepare('SELECT version, COUNT(*) AS n FROM schema_migrations GROUP BY version').all() as { n: number }[];
        expect(versions.every((v) => v.n === 1)).toBe(true);
        await store.close();
      }
    } finally {
      for (const o of openers) o.process.stdin!.end();
      await Promise.all(openers.map((o) => (o.process.exitCode === null ? new Promise((r) => o.process.once('exit', r)) : undefined)));
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
