// Signing in to the console with OpenID Connect in real Chromium, against a real OpenID provider
// (oidc-provider, started here, with its development login and consent pages): the authorization
// code flow with PKCE through openid-client, the roles and tenant from the provider's claims.
// And, over plain HTTP without the browser, a flow started on one console and finished on another
// over the same store (replicas behind a load balancer), taken once across both.
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locate, missingMessage, prereq } from '../../scripts/test-prereqs.mjs';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { Store } from '../store/types.js';
import { type ConsoleHandler, type ConsoleOptions, createConsole } from './console.js';
import { Agent, serveConsole } from './test-support/http-client.js';
import { authorizeOverHttp, listenIdp, OIDC_CLIENT, oidcSignIn as signInAt, type TestIdp } from './test-support/oidc-idp.js';

const dir = mkdtempSync(join(tmpdir(), 'te-console-oidc-'));
let store: Store;
let browser: Browser;
let idp: TestIdp;
let site: Server;
let consoleUrl: string;
let oidcOptions: NonNullable<ConsoleOptions['oidc']>;

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
  oidcOptions = { issuer: idp.issuer, clientId: OIDC_CLIENT.id, clientSecret: OIDC_CLIENT.secret, redirectUri: `${consoleUrl}/oidc/callback` };
  handler = createConsole({ store, oidc: oidcOptions });
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

describe('OpenID Connect across consoles over one store', () => {
  /** Starts a flow at `agent`'s console: the authorization URL and the flow cookie's value. */
  async function start(agent: Agent): Promise<{ authorization: string; key: string }> {
    const res = await agent.request('/oidc/start');
    const set = res.headers.getSetCookie().find((c) => c.startsWith('te_console_oidc='))!;
    expect(set).toMatch(/; Path=\/console\/oidc; HttpOnly; SameSite=Lax; Max-Age=600$/);
    return { authorization: res.headers.get('location')!, key: agent.cookies.get('te_console_oidc')! };
  }

  /** The callback's path and query under the console base (the provider redirected to console A's URL). */
  const callbackPath = (href: string): string => href.slice(consoleUrl.length);

  it('a flow started on one console finishes on another; the store keeps only its hash; the callback replayed is refused on both', async () => {
    // Console B: another connection to the same file (another process), the same public callback URL.
    const storeB = await openSqliteStore({ path: join(dir, 'calls.db') });
    const b = await serveConsole({ store: storeB, oidc: oidcOptions });
    try {
      const onA = new Agent(consoleUrl);
      const { authorization, key } = await start(onA);
      const file = new Database(join(dir, 'calls.db'), { readonly: true });
      const rows = file.prepare('SELECT * FROM console_oidc_flows').all() as Record<string, unknown>[];
      file.close();
      expect(rows.map((r) => r.key_hash)).toContain(createHash('sha256').update(key).digest('hex'));
      expect(JSON.stringify(rows)).not.toContain(key);

      const callback = callbackPath(await authorizeOverHttp(authorization, 'rita', oidcOptions.redirectUri));
      const onB = new Agent(b.url);
      onB.cookies.set('te_console_oidc', key);
      const done = await onB.request(callback);
      expect(done.status).toBe(200);
      expect(done.headers.getSetCookie().some((c) => c.startsWith('te_console_oidc=;') && c.includes('Max-Age=0'))).toBe(true);
      // The session it opened is the store's: console A knows it.
      onA.cookies.set('te_console', onB.cookies.get('te_console')!);
      const inbox = await onA.request('/inbox');
      expect(inbox.status).toBe(200);
      expect(inbox.body).toContain('user:rita · approver · tenant acme');

      // The same cookie and code again, on either console: the flow is gone.
      for (const url of [b.url, consoleUrl]) {
        const replay = new Agent(url);
        replay.cookies.set('te_console_oidc', key);
        const r = await replay.request(callback);
        expect(r.status).toBe(401);
        expect(r.body).toContain('already used');
        expect(r.headers.getSetCookie().some((c) => c.startsWith('te_console='))).toBe(false);
      }
    } finally {
      await b.close();
      await storeB.close();
    }
  }, 20_000);

  it('one callback sent to both consoles at once signs in once', async () => {
    const storeB = await openSqliteStore({ path: join(dir, 'calls.db') });
    const b = await serveConsole({ store: storeB, oidc: oidcOptions });
    try {
      const { authorization, key } = await start(new Agent(b.url));
      const callback = callbackPath(await authorizeOverHttp(authorization, 'rita', oidcOptions.redirectUri));
      const answers = await Promise.all(
        [consoleUrl, b.url].map((url) => {
          const agent = new Agent(url);
          agent.cookies.set('te_console_oidc', key);
          return agent.request(callback);
        }),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([200, 401]);
    } finally {
      await b.close();
      await storeB.close();
    }
  }, 20_000);
});
