/**
 * The package as a user installs it: `npm pack` of the library and of the CLI package (cli/), each
 * tarball installed into a scratch project from the npm registry (`--prefer-offline`), every
 * subpath of the library's `exports` imported, and the `tool-envelope` bin run.
 *
 * - The library alone installs no driver and builds nothing native; its subpaths that need a driver
 *   reject with a `missing-dependency` ToolEnvelopeError naming a package its package.json lists
 *   as an optional peer, as does a policy with `when` conditions (@bufbuild/cel).
 * - With the CLI package (which depends on every driver the CLI uses) every subpath loads (one whose
 *   optional peer the CLI does not bring may only be the typed error naming it) and the bin works,
 *   SQLite included. Its install skips install scripts and reuses the native addon this repository's
 *   own install built (same better-sqlite3 version): building it again would take minutes and
 *   prove nothing about this package.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from './oracle.js';

const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
  exports: Record<string, unknown>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  scripts: Record<string, string>;
  files: string[];
};
const work = mkdtempSync(path.join(tmpdir(), 'te-pack-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const npm = (args: string[], cwd: string): string =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8', timeout: 240_000 });

let libTgz = '';
let cliTgz = '';
beforeAll(() => {
  // dist/ is already built (npm test builds first); packing must not rebuild it under the other tests.
  libTgz = path.join(work, npm(['pack', '--ignore-scripts', '--pack-destination', work], repoRoot).trim().split('\n').pop()!);
  cliTgz = path.join(work, npm(['pack', '--ignore-scripts', '--pack-destination', work], path.join(repoRoot, 'cli')).trim().split('\n').pop()!);
}, 240_000);

function scratch(name: string): string {
  const dir = path.join(work, name);
  cpSync(path.join(repoRoot, 'test/fixtures/package-install'), dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `scratch-${name}`, private: true, type: 'module' }));
  return dir;
}

/** Every import subpath of the library (`./package.json` and the self-running `./cli` aside). */
const subpaths = Object.keys(pkg.exports)
  .filter((k) => k !== './package.json' && k !== './cli')
  .map((k) => (k === '.' ? 'tool-envelope' : `tool-envelope/${k.slice(2)}`));

function importAll(dir: string): Record<string, string> {
  const out = execFileSync(process.execPath, ['import-all.mjs', ...subpaths], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  return JSON.parse(out) as Record<string, string>;
}

const PLAIN_POLICY = 'version: 1\nrules:\n  - name: outside\n    match: { tool: write_file }\n    effect: deny\n';
const WHEN_POLICY = `version: 1
rules:
  - name: outside
    match: { tool: write_file }
    when: "!within(args.path, '/srv/shared')"
    effect: deny
tests:
  - call: { tool: write_file, mode: local_write, args: { path: /srv/shared/../etc/passwd } }
    expect: deny
  - call: { tool: write_file, mode: local_write, args: { path: /srv/shared/a.txt } }
    expect: allow
`;

const bin = (dir: string, ...args: string[]) =>
  spawnSync(path.join(dir, 'node_modules/.bin/tool-envelope'), args, {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, TOOL_ENVELOPE_STORE: '' },
  });

