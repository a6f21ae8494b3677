/**
 * `audit stats` counts a call that paused for approval once: its execution after the approval is
 * the call, the pause is counted apart (as replays are). The real flow: a governed runtime over a
 * real SQLite file pauses a destructive call, the CLI approves it (`approvals approve --wait`), the
 * runtime's approval watcher runs it, and the CLI reads the log.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../runtime/define.js';
import { createGovernedRuntime } from '../runtime/governed.js';
import { createRuntime } from '../runtime/runtime.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { AuditRecord } from '../store/types.js';
import * as audit from './audit.js';
import { runVerb } from './test-support/run-verb.js';

const dir = mkdtempSync(join(tmpdir(), 'te-pauses-'));
const db = join(dir, 'calls.db');
let runs = 0;

const purge = defineTool({
  name: 'warehouse_purge',
  description: 'Deletes every item of a warehouse.',
  approvalMode: 'destructive',
  input: z.object({ warehouse: z.string() }),
  handler: async ({ warehouse }) => {
    runs++;
    return { purged: warehouse };
  },
});

const cli = (...args: string[]) => runVerb(audit, [...args, '--store', db], { cwd: dir });

beforeAll(async () => {
  const store = await openSqliteStore({ path: db });
  const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [purge] }), store, principalChain: [{ kind: 'user', id: 'ops' }] });
  const stop = governed.watchApprovals({ intervalMs: 50 });
  try {
    // Three calls pause: one is approved and runs, one is rejected, one still waits.
    const ids: string[] = [];
    for (const warehouse of ['north', 'east', 'west']) {
      const paused = await governed.invoke('warehouse_purge', { warehouse }, { idempotencyKey: `purge-${warehouse}` });
      expect(paused.status).toBe('paused');
      ids.push(String(paused.metadata?.approvalId));
    }
    await governed.flush();
    const approved = await cli('approvals', 'approve', ids[0]!, '--reason', 'OPS-1', '--wait', '30');
    expect(approved.stderr).toBe('');
    expect(approved.stdout).toContain(`${ids[0]}: completed`);
    expect((await cli('approvals', 'reject', ids[1]!, '--reason', 'wrong warehouse')).code).toBe(0);
    await governed.flush();
  } finally {
    await stop();
    await governed.close();
    await store.close();
  }
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('paused calls in audit stats', () => {
  it('the log holds a paused record and a final one for each decided call; the tool ran once', async () => {
    expect(runs).toBe(1);
    const { records } = JSON.parse((await cli('list', '--format', 'json')).stdout) as { records: AuditRecord[] };
    expect(records.map((r) => r.status).sort()).toEqual(['completed', 'paused', 'paused', 'paused', 'rejected']);
  });

  it('counts each decided call once (its final record) and the pauses apart, text and json', async () => {
    const r = await cli('stats', '--wide');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^tool\s+calls\s+replays\s+paused\s+errors\s+error rate\s/);
    // 2 calls (completed, rejected), 0 replays, 3 pauses, 1 error (the rejection).
    expect(lines.find((l) => l.startsWith('warehouse_purge'))).toMatch(/^warehouse_purge\s+2\s+0\s+3\s+1\s+50\.0%/);
    expect(lines.at(-1)).toMatch(/^\(all\)\s+2\s+0\s+3\s+1\s+50\.0%/);
    const [json] = JSON.parse((await cli('stats', '--format', 'json')).stdout) as Record<string, unknown>[];
    expect(json).toMatchObject({ tool: 'warehouse_purge', count: 2, replays: 0, paused: 3, byStatus: { completed: 1, rejected: 1 } });
    expect(json!.byStatus).not.toHaveProperty('paused');
  });

  it('--status paused shows the pauses alone, with no calls', async () => {
    const [json] = JSON.parse((await cli('stats', '--format', 'json', '--status', 'paused')).stdout) as Record<string, unknown>[];
    expect(json).toMatchObject({ tool: 'warehouse_purge', count: 0, paused: 3 });
  });
});
