/**
 * Vitest global setup: gives the tests a per-run temporary directory (removed at the end) and a
 * real PostgreSQL server. (The conformance oracle needs
 * nothing beside the clone: it compiles from the vendored `schemas/`, see test/oracle.ts.)
 *
 * 1. `TOOL_ENVELOPE_TEST_PG_URL` set → the tests use that server as is.
 * 2. Else, when PostgreSQL server binaries are installed (`/usr/lib/postgresql/<v>/bin/initdb`,
 *    the Debian layout, or `initdb` on PATH), a throwaway cluster is created in a temp dir,
 *    started on a free loopback port (Unix socket inside the temp dir) and removed at teardown
 *    (see test/pg-server.mjs). As root it runs as the `postgres` user.
 * 3. Else (or with `TOOL_ENVELOPE_TEST_NO_PG=1`) no URL is provided; the PostgreSQL tests then fail,
 *    saying what to install (scripts/test-prereqs.mjs, run by `npm test` first, installs it when it can).
 *
 * Tests read the URL with `inject('pgUrl')` (empty string = none) and the reason with
 * `inject('pgUnavailableReason')`; see `src/store/test-support/pg.ts`.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { missingMessage, prereq } from '../scripts/test-prereqs.mjs';
import { findPgBin, startThrowawayPg } from './pg-server.mjs';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL connection URL for tests, or '' when none is available. */
    pgUrl: string;
    /** Why no PostgreSQL server is available ('' when one is). */
    pgUnavailableReason: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.TOOL_ENVELOPE_TEST_PG_URL;
  if (external) {
    project.provide('pgUrl', external);
    project.provide('pgUnavailableReason', '');
    return useRunTmp();
  }
  // TOOL_ENVELOPE_TEST_NO_PG=1 behaves as if no server were installed (to check that path: the PostgreSQL tests fail).
  const bin = process.env.TOOL_ENVELOPE_TEST_NO_PG === '1' ? undefined : findPgBin();
  if (!bin) {
    const reason = `${missingMessage(prereq('postgresql'))}${process.env.TOOL_ENVELOPE_TEST_NO_PG === '1' ? ' (TOOL_ENVELOPE_TEST_NO_PG=1 is set.)' : ''}`;
    project.provide('pgUrl', '');
    project.provide('pgUnavailableReason', reason);
    console.warn(`[global-setup] ${reason}`);
    return useRunTmp();
  }
  // Before the run's temporary root exists: the server runs as another user and keeps its own directory.
  const server = await startThrowawayPg({ bin });
  project.provide('pgUrl', server.url);
  project.provide('pgUnavailableReason', '');
  const removeRunTmp = useRunTmp();
  return async () => {
    await server.stop();
    await removeRunTmp();
  };
}

/**
 * One temporary root per run, inherited by every test worker and child process (os.tmpdir() reads
 * TMPDIR); returns its removal, for the teardown: whatever a test or a process it starts leaves in
 * the temp directory goes with it.
 */
function useRunTmp(): () => Promise<void> {
  const runTmp = mkdtempSync(path.join(tmpdir(), 'te-run-'));
  // Traversable (not listable) by others: a throwaway PostgreSQL server a test starts as root runs as
  // the postgres user, in a directory under this one.
  chmodSync(runTmp, 0o711);
  for (const name of ['TMPDIR', 'TMP', 'TEMP']) process.env[name] = runTmp;
  return async () => rmSync(runTmp, { recursive: true, force: true, maxRetries: 3 });
}
