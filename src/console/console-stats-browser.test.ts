// The audit log's stats, verify and export links in a real browser (Debian's Chromium driven by
// playwright-core), over a real SQLite store: the charts are drawn under the strict CSP (no
// violation reported), hostile tool names stay text (no script runs, no dialog), the verify button
// is a POST with the page's CSRF token that ends in the per-writer result. Screenshots of the stats
// page at 1400 and 800 px for docs/console.md when CONSOLE_SCREENSHOTS=1.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locate, missingMessage, prereq } from '../../scripts/test-prereqs.mjs';
import { isAuthFailure, tokenAuthenticator, tokenDigest } from '../mcp/serve/auth.js';
import { repoRoot } from '../mcp/test-support/harness.js';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { makeApproval, makeAudit } from '../store/test-support/store-suite.js';
import type { AuditRecord, Store } from '../store/types.js';
import { serveConsole, type ServedConsole } from './test-support/http-client.js';

const dir = mkdtempSync(join(tmpdir(), 'te-console-stats-'));
const key = operatorKeyFromSecret('9a'.repeat(32));
const shots = process.env.CONSOLE_SCREENSHOTS === '1' ? join(repoRoot, 'docs') : undefined;
const HOSTILE = `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>`;
const TOOLS = ['orders.create', 'orders.refund', 'inventory.read', 'mail.send', 'warehouse_purge', HOSTILE];
const CATEGORIES = ['timeout', 'internal', 'invalid-argument', 'no-target'] as const;

let store: Store;
let served: ServedConsole;
let browser: Browser;

beforeAll(async () => {
  store = await openSqliteStore({ path: join(dir, 'calls.db'), chainKey: key });
  const now = Date.now();
  const records: AuditRecord[] = [];
  // Two hours of calls: a steady load with a burst of timeouts in the middle, as a dashboard sees.
  for (let i = 0; i < 3000; i++) {
    const at = now - 7_000_000 + i * 2300;
    const burst = i > 1400 && i < 1700;
    const fail = burst ? i % 3 === 0 : i % 17 === 0;
    const tool = TOOLS[(i * 7) % TOOLS.length]!;
    records.push(
      makeAudit({
        tool,
        status: fail ? 'error' : 'ok',
        category: fail ? (burst ? 'timeout' : CATEGORIES[i % 4]!) : null,
        errorCode: fail ? 'failed' : null,
        startedAt: at,
        latencyMs: (tool.length * 3 + ((i * 37) % 90)) * (tool === 'mail.send' ? 4 : 1) + (burst ? 400 : 0),
        principalChain: [{ kind: 'user', id: 'ops', tenant_id: 'acme' }],
      }),
    );
  }
  await store.appendAudit(records);
  const auth = tokenAuthenticator({ tokens: [{ sha256: tokenDigest('admin-any'), principal: 'user:ada', roles: ['admin'] }] });
  served = await serveConsole({
    store,
    operatorKey: async () => key,
    verifyToken: async (t) => {
      const who = await auth.authenticate(`Bearer ${t}`);
      return isAuthFailure(who) ? undefined : who;
    },
  });
  const executablePath = locate(prereq('chromium'));
  if (!executablePath) throw new Error(missingMessage(prereq('chromium')));
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A signed-in admin page that records CSP violations and dialogs. */
async function admin(width: number): Promise<{ page: Page; violations: string[]; dialogs: string[] }> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  const violations: string[] = [];
  const dialogs: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto(`${served.url}/sign-in`);
  await page.fill('#token', 'admin-any');
  await Promise.all([page.waitForURL(/\/console\/inbox/), page.click('button[type=submit]')]);
  return { page, violations, dialogs };
}

describe('the audit stats in Chromium', () => {
  it('draws the charts under the strict CSP, hostile tool names inert; screenshots at 1400 and 800 px', async () => {
    for (const width of [1400, 800]) {
      const { page, violations, dialogs } = await admin(width);
      await page.goto(`${served.url}/audit`);
      await Promise.all([page.waitForURL(/\/console\/stats/), page.click('#stats')]);
      await page.fill('input[name=since]', '2h');
      await Promise.all([page.waitForLoadState('load'), page.click('form.filters button[type=submit]')]);
      expect(await page.locator('figure.chart > svg').count()).toBe(3);
      expect(await page.locator('figure.chart > svg rect').count()).toBeGreaterThan(100);
      // The hostile name is shown as text, in the latency chart and the table.
      expect(await page.locator('table.stats td', { hasText: HOSTILE }).count()).toBe(1);
      expect(await page.locator('figure.chart text', { hasText: '<img src=x' }).count()).toBeGreaterThan(0);
      expect(await page.locator('img').count()).toBe(0);
      expect(await page.evaluate('window.pwned')).toBeUndefined();
      expect(dialogs).toEqual([]);
      expect(violations).toEqual([]);
      // The chart is as wide as the page allows, within the window.
      const box = (await page.locator('figure.chart > svg').first().boundingBox())!;
      expect(box.width).toBeGreaterThan(width * 0.8);
      expect(box.x + box.width).toBeLessThanOrEqual(width);
      // Every header is whole (no ellipsis), "failure rate" at 800 px too.
      const clipped = await page.$$eval('table.stats th', (ths) => ths.filter((th) => th.scrollWidth > th.clientWidth).map((th) => th.textContent));
      expect(clipped).toEqual([]);
      if (shots) await page.screenshot({ path: join(shots, `console-stats-${width}.png`), fullPage: true });
      await page.context().close();
    }
  });

  it('an inbox card cuts a 3,005-character tool name at 200 with a note, as the audit list and stats do', async () => {
    const tool = `very_long_tool_${'x'.repeat(2990)}`;
    expect(tool.length).toBe(3005);
    await store.createApproval(
      makeApproval({ id: 'apr_long_name', tool, principalChain: [{ kind: 'user', id: 'ops', tenant_id: 'acme' }], createdAt: Date.now() }),
    );
    const { page, violations } = await admin(800);
    await page.goto(`${served.url}/inbox`);
    const title = page.locator('[data-approval="apr_long_name"] h2');
    expect(await title.textContent()).toBe(`${tool.slice(0, 200)} … (2805 more characters not shown)`);
    // A few lines at 800 px, not about 55.
    expect((await title.boundingBox())!.height).toBeLessThan(120);
    expect(violations).toEqual([]);
    await page.context().close();
  });

  it('verify: the button posts with the CSRF token and ends with the result per writer', async () => {
    const { page, violations } = await admin(1400);
    await page.goto(`${served.url}/audit`);
    await Promise.all([page.waitForURL(/\/console\/verify/), page.click('#verify')]);
    await page.click('button[type=submit]:has-text("Verify the log now")');
    await page.waitForSelector('#verify-result', { timeout: 20_000 });
    expect(await page.textContent('#verify-result')).toMatch(/^ok: 3000 records verified \(1 writers\)/);
    expect(await page.locator('table.writers tr.good').count()).toBe(1);
    expect(violations).toEqual([]);
    await page.context().close();
  });
});
