/**
 * A SQLite store in a fresh temporary folder for one test file: opened before its tests, closed and
 * the folder removed after them. Test support only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { openSqliteStore } from '../../store/sqlite/index.js';
import type { SqliteStoreOptions } from '../../store/sqlite/options.js';
import type { Store } from '../../store/types.js';

/** The folder, the store's file in it, and the store (open from the file's `beforeAll` to its `afterAll`). */
export interface StoreFile {
  readonly dir: string;
  readonly path: string;
  store: Store;
}

/** Registers the hooks that open and close the store; call it at a test file's top level. */
export function storeFileForTests(prefix: string, options: Omit<SqliteStoreOptions, 'path'> = {}): StoreFile {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const file = { dir, path: join(dir, 'calls.db') } as StoreFile;
  beforeAll(async () => {
    file.store = await openSqliteStore({ ...options, path: file.path });
  });
  afterAll(async () => {
    await file.store?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return file;
}
