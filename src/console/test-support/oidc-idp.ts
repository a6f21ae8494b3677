/**
 * A real OpenID provider for the console's sign-in tests (oidc-provider, with its development login
 * and consent pages), and a browser signing in through it. Its listener starts first (the console
 * needs the issuer URL) and it serves once told the console's callback (the client registers it).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import type { Browser, Page } from 'playwright-core';

/** The provider's accounts: the claims each signs in with. */
export const OIDC_ACCOUNTS: Record<string, { roles: string[]; tenant_id?: string }> = {
  rita: { roles: ['approver'], tenant_id: 'acme' },
  nobody: { roles: [] },
};

/** The console's client at the provider. */
export const OIDC_CLIENT = { id: 'console', secret: 'console-secret-console-secret-0123' };

/** A provider listening on loopback. */
export interface TestIdp {
  issuer: string;
  /** Serves the provider, with the console's client registered for this callback URL. */
  serve(redirectUri: string): void;
  close(): Promise<void>;
}

/** Starts the provider's listener on a free loopback port. */
export async function listenIdp(): Promise<TestIdp> {
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    serve(redirectUri) {
      const provider = new Provider(issuer, {
        clients: [
          { client_id: OIDC_CLIENT.id, client_secret: OIDC_CLIENT.secret, redirect_uris: [redirectUri], token_endpoint_auth_method: 'client_secret_post' },
        ],
        // The console asks for 'openid profile' by default: the roles and tenant come with profile.
        claims: { openid: ['sub'], profile: ['roles', 'tenant_id'] },
        findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub, ...OIDC_ACCOUNTS[sub] }) }),
        cookies: { keys: ['a-test-cookie-signing-key'] },
        ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
      });
      server.on('request', provider.callback());
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * A new browser context signing in at `consoleUrl` (ending with `/console`) through the provider's
 * login and consent pages as `login`; the page where the flow ends.
 */
export async function oidcSignIn(browser: Browser, consoleUrl: string, login: string): Promise<Page> {
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

/** A cookie jar that honours each cookie's path, as the provider's interaction cookies need. */
class PathJar {
  private readonly cookies = new Map<string, { path: string; value: string }>();

  header(url: URL): string {
    return [...this.cookies.entries()]
      .filter(([, c]) => url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`))
      .map(([key, c]) => `${key.slice(key.indexOf(' ') + 1)}=${c.value}`)
      .join('; ');
  }

  keep(url: URL, setCookies: string[]): void {
    for (const line of setCookies) {
      const [pair, ...attrs] = line.split(';').map((s) => s.trim());
      const eq = pair!.indexOf('=');
      const path = attrs.find((a) => /^path=/i.test(a))?.slice(5) || url.pathname;
      const key = `${path} ${pair!.slice(0, eq)}`;
      const expires = attrs.find((a) => /^expires=/i.test(a));
      const gone = attrs.some((a) => /^max-age=0$/i.test(a)) || (expires !== undefined && Date.parse(expires.slice(8)) <= Date.now());
      if (gone) this.cookies.delete(key);
      else this.cookies.set(key, { path, value: pair!.slice(eq + 1) });
    }
  }
}

/**
 * The provider's side of a sign-in over plain HTTP, as a browser without script would go through
 * it: from the authorization URL the console redirected to, through the login and consent forms, to
 * the redirect back (the console's callback URL with the code and state), which it returns unfollowed.
 */
export async function authorizeOverHttp(authorizationUrl: string, login: string, redirectUri: string): Promise<string> {
  const jar = new PathJar();
  let url = new URL(authorizationUrl);
  let form: URLSearchParams | undefined;
  for (let step = 0; step < 12; step++) {
    const headers: Record<string, string> = { cookie: jar.header(url) };
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(url, { method: form ? 'POST' : 'GET', headers, body: form?.toString(), redirect: 'manual' });
    jar.keep(url, res.headers.getSetCookie());
    const location = res.headers.get('location');
    if (location !== null) {
      await res.arrayBuffer();
      const next = new URL(location, url);
      if (next.href.startsWith(`${redirectUri}?`)) return next.href;
      url = next;
      form = undefined;
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`the provider answered ${res.status} without a form: ${html.slice(0, 200)}`);
    form = new URLSearchParams();
    for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) form.set(m[1]!, m[2]!);
    if (/name="login"/.test(html)) form.set('login', login);
    if (/name="password"/.test(html)) form.set('password', 'any');
    url = new URL(action, url);
  }
  throw new Error('the provider did not redirect back within 12 steps');
}
