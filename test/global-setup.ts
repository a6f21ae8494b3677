/**
 * Vitest global setup: gives the tests a real PostgreSQL server.
 *
 * 1. `TOOL_ENVELOPE_TEST_PG_URL` set → the tests use that server as is.
 * 2. Else, when PostgreSQL server binaries are installed (`/usr/lib/postgresql/<v>/bin/initdb`,
 *    the Debian layout, or `initdb` on PATH), a throwaway cluster is created in a temp dir,
 *    started on a free loopback port (Unix socket inside the temp dir) and removed at teardown.
 *    As root the cluster runs as the `postgres` user, since PostgreSQL refuses to run as root.
 * 3. Else no URL is provided; the PostgreSQL tests then fail with a clear message when
 *    `CI=true`, and are reported as skipped (with the reason printed) otherwise.
 *
 * Tests read the URL with `inject('pgUrl')` (empty string = none) and the reason with
 * `inject('pgUnavailableReason')`; see `src/store/test-support/pg.ts`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL connection URL for tests, or '' when none is available. */
    pgUrl: string;
    /** Why no PostgreSQL server is available ('' when one is). */
    pgUnavailableReason: string;
  }
}

function findPgBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) return path.join(root, versions[0], 'bin');
  }
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  const found = which.stdout.trim();
  return which.status === 0 && found ? path.dirname(found) : undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Runs a PostgreSQL binary, as the `postgres` user when we are root. */
function runPg(bin: string, args: string[]): string {
  const asRoot = process.getuid?.() === 0;
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  const external = process.env.TOOL_ENVELOPE_TEST_PG_URL;
  if (external) {
    project.provide('pgUrl', external);
    project.provide('pgUnavailableReason', '');
    return;
  }
  const bin = findPgBin();
  if (!bin) {
    const reason =
      'No PostgreSQL server for the tests: set TOOL_ENVELOPE_TEST_PG_URL=postgres://user:pass@host:port/db, ' +
      'or install the server binaries (Debian: apt-get install postgresql).';
    project.provide('pgUrl', '');
    project.provide('pgUnavailableReason', reason);
    console.warn(`[global-setup] ${reason}`);
    return;
  }

  const dir = mkdtempSync(path.join(tmpdir(), 'tool-envelope-pg-'));
  const data = path.join(dir, 'data');
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  const port = await freePort();
  try {
    runPg(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
    // Test data need not survive a crash of the *server*, so fsync is off to keep tests fast;
    // durability against a killed *client* does not depend on it.
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200`;
    runPg(path.join(bin, 'pg_ctl'), ['-D', data, '-o', opts, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
    runPg(path.join(bin, 'createdb'), ['-h', dir, '-p', String(port), '-U', 'postgres', 'tool_envelope_test']);
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`[global-setup] could not start a throwaway PostgreSQL server in ${dir}: ${(e as Error).message}`);
  }
  project.provide('pgUrl', `postgres://postgres@127.0.0.1:${port}/tool_envelope_test`);
  project.provide('pgUnavailableReason', '');

  return async () => {
    try {
      runPg(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
