import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as audit from '../cli/audit.js';
import { runVerb } from '../cli/test-support/run-verb.js';
import { createMemoryStore } from '../store/memory.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { AuditRecord } from '../store/types.js';
import { LATENCY_BINS_MS, boundedJson, collectReportData, latencyBin, renderHtmlReport } from './index.js';
import { describeNeeding } from '../../test/prereqs.js';
import { loadPage } from './test-support/chromium.js';
import { syntheticRecords } from './test-support/records.js';

const dir = mkdtempSync(join(tmpdir(), 'te-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('report data', () => {
  it('bins latencies by upper bound', () => {
    expect(latencyBin(0)).toBe(0);
    expect(latencyBin(1)).toBe(0);
    expect(latencyBin(1.5)).toBe(1);
    expect(latencyBin(10)).toBe(3);
    expect(latencyBin(60_000)).toBe(LATENCY_BINS_MS.length - 1);
    expect(latencyBin(60_001)).toBe(LATENCY_BINS_MS.length);
  });

  it('aggregates every record once: histograms, timeline, slowest, failing', async () => {
    const store = createMemoryStore();
    const records = [...syntheticRecords(2000, { seed: 7 })];
    await store.appendAudit(records);
    const data = await collectReportData(store, {}, { slowest: 5, failing: 7 });
    // Pauses are records but not calls (record-kind.ts): counted apart, in no histogram.
    const calls = records.filter((r) => r.status !== 'paused');
    expect(calls.length).toBeLessThan(2000);
    expect(data.total).toBe(calls.length);
    expect(data.paused).toBe(2000 - calls.length);
    expect(data.replays).toBe(0);
    const histTotal = data.tools.reduce((n, t) => n + t.histogram.reduce((a, b) => a + b, 0), 0);
    expect(histTotal).toBe(calls.length);
    const timelineTotal = data.timeline.reduce((n, b) => n + Object.values(b.byStatus).reduce((a, c) => a + (c ?? 0), 0), 0);
    expect(timelineTotal).toBe(2000);
    const failures = records.filter((r) => !['ok', 'completed', 'paused'].includes(r.status));
    expect(data.failingTotal).toBe(failures.length);
    expect(data.failing.map((c) => c.id)).toEqual(
      failures
        .slice(-7)
        .reverse()
        .map((r) => r.id),
    );
    const byLatency = [...calls].sort((a, b) => b.latencyMs - a.latencyMs);
    expect(data.slowest.map((c) => c.latencyMs)).toEqual(byLatency.slice(0, 5).map((r) => r.latencyMs));
    expect(data.range).toEqual({ from: records[0]!.startedAt, to: records.at(-1)!.startedAt });
    // Filters reach the store: only one tool's calls.
    const one = await collectReportData(store, { tool: 'fs_write' });
    expect(one.total).toBe(calls.filter((r) => r.tool === 'fs_write').length);
    expect(one.tools.map((t) => t.tool)).toEqual(['fs_write']);
  });

  it('cuts huge envelopes on a character boundary and says so', () => {
    const text = boundedJson({ s: 'é'.repeat(10_000) }, 101);
    expect(Buffer.byteLength(text.split('\n…')[0]!)).toBeLessThanOrEqual(101);
    expect(text).toMatch(/cut: \d+ bytes in all/);
    expect(text).not.toContain('\uFFFD');
  });

  it('renders an empty log without charts or errors', async () => {
    const html = renderHtmlReport(await collectReportData(createMemoryStore()));
    expect(html).toContain('No calls.');
    expect(html).not.toContain('<rect class="bar"');
  });

  it('escapes hostile tool names and envelope text', async () => {
    const store = createMemoryStore();
    const [r] = [...syntheticRecords(1)];
    const evil = '<script>alert(1)</script>';
    const hostile: AuditRecord = {
      ...r!,
      tool: evil,
      status: 'error',
      category: 'internal',
      errorCode: '"><img src=x onerror=alert(1)>',
      resultEnvelope: { error: '</pre><script>alert(2)</script>' },
    };
    await store.appendAudit([hostile]);
    const html = renderHtmlReport(await collectReportData(store));
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });
});

