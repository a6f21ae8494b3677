// A SQLite log in a directory its reader cannot write: SQLite needs its -wal and -shm files beside
// the database to read it too, and says only "attempt to write a readonly database" of a file that
// is writable. The audit verbs (the built CLI, without the right to write anywhere: as root the
// test runs it without CAP_DAC_OVERRIDE, by setpriv, so that root is held to the directory's mode
// and still reads the checkout) name the directory as the cause.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../mcp/test-support/harness.js';
import { openSqliteStore } from '../store/sqlite/index.js';

const MAIN = join(repoRoot, 'dist/src/cli/main.js');

describe('audit verbs over a log in a directory they cannot write', () => {
  it('say the directory is the cause, not only "a readonly database"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'te-rodir-'));
    const file = join(dir, 'gw.db');
    await (await openSqliteStore({ path: file, auditWorker: false })).close();
    const root = userInfo().uid === 0;
    if (root) {
      // Someone else's directory, read-only to everyone; the file writable by all.
      const nobody = Number(spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).stdout.trim());
      chownSync(dir, nobody, nobody);
      chownSync(file, nobody, nobody);
      chmodSync(file, 0o666);
    }
    chmodSync(dir, 0o555);
    const argv = [process.execPath, MAIN, 'audit', 'list', '--store', file];
    const r = root
      ? spawnSync('setpriv', ['--bounding-set=-dac_override,-dac_read_search', '--', ...argv], { encoding: 'utf8' })
      : spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
    chmodSync(dir, 0o755);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      `cannot open SQLite store at ${file} (its directory ${dir} is not writable by this user: SQLite writes its -wal and -shm files beside the database`,
    );
  });
});
