// The console's live views in real Chromium, in front of two real gateway processes ('gateway
// --http 0 --console') over one PostgreSQL store (a database of their own on the test server), each
// in front of counting-server.mjs, with real SDK clients: a call made through replica A shows on
// replica B's live page within a second (the store is the source, woken by NOTIFY), filters apply,
// another tenant's calls never reach an approver's page, and the inbox follows another approver's
// decision made in another browser context, without a reload.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describePg } from '../store/test-support/pg.js';
import { repoRoot } from '../mcp/test-support/harness.js';
import { agentOf, type ConsoleGateway, launchChromium, signedInPage, startConsoleGateway, writeTokensFile } from './test-support/console-gateway.js';

const TOKENS = {
  'agent-acme': { principal: 'user:ops', tenant: 'acme', roles: [] },
  'agent-globex': { principal: 'user:gus', tenant: 'globex', roles: [] },
  'approver-acme': { principal: 'user:rita', tenant: 'acme', roles: ['approver'] },
  'approver2-acme': { principal: 'user:sam', tenant: 'acme', roles: ['approver'] },
  'admin-any': { principal: 'user:ada', roles: ['admin'] },
  // YAML's double-quoted \u202e: a bidi override in the principal's id.
  'agent-hostile': { principal: 'user:<img src=x onerror=window.pwned=1>\\u202eevil', tenant: 'acme', roles: [] },
};
// Screenshots for docs/console.md: written when asked (CONSOLE_SCREENSHOTS=1), so a test run leaves the tree alone.
const shots = process.env.CONSOLE_SCREENSHOTS === '1' ? join(repoRoot, 'docs') : undefined;

