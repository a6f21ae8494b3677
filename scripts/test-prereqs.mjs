// What the tests need from the system beside node_modules, run by `npm test` before vitest (and so
// by .ci/run). Each one found is left alone; those missing are installed from Debian's packages when
// this can be done (a Debian-like system, as root or with passwordless sudo): `apt-get update` once,
// then one quiet `apt-get install`. Otherwise it prints what to install and goes on: the tests that
// need a missing one then fail, naming it (test/prereqs.ts), rather than skip.
// The tests locate each one through `locate` below, so the script and the tests agree on where.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { findPgBin } from '../test/pg-server.mjs';

/**
 * One row per prerequisite (adding one is adding a row): `debian` is the package that provides it; `env` points at an existing
 * one instead (a path, or for a `_URL` variable a server's URL; set, it is the only place looked at);
 * otherwise `find` or the first existing of `paths`, then the last path's name on PATH.
 */
export const PREREQS = [
  { tool: 'PostgreSQL server', debian: 'postgresql', env: 'TOOL_ENVELOPE_TEST_PG_URL', find: findPgBin, usedBy: 'the PostgreSQL store tests' },
  { tool: 'Chromium', debian: 'chromium', env: 'CHROMIUM_PATH', paths: ['/usr/bin/chromium'], usedBy: 'the HTML report tests' },
  { tool: 'nginx', debian: 'nginx', env: 'NGINX_BIN', paths: ['/usr/sbin/nginx', '/usr/local/nginx/sbin/nginx'], usedBy: 'the scale-out test' },
  { tool: 'Prometheus server', debian: 'prometheus', env: 'PROMETHEUS_BIN', paths: ['/usr/bin/prometheus'], usedBy: 'the gateway metrics test' },
];

/** The row of a prerequisite by its Debian package's name. */
export function prereq(debian) {
  const row = PREREQS.find((p) => p.debian === debian);
  if (!row) throw new Error(`no test prerequisite '${debian}' in scripts/test-prereqs.mjs`);
  return row;
}

/** Where the prerequisite is (a path, or the URL its variable gives), or undefined when missing. */
export function locate(row) {
  const pointed = process.env[row.env];
  if (pointed) return row.env.endsWith('_URL') || existsSync(pointed) ? pointed : undefined;
  if (row.find) return row.find();
  const found = row.paths.find((p) => existsSync(p));
  if (found) return found;
  const which = spawnSync('sh', ['-c', `command -v ${path.basename(row.paths.at(-1))}`], { encoding: 'utf8' });
  return which.status === 0 && which.stdout.trim() ? which.stdout.trim() : undefined;
}

/** What a missing prerequisite's tests say: what to install, or which variable to correct. */
export function missingMessage(row) {
  const pointed = process.env[row.env];
  if (pointed) return `${row.tool} not found at ${row.env}=${pointed} (needed by ${row.usedBy}): point ${row.env} at one, or unset it (Debian: ${row.debian}).`;
  return (
    `${row.tool} is not installed (needed by ${row.usedBy}): apt-get install ${row.debian} (Debian's package; npm test installs it when run as root ` +
    `or with passwordless sudo), or set ${row.env} to ${row.env.endsWith('_URL') ? "an existing server's URL" : 'an existing one'}.`
  );
}

/** `[]` as root, `['sudo', '-n']` with passwordless sudo, undefined when neither can install. */
function installPrefix() {
  if (!existsSync('/etc/debian_version') || spawnSync('sh', ['-c', 'command -v apt-get']).status !== 0) return undefined;
  if (process.getuid?.() === 0) return [];
  return spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0 ? ['sudo', '-n'] : undefined;
}

function apt(prefix, args) {
  // Waits for another apt's lock rather than failing on it; output only when it fails.
  const argv = [...prefix, 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', '-qq', '-o', 'DPkg::Lock::Timeout=600', ...args];
  const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) console.error(`[test-prereqs] ${argv.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  return r.status === 0;
}

function main() {
  const missing = PREREQS.filter((p) => !locate(p));
  // A variable pointing at nothing is a mistake to report, not a reason to install.
  const installable = missing.filter((p) => !process.env[p.env]);
  const prefix = installable.length ? installPrefix() : undefined;
  if (prefix) {
    const packages = installable.map((p) => p.debian);
    console.log(`[test-prereqs] installing Debian's ${packages.join(', ')} for ${installable.map((p) => p.usedBy).join('; ')}`);
    if (apt(prefix, ['update'])) apt(prefix, ['install', '-y', '--no-install-recommends', ...packages]);
  }
  const still = PREREQS.filter((p) => !locate(p));
  for (const p of still) console.error(`[test-prereqs] ${missingMessage(p)}`);
  if (still.length && installable.length && !prefix) {
    console.error('[test-prereqs] not installing: this needs a Debian-like system (apt-get) and root or passwordless sudo.');
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
