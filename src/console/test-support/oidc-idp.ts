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
