/**
 * What the tests need beside node_modules (scripts/test-prereqs.mjs): `npm test` looks for it first,
 * and a test that needs a missing one fails naming what to install or set, never skips. The script
 * and vitest run as child processes; "missing" is made by pointing the variables at nothing, since
 * uninstalling is not a test's to do.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { PREREQS } from '../scripts/test-prereqs.mjs';
import { repoRoot } from './oracle.js';

const SCRIPT = path.join(repoRoot, 'scripts/test-prereqs.mjs');
const run = (env: NodeJS.ProcessEnv) => spawnSync(process.execPath, [SCRIPT], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 });

describe('scripts/test-prereqs.mjs', () => {
  it('npm test runs it before vitest, and CI installs nothing of its own', () => {
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { scripts: { test: string } };
    expect(pkg.scripts.test).toMatch(/^node scripts\/test-prereqs\.mjs && .*vitest run$/);
    const ci = readFileSync(path.join(repoRoot, '.ci/run'), 'utf8');
    expect(ci).not.toMatch(/apt-get|apt install/);
    // The README's test command (npm ci, its install scripts beside it and the build, then npm test), with the typecheck beside them.
    const steps = ci.split('\n').filter((l) => /^(nice -n \d+ )?(npm |node scripts\/|wait )/.test(l));
    expect(steps).toEqual([
      'node scripts/test-prereqs.mjs &',
      'node scripts/sqlite-addon.mjs build "$addon_dir" > "$addon_dir.log" 2>&1 &',
      'npm ci --ignore-scripts',
      'npm rebuild esbuild',
      'npm run lint',
      'nice -n 10 npm run typecheck > "$typecheck_log" 2>&1 &',
      'node scripts/build-if-stale.mjs',
      'wait "$addon" || { cat "$addon_dir.log"; exit 1; }',
      'node scripts/sqlite-addon.mjs place "$addon_dir"',
      'wait "$prereqs"',
      'npm test',
      'wait "$typecheck" || { cat "$typecheck_log"; exit 1; }',
    ]);
    expect(ci).toMatch(/^set -euo pipefail$/m);
    // The install scripts skipped by `npm ci --ignore-scripts` are those package.json allows, each run:
    // better-sqlite3's by scripts/sqlite-addon.mjs, the others by `npm rebuild`.
    const allowed = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { allowScripts: Record<string, boolean> }).allowScripts;
    const rebuilt = /^npm rebuild (.+)$/m.exec(ci)![1]!.trim().split(' ');
    expect(['better-sqlite3', ...rebuilt].sort()).toEqual(
      Object.keys(allowed)
        .filter((k) => allowed[k])
        .sort(),
    );
  });

  it('names a Debian package and a variable for every row', () => {
    expect(PREREQS.map((p) => p.debian)).toEqual(expect.arrayContaining(['postgresql', 'chromium', 'nginx', 'prometheus']));
    for (const p of PREREQS) {
      expect(p.debian, p.tool).toMatch(/^[a-z0-9][a-z0-9.+-]+$/);
      expect(p.env, p.tool).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(p.find !== undefined || (p.paths?.length ?? 0) > 0, p.tool).toBe(true);
    }
  });

  it('says nothing when each one is found, and goes on', () => {
    const r = run({
      TOOL_ENVELOPE_TEST_PG_URL: 'postgres://u@127.0.0.1:1/db',
      CHROMIUM_PATH: process.execPath,
      NGINX_BIN: process.execPath,
      PROMETHEUS_BIN: process.execPath,
    });
    expect(r.status).toBe(0);
    expect(r.stdout + r.stderr).toBe('');
  });

  it('a variable pointing at nothing is reported with what to do, not installed over; it goes on', () => {
    const r = run({ TOOL_ENVELOPE_TEST_PG_URL: 'postgres://u@127.0.0.1:1/db', CHROMIUM_PATH: '/nonexistent/chromium', NGINX_BIN: '/nonexistent/nginx' });
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain('installing');
    expect(r.stderr).toContain('Chromium not found at CHROMIUM_PATH=/nonexistent/chromium');
    expect(r.stderr).toContain('(Debian: chromium)');
    expect(r.stderr).toContain('nginx not found at NGINX_BIN=/nonexistent/nginx');
    expect(r.stderr).toContain('(Debian: nginx)');
  });
});

describe('a test whose prerequisite is missing', () => {
  it('fails naming it, instead of being skipped', () => {
    // The HTML layout test with CHROMIUM_PATH pointing at nothing, outside CI (where it used to be skipped),
    // on this run's PostgreSQL server (no second throwaway one) and without the CI JSON report.
    const r = spawnSync(process.execPath, [path.join(repoRoot, 'node_modules/vitest/vitest.mjs'), 'run', 'src/report/layout.test.ts'], {
      cwd: repoRoot,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, CI: '', NO_COLOR: '1', CHROMIUM_PATH: '/nonexistent/chromium', TOOL_ENVELOPE_TEST_PG_URL: inject('pgUrl') || 'postgres://none' },
    });
    const out = (r.stdout + r.stderr).replace(/\x1b\[[0-9;]*m/g, '');
    expect(r.status, out).toBe(1);
    expect(out).toContain('needs Chromium');
    expect(out).toContain('Chromium not found at CHROMIUM_PATH=/nonexistent/chromium');
    expect(out).toMatch(/Tests\s+1 failed \(1\)/);
    expect(out).not.toMatch(/skipped/);
  }, 120_000);
});
