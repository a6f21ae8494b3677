// The console in a real browser (Debian's Chromium driven by playwright-core, no browser download)
// in front of a real gateway process ('gateway --http 0 --console --auth tokens FILE') over a real
// upstream (counting-server.mjs, which records every execution) and a real SQLite store; the agent
// is the real SDK client. A destructive call pauses, is approved on the page, and the client's retry
// with its idempotency key gets the completed result with the tool run exactly once.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../mcp/test-support/harness.js';
import { agentOf, type ConsoleGateway, launchChromium, signedInPage, startConsoleGateway, writeTokensFile } from './test-support/console-gateway.js';

const dir = mkdtempSync(join(tmpdir(), 'te-console-browser-'));
const countFile = join(dir, 'ran.ndjson');
const tokensFile = join(dir, 'tokens.yaml');
const TOKENS: Record<string, { principal: string; tenant?: string; roles: string[] }> = {
  'agent-acme': { principal: 'user:ops', tenant: 'acme', roles: [] },
  'agent-globex': { principal: 'user:gus', tenant: 'globex', roles: [] },
  'approver-acme': { principal: 'user:rita', tenant: 'acme', roles: ['approver'] },
  'viewer-acme': { principal: 'user:vic', tenant: 'acme', roles: ['viewer'] },
  'admin-any': { principal: 'user:ada', roles: ['admin'] },
};
// Screenshots for docs/console.md: written when asked (CONSOLE_SCREENSHOTS=1), so a test run leaves the tree alone.
const shots = process.env.CONSOLE_SCREENSHOTS === '1' ? join(repoRoot, 'docs') : undefined;

let gateway: ConsoleGateway;
let consoleUrl: string;
let browser: Browser;
const clients: Client[] = [];

