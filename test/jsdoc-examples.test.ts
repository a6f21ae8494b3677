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
 * Files other work had open when this check landed (the gateway call path and tasks being restructured, the
 * console, the call feed, ...): `node scripts/sync-jsdoc-examples.mjs FILE` once each lands, then drop it here.
 */
const PENDING: string[] = [
  'src/cli/audit.ts',
  'src/cli/gateway-notify.ts',
  'src/cli/gateway-observe.ts',
  'src/cli/gateway-policy-reload.ts',
  'src/cli/gateway.ts',
  'src/console/charts.ts',
  'src/console/console.ts',
  'src/console/inbox-live.ts',
  'src/console/inbox.ts',
  'src/console/inert.ts',
  'src/console/layout.ts',
  'src/console/live-hub.ts',
  'src/console/live.ts',
  'src/console/stats.ts',
  'src/governance/approval-events.ts',
  'src/governance/approvals.ts',
  'src/governance/pipeline-audit.ts',
  'src/governance/pipeline-types.ts',
  'src/governance/pipeline.ts',
  'src/governance/policy-explain.ts',
  'src/governance/policy-reload.ts',
  'src/governance/policy-rules.ts',
  'src/governance/policy-types.ts',
  'src/mcp/gateway/calls.ts',
  'src/mcp/gateway/config.ts',
  'src/mcp/gateway/gateway.ts',
  'src/mcp/gateway/governor.ts',
  'src/mcp/gateway/hidden-tools.ts',
  'src/mcp/index.ts',
  'src/mcp/tasks/calls.ts',
  'src/mcp/tasks/dispatch.ts',
  'src/mcp/tasks/ends.ts',
  'src/mcp/tasks/gateway-hook.ts',
  'src/mcp/tasks/handles.ts',
  'src/mcp/tasks/index.ts',
  'src/mcp/tasks/router.ts',
  'src/mcp/tasks/watch.ts',
  'src/observe/health.ts',
  'src/observe/logger.ts',
  'src/store/call-feed-reader.ts',
  'src/store/call-feed.ts',
  'src/store/memory.ts',
  'src/store/postgres/call-feed.ts',
  'src/store/postgres/index.ts',
  'src/store/postgres/migrations.ts',
  'src/store/sqlite/call-feed.ts',
  'src/store/sqlite/index.ts',
  'src/store/types.ts',
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