describe('the packed library', () => {
  it('ships no source map, no install-time script, a LICENSE, and keeps the drivers as optional peers', () => {
    const files = execFileSync('tar', ['-tzf', libTgz], { encoding: 'utf8' }).split('\n');
    expect(files).toContain('package/LICENSE');
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(files.filter((f) => f.startsWith('package/src/'))).toEqual([]);
    // tool-envelope/core is the bundle dist/core.js: tsc's core modules, which nothing loads, stay out;
    // their declarations, which the types of every subpath need, stay in (one for each module of dist/).
    expect(files).toContain('package/dist/core.js');
    expect(files.filter((f) => f.startsWith('package/dist/src/core/') && f.endsWith('.js'))).toEqual([]);
    const coreDeclarations = readdirSync(path.join(repoRoot, 'dist/src/core'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.js'))
      .map((f) => `package/dist/src/core/${f.replace(/\\/g, '/').replace(/\.js$/, '.d.ts')}`);
    expect(coreDeclarations.length).toBeGreaterThan(20);
    for (const d of coreDeclarations) expect(files, d).toContain(d);
    // The SQLite audit writer and checkpointer threads are entry files of their own.
    for (const entry of ['audit-thread.js', 'checkpoint-thread.js', 'audit-protocol.js']) expect(files).toContain(`package/dist/src/store/sqlite/${entry}`);
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) expect(pkg.scripts[hook], hook).toBeUndefined();
    for (const driver of [
      'better-sqlite3',
      'pg',
      '@opentelemetry/api',
      '@modelcontextprotocol/server',
      '@modelcontextprotocol/client',
      '@modelcontextprotocol/core',
      '@modelcontextprotocol/node',
      '@modelcontextprotocol/ext-tasks',
      '@bufbuild/cel',
    ]) {
      expect(pkg.dependencies[driver], driver).toBeUndefined();
      expect(pkg.peerDependenciesMeta[driver]?.optional, driver).toBe(true);
    }
  });

  it('installs alone with no driver and nothing native; driver subpaths are typed errors naming the package', () => {
    const dir = scratch('lib');
    npm(['install', '--prefer-offline', libTgz], dir);
    const installed = readdirSync(path.join(dir, 'node_modules'));
    for (const driver of ['better-sqlite3', 'pg', '@modelcontextprotocol', '@opentelemetry']) expect(installed).not.toContain(driver);
    const native = execFileSync('find', ['node_modules', '-name', 'binding.gyp', '-o', '-name', '*.node'], { cwd: dir, encoding: 'utf8' });
    expect(native).toBe('');
    const results = importAll(dir);
    const missing = Object.entries(results).filter(([, r]) => r !== 'ok');
    expect(Object.keys(results)).toEqual(subpaths);
    for (const core of ['tool-envelope', 'tool-envelope/core', 'tool-envelope/runtime', 'tool-envelope/store']) expect(results[core], core).toBe('ok');
    expect(missing.length).toBeGreaterThanOrEqual(4);
    for (const [subpath, r] of missing) {
      const m = /^missing-dependency: (\S+) needs the package (\S+), which is not installed: npm install (\S+)$/.exec(r);
      expect(m, `${subpath}: ${r}`).not.toBeNull();
      expect(m![1]).toBe(subpath);
      expect(pkg.peerDependenciesMeta[m![2]!]?.optional, m![2]).toBe(true);
    }
    // The bin runs what needs no driver, and names the driver for what does.
    const schema = bin(dir, 'schema', 'mcec');
    expect(schema.status).toBe(0);
    expect(JSON.parse(schema.stdout).$id).toMatch(/mcec/);
    const gateway = bin(dir, 'gateway', '--', 'node', 'x.js');
    expect(gateway.status).toBe(2);
    expect(gateway.stderr).toMatch(/needs the package @modelcontextprotocol\/(server|client|core|node|ext-tasks), which is not installed/);
    expect(gateway.stderr).toContain('npm install -g tool-envelope-cli');
    const store = execFileSync(process.execPath, ['open-store.mjs', 'calls.db'], { cwd: dir, encoding: 'utf8' });
    expect(store).toBe('missing-dependency: a SQLite store needs the package better-sqlite3, which is not installed: npm install better-sqlite3');
    // Policy conditions (CEL) are the optional peer @bufbuild/cel: a policy without them needs nothing,
    // one with them is the typed error naming it, from the library and from the bin.
    expect(installed).not.toContain('@bufbuild');
    expect(execFileSync(process.execPath, ['load-policy.mjs', PLAIN_POLICY], { cwd: dir, encoding: 'utf8' })).toBe('deny outside');
    expect(execFileSync(process.execPath, ['load-policy.mjs', WHEN_POLICY], { cwd: dir, encoding: 'utf8' })).toBe(
      "missing-dependency: a policy rule's when condition needs the package @bufbuild/cel, which is not installed: npm install @bufbuild/cel",
    );
    writeFileSync(path.join(dir, 'plain.yaml'), PLAIN_POLICY);
    writeFileSync(path.join(dir, 'when.yaml'), WHEN_POLICY);
    expect(bin(dir, 'policy', 'check', 'plain.yaml').status).toBe(0);
    const check = bin(dir, 'policy', 'check', 'when.yaml');
    expect(check.status).toBe(2);
    expect(check.stderr).toMatch(/needs the package @bufbuild\/cel, which is not installed/);
  }, 240_000);

  it('with the CLI package every subpath loads and the bin works, SQLite included', () => {
    const dir = scratch('cli');
    npm(['install', '--prefer-offline', '--ignore-scripts', libTgz, cliTgz], dir);
    const addon = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
    const theirs = JSON.parse(readFileSync(path.join(dir, 'node_modules/better-sqlite3/package.json'), 'utf8')) as { version: string };
    const ours = JSON.parse(readFileSync(path.join(repoRoot, 'node_modules/better-sqlite3/package.json'), 'utf8')) as { version: string };
    expect(theirs.version).toBe(ours.version);
    cpSync(path.join(repoRoot, addon), path.join(dir, addon));
    // Every subpath loads, but one whose optional peer the CLI does not need (and so does not bring)
    // may only be the typed error naming that peer.
    const cliDeps = (JSON.parse(readFileSync(path.join(repoRoot, 'cli/package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies;
    const results = importAll(dir);
    for (const [subpath, r] of Object.entries(results)) {
      if (r === 'ok') continue;
      const peer = /^missing-dependency: \S+ needs the package (\S+),/.exec(r)?.[1];
      expect(peer, `${subpath}: ${r}`).toBeDefined();
      expect(cliDeps[peer!], `${subpath}: ${r}`).toBeUndefined();
      expect(pkg.peerDependenciesMeta[peer!]?.optional, peer).toBe(true);
    }
    for (const s of ['tool-envelope/store/sqlite', 'tool-envelope/store/postgres', 'tool-envelope/mcp', 'tool-envelope/otel']) expect(results[s], s).toBe('ok');
    expect(bin(dir, '--version').stdout.trim()).toBe(pkg.version);
    expect(execFileSync(process.execPath, ['open-store.mjs', 'calls.db'], { cwd: dir, encoding: 'utf8' })).toBe('ok');
    expect(existsSync(path.join(dir, 'calls.db'))).toBe(true);
    // Audit records committed by the installed package's worker thread (a thread that cannot start warns).
    expect(execFileSync(process.execPath, ['write-audit.mjs', 'written.db'], { cwd: dir, encoding: 'utf8' })).toBe('ok 50');
    const list = bin(dir, 'audit', 'list', '--store', 'calls.db');
    expect(list.stderr).toBe('');
    expect(list.status).toBe(0);
    const help = bin(dir, 'gateway', '--help');
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: tool-envelope gateway/);
    // The CLI brings @bufbuild/cel: conditions compile and decide, and policy check runs the file's tests.
    expect(execFileSync(process.execPath, ['load-policy.mjs', WHEN_POLICY], { cwd: dir, encoding: 'utf8' })).toBe('deny outside');
    writeFileSync(path.join(dir, 'when.yaml'), WHEN_POLICY);
    const check = bin(dir, 'policy', 'check', 'when.yaml');
    expect([check.status, check.stdout, check.stderr]).toEqual([0, 'when.yaml: 1 rule(s), 2 of 2 test case(s) passed\n', '']);
    // A layout that does not hoist (pnpm; or other versions of them at the top): @bufbuild/cel's own
    // dependencies only beside it, where this package, which does not depend on them, cannot see them.
    const nested = path.join(dir, 'node_modules/@bufbuild/cel/node_modules/@bufbuild');
    mkdirSync(nested, { recursive: true });
    for (const dep of ['protobuf', 'cel-spec']) renameSync(path.join(dir, 'node_modules/@bufbuild', dep), path.join(nested, dep));
    expect(execFileSync(process.execPath, ['load-policy.mjs', WHEN_POLICY], { cwd: dir, encoding: 'utf8' })).toBe('deny outside');
  }, 240_000);
});
