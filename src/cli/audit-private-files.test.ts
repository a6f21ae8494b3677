/**
 * Where the audit CLI reads and writes files the operator named: the mode warning and its chmod
 * advice are for regular files only (chmod 600 /dev/null would break the machine); a directory
 * where a file is expected is a clear usage error.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../store/sqlite/index.js';
import { makeAudit } from '../store/test-support/store-suite.js';
import * as audit from './audit.js';
import { runVerb } from './test-support/run-verb.js';

const dir = mkdtempSync(join(tmpdir(), 'te-audit-files-'));
const db = join(dir, 'calls.db');
const folder = join(dir, 'folder');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('audit and the files it is given', () => {
  beforeAll(async () => {
    mkdirSync(folder, { mode: 0o755 });
    const store = await openSqliteStore({ path: db });
    await store.appendAudit([makeAudit({ sessionId: 'S', status: 'error', category: 'internal' })]);
    await store.close();
  });
  const cli = (...args: string[]) => runVerb(audit, args, { cwd: dir });

  it('--store /dev/null: refused, with no chmod advice', async () => {
    const r = await cli('list', '--store', '/dev/null');
    expect(r.code).toBe(2);
    expect(r.stderr).not.toMatch(/chmod|mode 0/);
  });

  it('a directory as --store, --html, --out: "is a directory", exit 2, no chmod advice', async () => {
    for (const args of [
      ['list', '--store', folder],
      ['report', '--html', folder, '--store', db],
      ['export', '--out', folder, '--store', db],
      ['failure-summary', 'S', '--out', folder, '--store', db],
    ]) {
      const r = await cli(...args);
      expect([args[0], r.code]).toEqual([args[0], 2]);
      expect(r.stderr).toContain(`${folder} is a directory: give the path of a file`);
      expect(r.stderr).not.toMatch(/chmod|mode 0/);
    }
  });

  it('export --out /dev/null writes there, with no warning', async () => {
    const r = await cli('export', '--out', '/dev/null', '--store', db);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('1 records written to /dev/null\n');
  });
});
