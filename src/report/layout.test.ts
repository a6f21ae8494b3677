// The HTML report's layout in headless Chromium: from 800 to 1600 px wide the page never scrolls
// sideways, and the time charts fill their panels.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as audit from '../cli/audit.js';
import { runVerb } from '../cli/test-support/run-verb.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { AuditRecord } from '../store/types.js';
import { describeNeeding } from '../../test/prereqs.js';
import { loadPage } from './test-support/chromium.js';
import { syntheticRecords } from './test-support/records.js';

const dir = mkdtempSync(join(tmpdir(), 'te-layout-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Probe {
  scrollWidth: number;
  clientWidth: number;
  charts: { id: string; svg: number; inner: number }[];
}

const PROBE = `(() => {
  const doc = document.documentElement;
  const charts = [];
  for (const panel of document.querySelectorAll('#outcomes-chart, #categories-chart')) {
    const cs = getComputedStyle(panel);
    const inner = panel.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    charts.push({ id: panel.id, svg: panel.querySelector('svg').getBoundingClientRect().width, inner });
  }
  return { scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, charts };
})()`;

describeNeeding('chromium', 'HTML report layout in headless Chromium', () => {
  const html = join(dir, 'report.html');
  beforeAll(async () => {
    const dbPath = join(dir, 'calls.db');
    const store = await openSqliteStore({ path: dbPath });
    const records: AuditRecord[] = [...syntheticRecords(3_000, { seed: 7 })];
    await store.appendAudit(records);
    await store.close();
    const r = await runVerb(audit, ['report', '--html', html, '--store', dbPath]);
    expect(r.code, r.stderr).toBe(0);
  }, 120_000);

  it.each([800, 1400, 1600])(
    'at %i px: no horizontal scroll, and the time charts fill their panels',
    async (width) => {
      const page = await loadPage(html, { width, height: 900 });
      try {
        const probe = await page.evaluate<Probe>(PROBE);
        expect(probe.scrollWidth, JSON.stringify(probe)).toBeLessThanOrEqual(probe.clientWidth);
        expect(probe.charts.map((c) => c.id).sort()).toEqual(['categories-chart', 'outcomes-chart']);
        for (const c of probe.charts) {
          expect(c.svg, `${c.id} at ${width}px`).toBeGreaterThanOrEqual(c.inner * 0.98);
          expect(c.svg, `${c.id} at ${width}px`).toBeLessThanOrEqual(c.inner + 1);
        }
      } finally {
        await page.close();
      }
    },
    60_000,
  );
});
