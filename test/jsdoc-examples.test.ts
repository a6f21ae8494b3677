/**
 * Every JSDoc `@example` in src/ is a copy of a region of examples/jsdoc/*.ts, which the type checker
 * compiles, on a symbol a public entry module exports (scripts/sync-jsdoc-examples.mjs writes them).
 * An example edited by hand, an `@example` on any other symbol, or a region without its symbol fails here.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { plan } from '../scripts/sync-jsdoc-examples.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');

/**
 * Files other work has open (the console, the call feed):
 * `node scripts/sync-jsdoc-examples.mjs FILE` once each lands, then drop it here.
 */
const PENDING: string[] = [
  'src/cli/gateway/observe.ts',
  'src/console/charts.ts',
  'src/console/live-hub.ts',
  'src/console/stats.ts',
  'src/store/call-feed.ts',
  'src/store/postgres/call-feed.ts',
  'src/store/sqlite/call-feed.ts',
];

describe('JSDoc examples', () => {
  const { changes, problems, regions } = plan();

  it('come from type-checked regions, one per public entry point', () => {
    expect(problems).toEqual([]);
    expect(regions.size).toBeGreaterThanOrEqual(20);
    expect(regions.size).toBeLessThanOrEqual(60);
  });

  it('are in src/ exactly as in their region, and nowhere else', () => {
    const differ = changes
      .map(({ file, text }) => {
        const now = readFileSync(file, 'utf8').split('\n');
        const want = text.split('\n');
        const line = now.findIndex((l, i) => l !== want[i]);
        return `${path.relative(ROOT, file)}:${line + 1}: ${now[line]?.trim()}`;
      })
      .filter((where) => !PENDING.includes(where.split(':')[0]!));
    expect(differ, 'run node scripts/sync-jsdoc-examples.mjs').toEqual([]);
    const pending = new Set(changes.map(({ file }) => path.relative(ROOT, file)));
    expect(
      PENDING.filter((f) => !pending.has(f)),
      'synced: drop from PENDING',
    ).toEqual([]);
  });
});
