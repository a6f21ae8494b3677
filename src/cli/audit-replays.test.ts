/**
 * `audit list` and `audit stats` tell a replay (the stored outcome of a repeated idempotency key,
 * the tool not run again) from a call: real governed-runtime calls into a real SQLite store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolFailure } from '../core/classify.js';
import { defineTool } from '../runtime/define.js';
import { createGovernedRuntime } from '../runtime/governed.js';
import { createRuntime } from '../runtime/runtime.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import * as audit from './audit.js';
import { runVerb } from './test-support/run-verb.js';

const dir = mkdtempSync(join(tmpdir(), 'te-replays-'));
const db = join(dir, 'calls.db');
let runs = 0;
/** Every record from here on is a replay of write_note's first call. */
let replaysFrom = 0;

const write = defineTool({
  name: 'write_note',
  description: 'Writes a note.',
  approvalMode: 'local_write',
  input: z.object({ path: z.string() }),
  handler: async ({ path }) => {
    runs++;
    if (path === '/full') throw new ToolFailure({ category: 'no-target', code: 'no-such-dir', detail: 'No such directory.' });
    return { wrote: path };
  },
});

beforeAll(async () => {
  const store = await openSqliteStore({ path: db });
  const governed = createGovernedRuntime({ runtime: createRuntime({ tools: [write] }), store, principalChain: [{ kind: 'agent', id: 'a-1' }] });
  // One execution and three replays of it; one failed execution and one replay of the failure.
  for (let i = 0; i < 2; i++) await governed.invoke('write_note', { path: '/full' }, { idempotencyKey: 'k-full' });
  await governed.invoke('write_note', { path: '/srv/a' }, { idempotencyKey: 'k-a' });
  // The next millisecond, so that a --since window can hold the replays alone.
  const ran = Date.now();
  while (Date.now() <= ran) await new Promise((r) => setTimeout(r, 1));
  replaysFrom = Date.now();
  for (let i = 0; i < 3; i++) await governed.invoke('write_note', { path: '/srv/a' }, { idempotencyKey: 'k-a' });
  await governed.flush();
  await governed.close();
  await store.close();
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runVerb(audit, [...args, '--store', db], { cwd: dir });

describe('replays in the audit CLI', () => {
  it('the tool ran twice; the log holds six records, four of them replays', async () => {
    expect(runs).toBe(2);
    const { records } = JSON.parse((await cli('list', '--format', 'json')).stdout) as { records: { replay: boolean }[] };
    expect(records.map((r) => r.replay).sort()).toEqual([false, false, true, true, true, true]);
  });

  it('list marks each replay in its status cell', async () => {
    const r = await cli('list');
    expect(r.code).toBe(0);
    const rows = r.stdout.trimEnd().split('\n').slice(2);
    expect(rows).toHaveLength(6);
    expect(rows.filter((l) => /\(replay\)/.test(l))).toHaveLength(4);
    expect(rows.filter((l) => /\bok \(replay\)/.test(l))).toHaveLength(3);
    expect(rows.filter((l) => /\berror \(replay\)\s+no-target\/no-such-dir/.test(l))).toHaveLength(1);
  });

  it('stats counts executions as calls and replays apart (text and json)', async () => {
    const r = await cli('stats');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^tool\s+calls\s+replays\s+paused\s+errors\s+error rate\s/);
    expect(lines.find((l) => l.startsWith('write_note'))).toMatch(/^write_note\s+2\s+4\s+0\s+1\s+50\.0%/);
    expect(lines.at(-1)).toMatch(/^\(all\)\s+2\s+4\s+0\s+1\s+50\.0%/);
    expect(lines.find((l) => l.startsWith('write_note'))).toContain('no-target 1 (50.0%)');
    const [json] = JSON.parse((await cli('stats', '--format', 'json')).stdout) as {
      count: number;
      replays: number;
      errors: number;
      errorRate: number;
      byStatus: Record<string, number>;
    }[];
    expect(json).toMatchObject({ count: 2, replays: 4, errors: 1, errorRate: 0.5, byStatus: { ok: 1, error: 1 } });
  });

  it('a window holding only replays shows the tool with 0 calls', async () => {
    const [json] = JSON.parse((await cli('stats', '--format', 'json', '--since', String(replaysFrom))).stdout) as { count: number; replays: number }[];
    expect(json).toMatchObject({ count: 0, replays: 3 });
    expect((await cli('stats', '--since', String(replaysFrom))).stdout).toMatch(/^write_note\s+0\s+3\s+0\s+0\s+0\.0%/m);
  });
});
