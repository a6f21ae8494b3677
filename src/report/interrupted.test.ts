/**
 * A call whose process died while it executed (a started record nothing completed): the failure
 * summary names it, the HTML report counts it, `audit stats` and `audit list --status interrupted`
 * show it, on a real SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as audit from '../cli/audit.js';
import { runVerb } from '../cli/test-support/run-verb.js';
import { startedAuditRecord } from '../store/started-record.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { makeAudit } from '../store/test-support/store-suite.js';
import { buildFailureSummary } from './failure-summary.js';
import { collectReportData, renderHtmlReport } from './index.js';

describe('interrupted calls in reports', () => {
  it('are named by the failure summary and counted by the report, stats and list', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'te-interrupted-'));
    try {
      const file = path.join(dir, 'calls.db');
      const store = await openSqliteStore({ path: file });
      const ok = makeAudit({ tool: 'notes.read', sessionId: 'sess-crash', startedAt: 1_800_000_000_000 });
      const cut = startedAuditRecord({ ...makeAudit({ tool: 'repo.delete', sessionId: 'sess-crash', startedAt: 1_800_000_000_100 }) });
      await store.appendAudit([ok, cut]);
      const summary = await buildFailureSummary(store, 'sess-crash');
      expect(summary?.failing.id).toBe(cut.id);
      expect(summary?.failing.status).toBe('interrupted');
      expect(summary?.markdown).toContain('interrupted');
      expect(summary?.markdown).toContain('repo.delete');
      const data = await collectReportData(store, {});
      expect(data.byStatus).toEqual({ ok: 1, interrupted: 1 });
      expect(renderHtmlReport(data)).toContain('interrupted');
      await store.close();
      const list = await runVerb(audit, ['list', '--store', file, '--status', 'interrupted', '--format', 'json']);
      expect(list.code).toBe(0);
      expect((JSON.parse(list.stdout) as { records: { id: string }[] }).records.map((r) => r.id)).toEqual([cut.id]);
      const stats = await runVerb(audit, ['stats', '--store', file, '--format', 'json']);
      expect(stats.stdout).toContain('"interrupted": 1');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
