/**
 * The HTML report counts as `audit stats` does (record-kind.ts): an idempotent replay and a pause
 * are records but not calls, shown apart, on a real SQLite file through the CLI of both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as audit from '../cli/audit.js';
import { runVerb } from '../cli/test-support/run-verb.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { makeAudit } from '../store/test-support/store-suite.js';

const dir = mkdtempSync(path.join(tmpdir(), 'te-report-kinds-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The numeric cells of a tool's row in the tools table, by column name. */
function toolRow(html: string, tool: string): Record<string, string> {
  const head = /<table id="tools-table"><thead><tr>(.*?)<\/tr><\/thead>/.exec(html)?.[1] ?? '';
  const names = [...head.matchAll(/<th>(.*?)<\/th>/g)].map((m) => m[1]!);
  const row = new RegExp(`<tr class="tool-row" data-tool="${tool}">(.*?)</tr>`).exec(html)?.[1] ?? '';
  const cells = [...row.matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((m) => m[1]!);
  return Object.fromEntries(names.map((n, i) => [n, cells[i] ?? '']));
}

describe('replays and pauses in the HTML report', () => {
  it('counts one call per execution, its replay and its pause apart, as audit stats does', async () => {
    const file = path.join(dir, 'calls.db');
    const store = await openSqliteStore({ path: file });
    const t0 = 1_800_000_000_000;
    // write_note ran once (key k1) and its stored outcome was returned again for the same key.
    const ran = makeAudit({ tool: 'write_note', status: 'completed', idempotencyKey: 'k1', startedAt: t0, latencyMs: 12 });
    const replay = makeAudit({ tool: 'write_note', status: 'completed', idempotencyKey: 'k1', replay: true, startedAt: t0 + 10, latencyMs: 1 });
    // delete_note paused for an approver, then ran once approved: one call, one pause.
    const pause = makeAudit({
      tool: 'delete_note',
      status: 'paused',
      category: 'elevation',
      errorCode: 'approval-required',
      approvalId: 'apr_1',
      startedAt: t0 + 20,
    });
    const approved = makeAudit({ tool: 'delete_note', status: 'completed', approvalId: 'apr_1', startedAt: t0 + 30, latencyMs: 40 });
    await store.appendAudit([ran, replay, pause, approved]);
    await store.close();

    const html = path.join(dir, 'report.html');
    const run = await runVerb(audit, ['report', '--html', html, '--store', file]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/^report of 2 calls written to /);
    const page = await readFile(html, 'utf8');
    expect(toolRow(page, 'write_note')).toMatchObject({ calls: '1', replays: '1', paused: '0', 'error rate': '0%' });
    expect(toolRow(page, 'delete_note')).toMatchObject({ calls: '1', replays: '0', paused: '1', 'error rate': '0%' });
    expect(page).toContain('<b id="total-calls">2</b>');
    expect(page).toContain('<b id="replays">1</b>');
    expect(page).toContain('<b id="paused">1</b>');
    expect(page).toContain('<b id="failed-calls">0</b>');

    // The same numbers as audit stats gives for the same file.
    const stats = JSON.parse((await runVerb(audit, ['stats', '--store', file, '--format', 'json'])).stdout) as {
      tool: string;
      count: number;
      replays: number;
      paused: number;
    }[];
    const byTool = Object.fromEntries(stats.map((t) => [t.tool, [t.count, t.replays, t.paused]]));
    expect(byTool).toEqual({ write_note: [1, 1, 0], delete_note: [1, 0, 1] });
  });
});