beforeAll(async () => {
  writeTokensFile(tokensFile, TOKENS);
  gateway = await startConsoleGateway({ store: join(dir, 'calls.db'), tokensFile, home: dir, env: { COUNT_FILE: countFile } });
  consoleUrl = gateway.consoleUrl;
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await browser?.close();
  await gateway?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function agent(token: string): Promise<Client> {
  const client = await agentOf(gateway.mcpUrl, token);
  clients.push(client);
  return client;
}

/** One call of `delete_item` with an idempotency key: the envelope of its answer. */
async function deleteItem(client: Client, id: string, key: string): Promise<Record<string, unknown>> {
  const r = (await client.callTool({ name: 'delete_item', arguments: { id }, _meta: { 'tool-envelope/idempotency-key': key } })) as CallToolResult;
  return r.structuredContent as Record<string, unknown>;
}

function runs(tool: string): unknown[] {
  if (!existsSync(countFile)) return [];
  return readFileSync(countFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { tool: string; args: unknown })
    .filter((r) => r.tool === tool)
    .map((r) => r.args);
}

function signedIn(token: string, width = 1400): Promise<Page> {
  return signedInPage(browser, consoleUrl, token, width);
}

/** The card of the pending request of the call whose arguments contain `marker`. */
function cardOf(page: Page, marker: string) {
  return page.locator('section.card[data-approval]', { hasText: marker });
}

const XSS = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">\u001b[31mred\u001b[0m \u202eevil`;

describe('the console in Chromium, in front of a real gateway', () => {
  it('a paused destructive call is approved on the page; the retry with its key gets the completed result, run exactly once', async () => {
    const client = await agent('agent-acme');
    const first = await deleteItem(client, `item-1 ${XSS}`, 'del-item-1');
    expect(first).toMatchObject({ ok: false, error: { category: 'elevation' } });
    expect(runs('delete_item')).toEqual([]);

    const page = await signedIn('approver-acme');
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    const card = cardOf(page, 'item-1');
    await expect.poll(() => card.count()).toBe(1);
    // The hostile argument is shown as text: no script ran, no element was made of it.
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    expect(await card.locator('pre').textContent()).toContain('<script>window.pwned=1</script>');
    expect(await card.locator('pre').textContent()).toContain('\\u{202e}evil');
    expect(await page.locator('img').count()).toBe(0);
    expect(await card.textContent()).toContain('user:ops');
    if (shots) {
      await page.screenshot({ path: join(shots, 'console-inbox-1400.png') });
      await page.setViewportSize({ width: 800, height: 900 });
      await page.screenshot({ path: join(shots, 'console-inbox-800.png') });
      await page.setViewportSize({ width: 1400, height: 900 });
    }
    await card.locator('input[name=reason]').fill('ticket OPS-12');
    await Promise.all([page.waitForURL(/done=approved/), card.locator('button.approve').click()]);
    expect(await page.locator('.notice').textContent()).toContain('approved');
    expect(dialogs).toEqual([]);

    // The gateway's approval runner runs it once; the retry with the same key gets the completed result.
    await expect.poll(async () => (await deleteItem(client, `item-1 ${XSS}`, 'del-item-1')).ok, { timeout: 20_000, interval: 200 }).toBe(true);
    const again = await deleteItem(client, `item-1 ${XSS}`, 'del-item-1');
    expect(again).toMatchObject({ ok: true, result: { deleted: `item-1 ${XSS}` } });
    expect(runs('delete_item')).toEqual([{ id: `item-1 ${XSS}` }]);
    await page.context().close();
  }, 120_000);

  it('reject: the retry gets the rejection and the tool never runs', async () => {
    const client = await agent('agent-acme');
    await deleteItem(client, 'item-2', 'del-item-2');
    const page = await signedIn('approver-acme');
    const card = cardOf(page, 'item-2');
    await card.locator('input[name=reason]').fill('wrong item');
    await Promise.all([page.waitForURL(/done=rejected/), card.locator('button.reject').click()]);
    expect(await cardOf(page, 'item-2').count()).toBe(0);
    const retry = await deleteItem(client, 'item-2', 'del-item-2');
    expect(retry).toMatchObject({ ok: false, error: { category: 'elevation' } });
    expect(JSON.stringify(retry)).toContain('wrong item');
    expect(runs('delete_item').filter((a) => (a as { id: string }).id === 'item-2')).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('a POST without the CSRF token is refused; a viewer sees no approve button and is refused if it posts anyway', async () => {
    const client = await agent('agent-acme');
    await deleteItem(client, 'item-3', 'del-item-3');
    const approver = await signedIn('approver-acme');
    const id = await cardOf(approver, 'item-3').getAttribute('data-approval');
    const post = (page: Page, body: string) =>
      page.evaluate(
        async ([path, b]) => (await fetch(path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: b })).status,
        [`/console/approvals/${id}/decide`, body] as const,
      );
    expect(await post(approver, 'decision=approve')).toBe(403);

    const viewer = await signedIn('viewer-acme');
    const card = cardOf(viewer, 'item-3');
    expect(await card.count()).toBe(1);
    expect(await card.locator('button.approve').count()).toBe(0);
    const csrf = await viewer.locator('input[name=csrf]').first().getAttribute('value');
    expect(await post(viewer, `csrf=${encodeURIComponent(csrf!)}&decision=approve`)).toBe(403);
    // Still pending, and the approver's page shows it on reload.
    await approver.reload();
    expect(await cardOf(approver, 'item-3').count()).toBe(1);
    expect(runs('delete_item').filter((a) => (a as { id: string }).id === 'item-3')).toEqual([]);
    await approver.context().close();
    await viewer.context().close();
  }, 60_000);

  it("another tenant's calls are invisible to an approver and visible to an admin; the audit list pages", async () => {
    const theirs = await agent('agent-globex');
    await deleteItem(theirs, 'globex-item', 'del-globex');
    const approver = await signedIn('approver-acme');
    expect(await cardOf(approver, 'globex-item').count()).toBe(0);
    await approver.goto(`${consoleUrl}audit`);
    expect(await approver.locator('table').textContent()).not.toContain('user:gus');
    expect(await approver.locator('table').textContent()).toContain('user:ops');
    if (shots) {
      await approver.screenshot({ path: join(shots, 'console-audit-1400.png') });
      await approver.setViewportSize({ width: 800, height: 900 });
      await approver.screenshot({ path: join(shots, 'console-audit-800.png') });
    }
    const admin = await signedIn('admin-any');
    expect(await cardOf(admin, 'globex-item').count()).toBe(1);
    await admin.goto(`${consoleUrl}audit?tool=delete_item`);
    expect(await admin.locator('table').textContent()).toContain('user:gus');
    // One record: its result in the three contracts.
    await admin.locator('table a').first().click();
    for (const h of ['Result: MCEC', 'Result: Durable Workflow', 'Result: ContextOS']) expect(await admin.locator('h2', { hasText: h }).count()).toBe(1);
    await approver.context().close();
    await admin.context().close();
  }, 60_000);
});
