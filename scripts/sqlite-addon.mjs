// .ci/run: better-sqlite3's native addon, compiled beside `npm ci` instead of after it. Its install
// script compiles SQLite's amalgamation (a minute and a half on one core where no prebuilt addon can
// be downloaded), the longest step before the tests can start, and it needs nothing but the package
// itself: `npm pack` fetches it (npm's cache, else the registry) at the version package-lock.json locks.
//
//   node scripts/sqlite-addon.mjs build DIR   fetch the package into DIR and compile it there
//   node scripts/sqlite-addon.mjs place DIR   after `npm ci --ignore-scripts`: DIR's addon into
//                                             node_modules/better-sqlite3, then open a database with it
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const ADDON = path.join('build', 'Release', 'better_sqlite3.node');
const [verb, dir] = process.argv.slice(2);

function run(command, args, cwd) {
  const r = spawnSync(command, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
  return r.stdout;
}

function build() {
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
  const version = lock.packages['node_modules/better-sqlite3']?.version;
  if (!version) throw new Error('package-lock.json locks no better-sqlite3');
  const tarball = run('npm', ['pack', '--silent', `better-sqlite3@${version}`, '--pack-destination', dir], dir)
    .trim()
    .split('\n')
    .pop();
  run('tar', ['xzf', tarball], dir);
  // The package's own build script (node-gyp, which npm puts on the PATH of the scripts it runs).
  run('npm', ['run', 'build-release'], path.join(dir, 'package'));
  console.log(`better-sqlite3 ${version}: ${path.join(dir, 'package', ADDON)}`);
}

function place() {
  const from = path.join(dir, 'package', ADDON);
  if (!existsSync(from)) throw new Error(`no addon at ${from}: run 'build' first`);
  const to = path.join(root, 'node_modules', 'better-sqlite3', ADDON);
  mkdirSync(path.dirname(to), { recursive: true });
  copyFileSync(from, to);
  const Database = createRequire(path.join(root, 'package.json'))('better-sqlite3');
  const db = new Database(':memory:');
  console.log(`better-sqlite3 addon in place: SQLite ${db.prepare('SELECT sqlite_version() AS v').get().v}`);
  db.close();
}

if (!dir || (verb !== 'build' && verb !== 'place')) {
  console.error('usage: node scripts/sqlite-addon.mjs build|place DIR');
  process.exit(2);
}
if (verb === 'build') build();
else place();
