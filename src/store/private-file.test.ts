import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPrivateWriteStream, ensurePrivateFile, writePrivateFile } from './private-file.js';
import { openSqliteStore } from './sqlite/index.js';
import { makeAudit } from './test-support/store-suite.js';

const mode = (f: string): number => statSync(f).mode & 0o777;

describe('private files', () => {
  let dir: string;
  let umask: number;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'te-private-'));
    umask = process.umask(0o022);
  });
  afterEach(() => {
    process.umask(umask);
    rmSync(dir, { recursive: true, force: true });
  });

  it('a new SQLite store, its WAL and its SHM are 0600 under umask 022', async () => {
    const file = path.join(dir, 'calls.db');
    const store = await openSqliteStore({ path: file });
    await store.appendAudit([makeAudit()]);
    for (const f of [file, `${file}-wal`, `${file}-shm`]) expect([f, mode(f)]).toEqual([f, 0o600]);
    await store.close();
  });

  it('warns about an existing store file that group or others can read, and leaves its mode', async () => {
    const file = path.join(dir, 'loose.db');
    writeFileSync(file, '');
    chmodSync(file, 0o644);
    const warned: [string, number][] = [];
    const store = await openSqliteStore({ path: file, onLooseFile: (f, m) => warned.push([f, m]) });
    await store.close();
    expect(warned).toEqual([[file, 0o644]]);
    expect(mode(file)).toBe(0o644);
  });

  it('writes reports and exports 0600; an existing looser file gets a warning', async () => {
    const report = path.join(dir, 'report.html');
    await writePrivateFile(report, '<html></html>');
    expect(mode(report)).toBe(0o600);
    const out = path.join(dir, 'export.ndjson');
    const stream = createPrivateWriteStream(out);
    await new Promise<void>((r) => stream.end('{}\n', () => r()));
    expect(mode(out)).toBe(0o600);
    chmodSync(report, 0o640);
    const warned: number[] = [];
    await writePrivateFile(report, 'again', (_f, m) => warned.push(m));
    expect(warned).toEqual([0o640]);
    expect(ensurePrivateFile(report, () => {})).toBe(false);
  });

  it("a device (/dev/null) is written without a mode warning: its mode is not the operator's to change", async () => {
    const warned: number[] = [];
    expect(ensurePrivateFile('/dev/null', (_f, m) => warned.push(m))).toBe(false);
    await writePrivateFile('/dev/null', 'x', (_f, m) => warned.push(m));
    expect(warned).toEqual([]);
    expect(mode('/dev/null')).toBe(0o666);
  });

  it('a directory where the file should be is an invalid-option error, with no warning', async () => {
    const sub = path.join(dir, 'reports');
    mkdirSync(sub, { mode: 0o755 });
    const warned: number[] = [];
    for (const attempt of [() => ensurePrivateFile(sub, (_f, m) => warned.push(m)), () => createPrivateWriteStream(sub, (_f, m) => warned.push(m))])
      expect(attempt).toThrow(expect.objectContaining({ code: 'invalid-option', message: `${sub} is a directory: give the path of a file` }));
    await expect(writePrivateFile(sub, 'x', (_f, m) => warned.push(m))).rejects.toMatchObject({ code: 'invalid-option' });
    await expect(openSqliteStore({ path: sub, onLooseFile: (_f, m) => warned.push(m) })).rejects.toThrow('is a directory');
    expect(warned).toEqual([]);
  });
});