describePg('the live views in Chromium, two gateways on one PostgreSQL store', (url) => {
  const dir = mkdtempSync(join(tmpdir(), 'te-console-live-'));
  const database = `te_live_${randomBytes(5).toString('hex')}`;
  let a: ConsoleGateway;
  let b: ConsoleGateway;
  let browser: Browser;
  const clients: Client[] = [];
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    await admin(`CREATE DATABASE ${database}`);
    const store = url.replace(/\/[^/]*$/, `/${database}`);
    const tokensFile = join(dir, 'tokens.yaml');
    writeTokensFile(tokensFile, TOKENS);
    // One after the other: both would run the migrations, which serialise anyway.
    a = await startConsoleGateway({ store, tokensFile, home: dir, env: { COUNT_FILE: join(dir, 'ran-a.ndjson') } });
    b = await startConsoleGateway({ store, tokensFile, home: dir, env: { COUNT_FILE: join(dir, 'ran-b.ndjson') } });
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await browser?.close();
    await a?.stop();
    await b?.stop();
    await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    rmSync(dir, { recursive: true, force: true });
  });

  async function agent(gateway: ConsoleGateway, token: string): Promise<Client> {
    const c = await agentOf(gateway.mcpUrl, token);
    clients.push(c);
    return c;
  }

  async function livePage(gateway: ConsoleGateway, token: string, query = '', width = 1400): Promise<Page> {
    const page = await signedInPage(browser, gateway.consoleUrl, token, width);
    await page.goto(`${gateway.consoleUrl}live${query}`);
    await expect.poll(() => page.locator('#live-state').textContent(), { timeout: 10_000 }).toBe('Live');
    return page;
  }

  const rows = (page: Page) => page.locator('#live tbody tr');
  const rowOf = (page: Page, text: string) => page.locator('#live tbody tr', { hasText: text });

  it('a call through replica A shows on replica B’s live page within a second, as it starts and as it ends', async () => {
    const page = await livePage(b, 'admin-any');
    const client = await agent(a, 'agent-acme');
    await client.callTool({ name: 'write_note', arguments: { text: 'from replica A' } });
    const t0 = Date.now();
    await rowOf(page, 'write_note').filter({ hasText: 'end' }).first().waitFor({ timeout: 1_000 });
    const shownAfterMs = Date.now() - t0;
    expect(shownAfterMs).toBeLessThan(1_000);
    expect(await rowOf(page, 'write_note').filter({ hasText: 'start' }).count()).toBe(1);
    const end = rowOf(page, 'write_note').filter({ hasText: 'end' }).first();
    expect(await end.textContent()).toContain('user:ops');
    expect(await end.textContent()).toMatch(/\d+(\.\d+)? ms/);
    await page.context().close();
  }, 60_000);

  it('filters apply; another tenant’s calls never reach an approver’s page; hostile names stay text', async () => {
    const rita = await livePage(b, 'approver-acme');
    const onlyWrites = await livePage(b, 'admin-any', '?tool=write_note&status=ok');
    const ops = await agent(a, 'agent-acme');
    const gus = await agent(a, 'agent-globex');
    await gus.callTool({ name: 'write_note', arguments: { text: 'globex secret' } });
    await gus.callTool({ name: 'read_notes', arguments: {} });
    await ops.callTool({ name: 'read_notes', arguments: {} });
    await (await agent(a, 'agent-hostile')).callTool({ name: 'read_notes', arguments: {} });
    await ops.callTool({ name: 'write_note', arguments: { text: 'acme last' } });
    // The acme calls came after globex's: once the last one shows, globex's would have.
    await rowOf(rita, 'write_note').filter({ hasText: 'end' }).first().waitFor({ timeout: 10_000 });
    expect(await rows(rita).allTextContents()).not.toEqual(expect.arrayContaining([expect.stringContaining('user:gus')]));
    expect(await rowOf(rita, 'read_notes').count()).toBe(4);
    // The hostile principal is text, its bidi override a visible mark.
    expect(await rowOf(rita, 'user:<img src=x onerror=window.pwned=1>\\u{202e}evil').count()).toBe(2);
    expect(await rita.evaluate('window.pwned')).toBeUndefined();
    expect(await rita.locator('#live img').count()).toBe(0);

    await expect.poll(() => rows(onlyWrites).count(), { timeout: 10_000 }).toBe(2);
    const texts = await rows(onlyWrites).allTextContents();
    expect(texts.every((t) => t.includes('write_note') && t.includes('ok') && t.includes('end'))).toBe(true);
    expect(texts.some((t) => t.includes('user:gus')) && texts.some((t) => t.includes('user:ops'))).toBe(true);
    if (shots) {
      await rita.screenshot({ path: join(shots, 'console-live-1400.png') });
      await rita.setViewportSize({ width: 800, height: 900 });
      await rita.screenshot({ path: join(shots, 'console-live-800.png') });
    }
    await rita.context().close();
    await onlyWrites.context().close();
  }, 60_000);

  it('the inbox follows another approver’s decision made on the other replica, without a reload; a stale decision is refused', async () => {
    const ops = await agent(a, 'agent-acme');
    const paused = (await ops.callTool({
      name: 'delete_item',
      arguments: { id: 'live-item' },
      _meta: { 'tool-envelope/idempotency-key': 'live-item' },
    })) as CallToolResult;
    expect(paused.structuredContent).toMatchObject({ ok: false, error: { category: 'elevation' } });
    const sam = await signedInPage(browser, b.consoleUrl, 'approver2-acme');
    const rita = await signedInPage(browser, a.consoleUrl, 'approver-acme');
    const samCard = sam.locator('section.card[data-approval]', { hasText: 'live-item' });
    await expect.poll(() => samCard.count()).toBe(1);
    await sam.evaluate('window.sameDocument = 1');

    const ritaCard = rita.locator('section.card[data-approval]', { hasText: 'live-item' });
    await ritaCard.locator('input[name=reason]').fill('ticket OPS-7');
    await Promise.all([rita.waitForURL(/done=approved/), ritaCard.locator('button.approve').click()]);

    // Sam's page, never reloaded, says who decided; its buttons are off.
    await expect.poll(() => samCard.locator('p.live-state').textContent(), { timeout: 10_000 }).toMatch(/^Approved by user:rita \(ticket OPS-7\)/);
    expect(await sam.evaluate('window.sameDocument')).toBe(1);
    expect(await samCard.locator('button.approve').isDisabled()).toBe(true);
    // The gateways run it once; the card then says so.
    await expect.poll(() => samCard.locator('p.live-state').textContent(), { timeout: 20_000 }).toBe('Approved by user:rita (ticket OPS-7) and run.');
    // The server still refuses the stale decision.
    const id = await samCard.getAttribute('data-approval');
    const csrf = await sam.locator('input[name=csrf]').first().getAttribute('value');
    const status = await sam.evaluate(
      async ([path, body]) => (await fetch(path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body })).status,
      [`/console/approvals/${id}/decide`, `csrf=${encodeURIComponent(csrf!)}&decision=approve`] as const,
    );
    expect(status).toBe(409);
    await sam.context().close();
    await rita.context().close();
  }, 90_000);
});
