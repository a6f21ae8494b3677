// Signing in to the console with OpenID Connect in real Chromium, against a real OpenID provider
// (oidc-provider, started here, with its development login and consent pages): the authorization
// code flow with PKCE through openid-client, the roles and tenant from the provider's claims.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Provider from 'oidc-provider';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locate, missingMessage, prereq } from '../../scripts/test-prereqs.mjs';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { Store } from '../store/types.js';
import { type ConsoleHandler, createConsole } from './console.js';

const ACCOUNTS: Record<string, { roles: string[]; tenant_id?: string }> = {
  rita: { roles: ['approver'], tenant_id: 'acme' },
  nobody: { roles: [] },
};

const dir = mkdtempSync(join(tmpdir(), 'te-console-oidc-'));
let store: Store;
let browser: Browser;
let idp: Server;
let site: Server;
let consoleUrl: string;

function listen(server: Server): Promise<number> {
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)));
}

beforeAll(async () => {
  store = await openSqliteStore({ path: join(dir, 'calls.db') });
  // The console's listener first: the provider registers its callback URL.
  let handler: ConsoleHandler | undefined;
  site = createServer((req, res) => void handler!.handle(req, res, (req.url ?? '/').split('?')[0]!));
  consoleUrl = `http://127.0.0.1:${await listen(site)}/console`;
  idp = createServer();
  const issuer = `http://127.0.0.1:${await listen(idp)}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'console',
        client_secret: 'console-secret-console-secret-0123',
        redirect_uris: [`${consoleUrl}/oidc/callback`],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    claims: { openid: ['sub'], console: ['roles', 'tenant_id'] },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub, ...ACCOUNTS[sub] }) }),
    cookies: { keys: ['a-test-cookie-signing-key'] },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
  });
  idp.on('request', provider.callback());
  handler = createConsole({
    store,
    oidc: {
      issuer,
      clientId: 'console',
      clientSecret: 'console-secret-console-secret-0123',
      redirectUri: `${consoleUrl}/oidc/callback`,
      scope: 'openid console',
    },
  });
  const executablePath = locate(prereq('chromium'));
  if (!executablePath) throw new Error(missingMessage(prereq('chromium')));
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  for (const s of [site, idp]) {
    s?.closeAllConnections();
    await new Promise((r) => s?.close(r));
  }
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Signs in through the provider's login and consent pages; the page where it ends. */
async function oidcSignIn(login: string) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${consoleUrl}/sign-in`);
  await page.click('#oidc');
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'any');
  await page.click('button[type=submit]');
  await page.click('button[type=submit]'); // consent
  await page.waitForLoadState('load');
  return page;
}

describe('OpenID Connect sign-in', () => {
  it('signs in with the provider: role and tenant from its claims, a session like a token sign-in', async () => {
    const page = await oidcSignIn('rita');
    await page.waitForURL(`${consoleUrl}/inbox`);
    expect(await page.locator('header .who').textContent()).toBe('user:rita · approver · tenant acme');
    const cookies = await page.context().cookies();
    expect(cookies.find((c) => c.name === 'te_console')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    await page.context().close();
  }, 60_000);

  it('refuses an account without a console role, and a replayed callback', async () => {
    const page = await oidcSignIn('nobody');
    expect(await page.textContent('body')).toContain('no console role');
    const callback = page.url();
    expect(callback).toContain('/console/oidc/callback?');
    const replay = await page.goto(callback);
    expect(replay!.status()).toBe(401);
    expect((await page.context().cookies()).find((c) => c.name === 'te_console')).toBeUndefined();
    await page.context().close();
  }, 60_000);
});
