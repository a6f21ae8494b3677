// The gateway's own console (`gateway --http 0 --console`) signing in with OpenID Connect, with the
// same flags as `tool-envelope console` (--oidc-issuer, --oidc-client-id, the secret in
// TOOL_ENVELOPE_OIDC_CLIENT_SECRET): real Chromium, a real OpenID provider (oidc-provider) started
// here, a real gateway process; an agent's paused call shows in the inbox of the provider's user.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenIdp, OIDC_CLIENT, oidcSignIn, type TestIdp } from '../console/test-support/oidc-idp.js';
import { agentOf, type ConsoleGateway, launchChromium, startConsoleGateway, writeTokensFile } from './test-support/console-gateway.js';

const dir = mkdtempSync(join(tmpdir(), 'te-console-oidc-gateway-'));
const tokensFile = join(dir, 'tokens.yaml');

let idp: TestIdp;
let gateway: ConsoleGateway;
let consoleUrl: string;
let browser: Browser;
let agent: Client | undefined;

beforeAll(async () => {
  writeTokensFile(tokensFile, { 'agent-acme': { principal: 'user:ops', tenant: 'acme', roles: [] } });
  // The provider's listener first (the gateway is given its URL), then the gateway, then the
  // provider serves with the gateway's callback registered.
  idp = await listenIdp();
  gateway = await startConsoleGateway({
    store: join(dir, 'calls.db'),
    tokensFile,
    home: dir,
    env: { COUNT_FILE: join(dir, 'ran.ndjson'), TOOL_ENVELOPE_OIDC_CLIENT_SECRET: OIDC_CLIENT.secret },
    args: ['--oidc-issuer', idp.issuer, '--oidc-client-id', OIDC_CLIENT.id],
  });
  consoleUrl = gateway.consoleUrl.replace(/\/$/, '');
  idp.serve(`${consoleUrl}/oidc/callback`);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await agent?.close().catch(() => {});
  await browser?.close();
  await gateway?.stop();
  await idp?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("OpenID Connect sign-in on the gateway's --console", () => {
  it("signs in through the provider and sees the inbox with its tenant's paused call", async () => {
    agent = await agentOf(gateway.mcpUrl, 'agent-acme');
    const paused = await agent.callTool({ name: 'delete_item', arguments: { id: 'item-oidc' }, _meta: { 'tool-envelope/idempotency-key': 'del-oidc' } });
    expect(paused.structuredContent).toMatchObject({ ok: false, error: { category: 'elevation' } });

    const page = await oidcSignIn(browser, consoleUrl, 'rita');
    await page.waitForURL(`${consoleUrl}/inbox`);
    expect(await page.locator('header .who').textContent()).toBe('user:rita · approver · tenant acme');
    const card = page.locator('section.card[data-approval]', { hasText: 'item-oidc' });
    await expect.poll(() => card.count()).toBe(1);
    expect(await card.locator('button.approve').count()).toBe(1);
    expect((await page.context().cookies()).find((c) => c.name === 'te_console')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    await page.context().close();
  }, 90_000);

  it('refuses an account without a console role', async () => {
    const page = await oidcSignIn(browser, consoleUrl, 'nobody');
    expect(await page.textContent('body')).toContain('no console role');
    expect((await page.context().cookies()).find((c) => c.name === 'te_console')).toBeUndefined();
    await page.context().close();
  }, 60_000);
});
