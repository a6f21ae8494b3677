// The rig of the gateway tests that count executions from the upstream side: a real SQLite file for
// the audit log and the file counting-server.mjs logs each execution to (count-file.ts reads it),
// in a fresh temp dir, and that server as the gateway's upstream `counting`.
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { openStore } from '../../store/index.js';
import type { Store } from '../../store/types.js';
import type { UpstreamSpec } from '../upstream/upstream.js';
import { repoRoot, tempDir } from './harness.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');

export interface CountingRig {
  store: Store;
  /** The SQLite file of `store` (the CLI's verbs open it by path). */
  db: string;
  /** Where the counting server logs its executions. */
  count: string;
}

/** A fresh temp dir with an open store on `audit.db` and the path of `count.jsonl`. */
async function countingRig(): Promise<CountingRig> {
  const dir = tempDir();
  const db = join(dir, 'audit.db');
  return { store: await openStore(db), db, count: join(dir, 'count.jsonl') };
}

/**
 * A rig for the tests of a file or a `describe`, made in a `beforeAll` registered before theirs (so
 * theirs may use it) and its store closed in an `afterAll` that runs after theirs. Its fields are
 * set once that `beforeAll` ran.
 */
export function useCountingRig(): CountingRig {
  const rig = {} as CountingRig;
  beforeAll(async () => {
    Object.assign(rig, await countingRig());
  });
  afterAll(async () => {
    await rig.store?.close();
  });
  return rig;
}

/** counting-server.mjs as the upstream `counting`, logging every execution to `count`. */
export function countingUpstream(count: string): UpstreamSpec {
  return { name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: count } };
}
