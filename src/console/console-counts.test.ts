// The console counts calls as `audit stats` and `audit failure-summary` do, over one real SQLite
// store read by both (the CLI's own functions, report/stats-counts.ts and report/failure-summary.ts):
// a paused call is waiting, not failed, and an approved call counts once; a replay is not a call.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFailureSummary } from '../report/failure-summary.js';
import { isFailureStatus } from '../report/record-kind.js';
import { statsCounts } from '../report/stats-counts.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { makeAudit } from '../store/test-support/store-suite.js';
import type { AuditRecord, AuditStatus, Store } from '../store/types.js';
import { Agent, serveConsole, type ServedConsole } from './test-support/http-client.js';
import { tokenVerifier } from './test-support/token-verifier.js';

const dir = mkdtempSync(join(tmpdir(), 'te-console-counts-'));
let store: Store;
let served: ServedConsole;
let ada: Agent;
const now = Date.now();
const since = now - 3_600_000;

/** A record of session `session`, `ago` ms ago. */
const rec = (session: string, ago: number, over: Partial<AuditRecord>): AuditRecord =>
  makeAudit({ sessionId: session, startedAt: now - ago, endedAt: now - ago + 5, latencyMs: 5, ...over });

beforeAll(async () => {
  store = await openSqliteStore({ path: join(dir, 'calls.db') });
  const records: AuditRecord[] = [
    // Session "approved": delete_item paused for an approver (its pause record carries a category), then approved and run.
    rec('approved', 600_000, {
      tool: 'delete_item',
      toolCallId: 'c-del',
      status: 'paused',
      category: 'elevation',
      errorCode: 'approval-required',
      approvalId: 'apr_1',
    }),
    rec('approved', 500_000, { tool: 'delete_item', toolCallId: 'c-del', status: 'ok', approvalId: 'apr_1' }),
    // Session "mixed": calls that succeed, fail, time out, never end; a replay of a stored failure; a pause not decided yet.
    rec('mixed', 400_000, { tool: 'read_notes', status: 'ok' }),
    rec('mixed', 390_000, { tool: 'read_notes', status: 'error', category: 'timeout', errorCode: 'upstream-timeout' }),
    rec('mixed', 380_000, { tool: 'read_notes', status: 'error', category: 'timeout', errorCode: 'upstream-timeout', replay: true, idempotencyKey: 'k1' }),
    rec('mixed', 370_000, { tool: 'write_note', status: 'rejected', category: 'elevation', errorCode: 'approval-rejected' }),
    rec('mixed', 360_000, { tool: 'write_note', status: 'started', category: null, outcome: { status: 'started' } as never }),
    rec('mixed', 350_000, { tool: 'write_note', status: 'paused', category: 'elevation', errorCode: 'approval-required' }),
    rec('mixed', 340_000, { tool: 'write_note', status: 'ok' }),
  ];
  await store.appendAudit(records);
  served = await serveConsole({ store, verifyToken: tokenVerifier([{ token: 'admin-any', principal: 'user:ada', roles: ['admin'] }]) });
  ada = new Agent(served.url);
  expect((await ada.signIn('admin-any')).status).toBe(303);
});

afterAll(async () => {
  await served?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const errorsOf = (byStatus: Partial<Record<AuditStatus, number>>): number =>
  Object.entries(byStatus).reduce((n, [s, c]) => n + (isFailureStatus(s as AuditStatus) ? (c ?? 0) : 0), 0);

/** The stats table's rows: tool → [calls, failed, failure rate]. */
function tableOf(html: string): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const m of html.matchAll(/<tr><td title="([^"]*)">.*?<\/td><td>(\d+)<\/td><td>(\d+)<\/td><td>([\d.]+) %<\/td>/g)) rows.set(m[1]!, [m[2]!, m[3]!, m[4]!]);
  return rows;
}

describe('the console counts as audit stats and audit failure-summary do', () => {
  it('stats: calls, failures and failure rates per tool equal the CLI’s over the same store; pauses and replays apart', async () => {
    const page = await ada.request(`/stats?since=${since}&until=${now + 1}`);
    expect(page.status).toBe(200);
    const cli = await statsCounts(store, { since, until: now + 1 });
    const calls = cli.reduce((n, s) => n + s.count, 0);
    const errors = cli.reduce((n, s) => n + errorsOf(s.byStatus), 0);
    const paused = cli.reduce((n, s) => n + s.paused, 0);
    const replays = cli.reduce((n, s) => n + s.replays, 0);
    expect([calls, errors, paused, replays]).toEqual([6, 3, 2, 1]);
    expect(page.body).toContain(`${calls} calls, ${errors} failed;`);
    expect(page.body).toContain(`Not counted as calls: ${paused} paused (waiting for an approver, not failed), ${replays} replays`);
    const table = tableOf(page.body);
    for (const s of cli.filter((t) => t.count > 0)) {
      const e = errorsOf(s.byStatus);
      expect(table.get(s.tool), s.tool).toEqual([String(s.count), String(e), ((100 * e) / s.count).toFixed(1)]);
    }
    // The tester's case: delete_item paused, approved and run is one call that did not fail.
    expect(table.get('delete_item')).toEqual(['1', '0', '0.0']);
  });

  it('failures: a session whose only pause was approved has no failure, as the CLI says; the failures listed are the CLI’s', async () => {
    expect(await buildFailureSummary(store, 'approved')).toBeUndefined();
    const approved = await ada.request('/failures?session=approved');
    expect(approved.status).toBe(200);
    expect(approved.body).toContain('<p class="muted">0 failed calls.');
    expect(approved.body).toContain('No failed call in this session.');
    expect(approved.body).not.toContain('elevation');

    const summary = (await buildFailureSummary(store, 'mixed'))!;
    // error, its replay, rejected and the call that never ended; not the pause.
    expect(summary.markdown).toContain('The session has 4 failing calls');
    const mixed = await ada.request('/failures?session=mixed');
    expect(mixed.body).toContain('<p class="muted">4 failed calls.');
    expect(mixed.body).toMatch(/timeout<\/a>: 2 failed/);
    expect(mixed.body).toMatch(/elevation<\/a>: 1 failed/);
    expect(mixed.body).toContain('(no category): 1 failed');
  });

  it('stats: a range without calls says so; a long window is whole days a column', async () => {
    const empty = await ada.request(`/stats?since=${now - 30 * 86_400_000}&until=${now - 29 * 86_400_000}`);
    expect(empty.status).toBe(200);
    expect(empty.body).toContain('No calls in this range.');
    expect(empty.body).not.toMatch(/0 calls|p50 0\.00/);
    expect((await ada.request('/stats?since=3000d')).body).toContain('one column per 50 d.');
    // 500 days over 60 columns is 8.3 days: 9 whole days, not "12000 min".
    expect((await ada.request('/stats?since=500d')).body).toContain('one column per 9 d.');
  });
});
