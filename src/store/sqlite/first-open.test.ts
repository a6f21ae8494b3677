/**
 * Several processes opening one SQLite store that does not exist yet, at the same moment (two
 * gateways sharing one `--store` on their first run): every open succeeds, migrations run once.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from './index.js';

const child = fileURLToPath(new URL('../test-support/first-open-child.ts', import.meta.url));

function runChild(dir: string, rounds: number, t0: number, every: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', child, dir, String(rounds), String(t0), String(every)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`child exited ${code}: ${err}`))));
  });
}

describe('sqlite: concurrent first open', () => {
  it('10 processes opening one new store at once, 30 times: no failure, migrations applied once', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-first-open-'));
    const rounds = 30;
    const processes = 10;
    try {
      // Children start at different speeds: every round begins at a common wall-clock time.
      const t0 = Date.now() + 6_000;
      const outs = await Promise.all(Array.from({ length: processes }, () => runChild(dir, rounds, t0, 600)));
      const lines = outs.flatMap((o) => o.split('\n').filter(Boolean));
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
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
