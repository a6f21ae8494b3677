// Signing in to the console with OpenID Connect in real Chromium, against a real OpenID provider
// (oidc-provider, started here, with its development login and consent pages): the authorization
// code flow with PKCE through openid-client, the roles and tenant from the provider's claims.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locate, missingMessage, prereq } from '../../scripts/test-prereqs.mjs';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { Store } from '../store/types.js';
import { type ConsoleHandler, createConsole } from './console.js';
import { listenIdp, OIDC_CLIENT, oidcSignIn as signInAt, type TestIdp } from './test-support/oidc-idp.js';

const dir = mkdtempSync(join(tmpdir(), 'te-console-oidc-'));
let store: Store;
let browser: Browser;
let idp: TestIdp;
let site: Server;
let consoleUrl: string;

beforeAll(async () => {
  store = await openSqliteStore({ path: join(dir, 'calls.db') });
  // The console's listener first: the provider registers its callback URL.
  let handler: ConsoleHandler | undefined;
  site = createServer((req, res) => void handler!.handle(req, res, (req.url ?? '/').split('?')[0]!));
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', () => r()));
  consoleUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/console`;
  idp = await listenIdp();
  idp.serve(`${consoleUrl}/oidc/callback`);
  // The default scope, 'openid profile', as the CLI's consoles ask.
  handler = createConsole({
    store,
    oidc: { issuer: idp.issuer, clientId: OIDC_CLIENT.id, clientSecret: OIDC_CLIENT.secret, redirectUri: `${consoleUrl}/oidc/callback` },
  });
  const executablePath = locate(prereq('chromium'));
  if (!executablePath) throw new Error(missingMessage(prereq('chromium')));
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  site?.closeAllConnections();
  await new Promise((r) => site?.close(r));
  await idp?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Signs in through the provider's login and consent pages; the page where it ends. */
function oidcSignIn(login: string) {
  return signInAt(browser, consoleUrl, login);
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
