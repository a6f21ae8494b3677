// A throwaway PostgreSQL server for tests and benchmarks: initdb in a temp dir, start on a free
// loopback port (Unix socket in the temp dir), create a database, stop and delete on request.
// As root the server runs as the `postgres` user, since PostgreSQL refuses to run as root.
// Used by test/global-setup.ts and bench/store.bench.mjs. Types: test/pg-server.d.mts.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The directory of the newest installed PostgreSQL server binaries, or undefined. */
export function findPgBin() {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) return path.join(root, versions[0], 'bin');
  }
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  const found = (which.stdout ?? '').trim();
  return which.status === 0 && found ? path.dirname(found) : undefined;
}

function freePort() {
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

function runPg(bin, args) {
  const asRoot = process.getuid?.() === 0;
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Starts a throwaway server. `durable: false` turns fsync off (fast tests; a killed *client*
 * loses nothing either way); benchmarks keep PostgreSQL's durable defaults.
 * @param {{ bin: string, database?: string, durable?: boolean }} options
 * @returns {Promise<{ url: string, dir: string, stop: () => void }>}
 */
export async function startThrowawayPg({ bin, database = 'tool_envelope_test', durable = false }) {
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
    const fast = durable ? '' : ' -c fsync=off -c full_page_writes=off';
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200${fast}`;
    runPg(path.join(bin, 'pg_ctl'), ['-D', data, '-o', opts, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
    runPg(path.join(bin, 'createdb'), ['-h', dir, '-p', String(port), '-U', 'postgres', database]);
  } catch (e) {
    try {
      runPg(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Not started: nothing to stop.
    }
    rmSync(dir, { recursive: true, force: true });
    const stderr = e && typeof e === 'object' && 'stderr' in e ? String(e.stderr) : '';
    throw new Error(`could not start a throwaway PostgreSQL server: ${e instanceof Error ? e.message : String(e)} ${stderr}`);
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/${database}`,
    dir,
    stop() {
      try {
        runPg(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * The row a benchmark's group gets when {@link benchPostgres} finds no server.
 * @param {string} group
 */
export function pgNotMeasured(group) {
  return {
    group,
    name: 'PostgreSQL: not measured',
    value: 'n/a',
    note: 'no TOOL_ENVELOPE_BENCH_PG_URL and no PostgreSQL server binaries installed (Debian: apt-get install postgresql)',
  };
}

/**
 * The PostgreSQL server a benchmark measures: `TOOL_ENVELOPE_BENCH_PG_URL`, else a throwaway durable
 * server (its `server` to stop when done), else `undefined` when neither is to be had.
 * @returns {Promise<{ url: string, server?: { url: string, dir: string, stop: () => void } } | undefined>}
 */
export async function benchPostgres() {
  const url = process.env.TOOL_ENVELOPE_BENCH_PG_URL;
  if (url) return { url };
  const bin = findPgBin();
  if (!bin) return undefined;
  const server = await startThrowawayPg({ bin, database: 'tool_envelope_bench', durable: true });
  return { url: server.url, server };
}
