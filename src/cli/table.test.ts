import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillWithRealCalls } from '../report/test-support/fill.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { Store } from '../store/types.js';
import * as audit from './audit.js';
import { TABLE_WIDTH, fitTable, shorten } from './table.js';
import { runVerb } from './test-support/run-verb.js';

describe('fitTable', () => {
  it('leaves a table that fits as it is, aligned', () => {
    expect(fitTable(['tool', 'calls'], [['fs.read', '12']], { right: new Set(['calls']) })).toBe('tool     calls\n-------  -----\nfs.read     12\n');
  });

  it('fits the width: the widest shortenable columns give way, cells are cut in the middle, kept columns stay whole', () => {
    const id = `aud_${'9'.repeat(40)}`;
    const out = fitTable(['id', 'tool', 'note', 'ms'], [[id, 't'.repeat(60), `start ${'x'.repeat(200)} end`, '1234']], {
      right: new Set(['ms']),
      keep: new Set(['id']),
    });
    const lines = out.trimEnd().split('\n');
    for (const l of lines) expect([...l].length).toBeLessThanOrEqual(TABLE_WIDTH);
    expect(lines[2]).toContain(id);
    expect(lines[2]).toMatch(/start x+…x+ end/);
    expect(lines[2]!.endsWith('1234')).toBe(true);
    // Columns line up under their headers.
    expect(lines[2]!.indexOf('ttt')).toBe(lines[0]!.indexOf('tool'));
  });

  it('with an infinite width (--wide) prints every cell whole', () => {
    const long = 'y'.repeat(300);
    expect(fitTable(['a', 'b'], [['1', long]], { width: Number.POSITIVE_INFINITY })).toContain(long);
  });

  it('leaves out optional columns first, and cuts times at the start before anything else', () => {
    const time = '2026-12-01 09:45:17.577';
    const out = fitTable(['created (UTC)', 'tool', 'why'], [[time, 'inventory_purge', 'w'.repeat(120)]], {
      cutStart: new Set(['created (UTC)']),
      optional: ['why'],
    });
    expect(out).not.toContain('why');
    expect(out).toContain(time);
    const tight = fitTable(['created (UTC)', 'tool'], [[time, 't'.repeat(80)]], { cutStart: new Set(['created (UTC)']), width: 100 });
    expect(tight.split('\n')[2]).toBe(`…${time.slice(-17)}  ${'t'.repeat(80)}`);
  });

  it('shortens by characters, never splitting a surrogate pair', () => {
    expect(shorten('😀😀😀😀😀😀', 3)).toBe('😀…😀');
    expect(shorten('abc', 3)).toBe('abc');
  });
});

describe('audit tables fit 100 columns (a store filled by real gateway and runtime calls)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'te-table-'));
  const path = join(dir, 'calls.db');
  let store: Store;
  beforeAll(async () => {
    store = await openSqliteStore({ path });
    await fillWithRealCalls(store);
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([['list'], ['stats'], ['approvals', '--state', 'approved'], ['approvals', '--state', 'pending']])(
    'audit %s: every line at most 100 columns; --wide shows every cell whole',
    async (...sub) => {
      const fitted = await runVerb(audit, [...sub, '--store', path], { cwd: dir });
      expect(fitted.code, fitted.stderr).toBe(0);
      const lines = fitted.stdout.trimEnd().split('\n');
      for (const l of lines) expect([...l].length, l).toBeLessThanOrEqual(100);
      const wide = await runVerb(audit, [...sub, '--store', path, '--wide'], { cwd: dir });
      expect(wide.code).toBe(0);
      const wideLines = wide.stdout.trimEnd().split('\n');
      expect(wideLines).toHaveLength(lines.length);
      expect(wide.stdout).not.toContain('…');
      // Too wide whole: the fitted table cut cells or left out columns (the optional ones, see audit-common.ts).
      const heads = (line: string) => line.split(/\s{2,}/);
      expect(heads(wideLines[0]!)).toEqual(expect.arrayContaining(heads(lines[0]!)));
      if (wideLines.some((l) => l.length > 100)) expect(fitted.stdout.includes('…') || heads(lines[0]!).length < heads(wideLines[0]!).length).toBe(true);
    },
  );

  it('the wide forms really are wider than 100 columns for list and stats', async () => {
    for (const sub of ['list', 'stats']) {
      const wide = await runVerb(audit, [sub, '--store', path, '--wide'], { cwd: dir });
      expect(Math.max(...wide.stdout.split('\n').map((l) => l.length)), sub).toBeGreaterThan(100);
    }
  });
});