describeNeeding('chromium', 'HTML report of 100 000 calls in headless Chromium', () => {
  const dbPath = join(dir, 'big.db');
  const htmlPath = join(dir, 'report.html');
  let records: AuditRecord[] = [];

  beforeAll(async () => {
    const store = await openSqliteStore({ path: dbPath });
    records = [];
    let batch: AuditRecord[] = [];
    for (const r of syntheticRecords(100_000, { seed: 1 })) {
      records.push({ ...r, callEnvelope: {}, resultEnvelope: {}, outcome: {} });
      batch.push(r);
      if (batch.length === 5000) {
        await store.appendAudit(batch);
        batch = [];
      }
    }
    await store.close();
  }, 180_000);

  afterAll(() => {
    records = [];
  });

  it('writes one page under 5 MB that renders every chart, with no network request', async () => {
    const run = await runVerb(audit, ['report', '--html', htmlPath, '--store', dbPath, '--title', 'Synthetic load']);
    // Pauses are records but not calls (record-kind.ts).
    const calls = records.filter((r) => r.status !== 'paused').length;
    expect(calls).toBeLessThan(100_000);
    // Not a terminal: no progress, only the one closing line.
    expect(run.stderr).toMatch(new RegExp(`^report of ${calls} calls written to .*report\\.html \\(\\d+ kB\\)\\n$`));
    expect(run.code).toBe(0);
    const size = statSync(htmlPath).size;
    expect(size).toBeLessThan(5 * 1024 * 1024);

    const byStatus: Record<string, number> = {};
    const byCategory: Record<string, number> = {};
    const byTool: Record<string, number> = {};
    for (const r of records) {
      byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
      if (r.category && !['ok', 'completed', 'paused'].includes(r.status)) byCategory[r.category] = (byCategory[r.category] ?? 0) + 1;
      // A tool's histogram holds its calls.
      if (r.status !== 'paused') byTool[r.tool] = (byTool[r.tool] ?? 0) + 1;
    }

    const page = await loadPage(htmlPath);
    try {
      const probe = await page.evaluate<{
        charts: number;
        charts0: number;
        outcomes: Record<string, { n: number; visible: number; count: number }>;
        categories: Record<string, number>;
        histograms: { title: string; count: number; bars: number; visible: number }[];
        total: string;
        slowRows: number;
        failRows: number;
        envelopeOpens: boolean;
      }>(`(() => {
        const visible = (el) => { const b = el.getBoundingClientRect(); return b.width > 0 && b.height > 0; };
        const charts = [...document.querySelectorAll('svg.chart')];
        const outcomes = {};
        for (const r of document.querySelectorAll('#outcomes-chart rect.bar')) {
          const s = r.dataset.series; outcomes[s] ??= { n: 0, visible: 0, count: 0 };
          outcomes[s].n++; outcomes[s].count += Number(r.dataset.count); if (visible(r)) outcomes[s].visible++;
        }
        const categories = {};
        for (const r of document.querySelectorAll('#categories-chart rect.bar')) if (visible(r)) categories[r.dataset.series] = (categories[r.dataset.series] ?? 0) + Number(r.dataset.count);
        const histograms = [...document.querySelectorAll('#latency-charts svg')].map((svg) => {
          const bars = [...svg.querySelectorAll('rect.bar')];
          return { title: svg.getAttribute('aria-label'), count: bars.reduce((n, b) => n + Number(b.dataset.count), 0), bars: bars.length, visible: bars.filter(visible).length };
        });
        const d = document.querySelector('#failing-table details'); d.open = true;
        const pre = d.querySelector('pre');
        return {
          charts: charts.length, charts0: charts.filter((c) => !visible(c)).length, outcomes, categories, histograms,
          total: document.getElementById('total-calls').textContent,
          slowRows: document.querySelectorAll('#slowest-table tr.call-row').length,
          failRows: document.querySelectorAll('#failing-table tr.call-row').length,
          envelopeOpens: visible(pre) && pre.textContent.includes('contextos.tool_call.v1'),
        };
      })()`);
      expect(page.errors).toEqual([]);
      expect(page.requests.length).toBe(1);
      expect(page.requests[0]).toMatch(/^file:/);
      expect(probe.total).toBe(String(calls));
      const tools = Object.keys(byTool).length;
      expect(probe.charts).toBe(2 + tools);
      expect(probe.charts0).toBe(0);
      for (const [status, n] of Object.entries(byStatus)) {
        expect(probe.outcomes[status]?.count).toBe(n);
        expect(probe.outcomes[status]?.visible).toBe(probe.outcomes[status]?.n);
      }
      expect(probe.categories).toEqual(byCategory);
      expect(probe.histograms).toHaveLength(tools);
      for (const h of probe.histograms) {
        const tool = h.title.split(' ')[0]!;
        expect(h.count).toBe(byTool[tool]);
        expect(h.visible).toBe(h.bars);
        expect(h.bars).toBeGreaterThan(3);
      }
      expect(probe.slowRows).toBe(20);
      expect(probe.failRows).toBe(50);
      expect(probe.envelopeOpens).toBe(true);
      const png = await page.screenshot();
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      if (process.env.TE_REPORT_SCREENSHOT) writeFileSync(process.env.TE_REPORT_SCREENSHOT, png);
    } finally {
      await page.close();
    }
    // The page is self-contained: nothing but data: URIs and the SVG namespace appear as URLs.
    const html = await readFile(htmlPath, 'utf8');
    expect(html.match(/https?:\/\/[^"' )]+/g)?.filter((u) => u !== 'http://www.w3.org/2000/svg') ?? []).toEqual([]);
  }, 180_000);

  it('export and report show progress on a terminal', async () => {
    const out = join(dir, 'fs_write.ndjson');
    const exported = await runVerb(audit, ['export', '--store', dbPath, '--tool', 'fs_write', '--out', out], { stderrIsTTY: true });
    expect(exported.code).toBe(0);
    const n = records.filter((r) => r.tool === 'fs_write').length;
    expect(exported.stderr).toMatch(/^(\r\x1b\[2Kexport: \d+ documents, \d+ documents\/s)+\r\x1b\[2K/);
    expect(exported.stderr.endsWith(`\r\x1b[2K${n} records written to ${out}\n`)).toBe(true);
    expect(readFileSync(out, 'utf8').split('\n')).toHaveLength(n + 1);
    const reported = await runVerb(audit, ['report', '--html', join(dir, 'tty.html'), '--store', dbPath, '--tool', 'fs_read'], { stderrIsTTY: true });
    expect(reported.stderr).toMatch(/^(\r\x1b\[2Kreport: \d+ documents, \d+ documents\/s)+\r\x1b\[2Kreport of \d+ calls/);
  }, 180_000);
});
