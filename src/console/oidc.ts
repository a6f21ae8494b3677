/**
 * Signing in to the console with OpenID Connect: the authorization code flow with PKCE (S256),
 * `state` and `nonce`, through `openid-client` (imported only when a console is configured for it).
 * The provider's claims give the principal (`user:<sub>`), the console role (a `roles` claim) and the
 * tenant (a `tenant_id` claim); the flow ends in a new console session like a token sign-in.
 * The flow in progress is kept in the store (store/console-oidc-flows.ts), so the provider's callback
 * may reach another console over it than the one that started it.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ToolEnvelopeError } from 'tool-envelope/core';
import type { Identity } from '../governance/identity.js';
import type { ConsoleOidcFlowTable } from '../store/console-oidc-flows.js';
import { redirect, send } from './headers.js';
import { consoleIdentityOf } from './identity.js';
import { page } from './layout.js';
import { cookiesOf } from './request.js';
import type { ConsoleSession } from './sessions.js';

/** The console's OpenID Connect client. */
export interface OidcOptions {
  issuer: string;
  clientId: string;
  /** Sent as client_secret_post; without it the client is public (PKCE only). */
  clientSecret?: string;
  /** This console's callback, `<public URL>/console/oidc/callback`, as registered with the provider. */
  redirectUri: string;
  /** Scopes asked for; default `openid profile`. */
  scope?: string;
  /** The claim holding the roles (a list or a space-separated string); default `roles`. */
  rolesClaim?: string;
  /** The claim naming the tenant; default `tenant_id`. */
  tenantClaim?: string;
}

type OpenidClient = typeof import('openid-client');
type Pending = { verifier: string; state: string; nonce: string };

const FLOW_COOKIE = 'te_console_oidc';
const FLOW_MS = 600_000;
const FLOW_KEY = /^[A-Za-z0-9_-]{32}$/;

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** The flow of a row's JSON, or undefined when it is not one (the store's text is checked, not trusted). */
function pendingOf(json: string): Pending | undefined {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    return undefined;
  }
  const p = v as Partial<Pending> | null;
  return typeof p?.verifier === 'string' && typeof p.state === 'string' && typeof p.nonce === 'string'
    ? { verifier: p.verifier, state: p.state, nonce: p.nonce }
    : undefined;
}

const loopback = (url: URL): boolean => ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);

/** The two routes of the flow: `start` redirects to the provider, `callback` takes its answer. */
export class OidcSignIn {
  private config: Promise<unknown> | undefined;
  private lib: Promise<OpenidClient> | undefined;

  constructor(
    private readonly o: OidcOptions,
    private readonly base: string,
    /** The flows in progress, shared by every console over the store. */
    private readonly flows: ConsoleOidcFlowTable,
    private readonly open: (who: NonNullable<ReturnType<typeof consoleIdentityOf>>) => Promise<ConsoleSession>,
    private readonly sessionCookie: (id: string, secure: boolean) => string,
  ) {}

  private client(): Promise<OpenidClient> {
    this.lib ??= import('openid-client');
    return this.lib;
  }

  /** The provider's configuration, discovered once (again after a failure). */
  private async configuration(): Promise<Parameters<OpenidClient['buildAuthorizationUrl']>[0]> {
    const c = await this.client();
    const issuer = new URL(this.o.issuer);
    // Plain HTTP only toward a provider on this machine (tests, a local provider); anything else needs HTTPS.
    const insecure = issuer.protocol === 'http:' && loopback(issuer);
    this.config ??= c.discovery(issuer, this.o.clientId, this.o.clientSecret, this.o.clientSecret ? undefined : c.None(), {
      ...(insecure && { execute: [c.allowInsecureRequests] }),
    });
    this.config.catch(() => (this.config = undefined));
    return (await this.config) as Parameters<OpenidClient['buildAuthorizationUrl']>[0];
  }

  private flowCookie(value: string, maxAgeSec: number, secure: boolean): string {
    // Lax, not Strict: the provider's redirect back is a cross-site navigation that must carry it.
    return `${FLOW_COOKIE}=${value}; Path=${this.base}/oidc; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}; Max-Age=${maxAgeSec}`;
  }

  async start(res: ServerResponse, secure: boolean): Promise<void> {
    const c = await this.client();
    const config = await this.configuration();
    const flow: Pending = { verifier: c.randomPKCECodeVerifier(), state: c.randomState(), nonce: c.randomNonce() };
    const key = randomBytes(24).toString('base64url');
    const now = Date.now();
    await this.flows.put({ keyHash: sha256(key), flow: JSON.stringify(flow), createdAt: now, expiresAt: now + FLOW_MS });
    const url = c.buildAuthorizationUrl(config, {
      redirect_uri: this.o.redirectUri,
      scope: this.o.scope ?? 'openid profile',
      code_challenge: await c.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    });
    redirect(res, url.href, { 'set-cookie': this.flowCookie(key, FLOW_MS / 1000, secure) });
  }

  async callback(req: IncomingMessage, res: ServerResponse, secure: boolean): Promise<void> {
    const key = cookiesOf(req)[FLOW_COOKIE];
    // One use per flow: taking it deletes it, so a replayed callback, on any console, finds nothing.
    const row = key !== undefined && FLOW_KEY.test(key) ? await this.flows.take(sha256(key), Date.now()) : undefined;
    const flow = row && pendingOf(row.flow);
    const clear = this.flowCookie('', 0, secure);
    if (!flow) return this.fail(res, 'The sign-in took too long or was already used: try again.', clear);
    const c = await this.client();
    const config = await this.configuration();
    let identity: Identity;
    try {
      const current = new URL(req.url ?? '/', this.o.redirectUri);
      const tokens = await c.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
      });
      const idClaims = tokens.claims();
      if (!idClaims) throw new ToolEnvelopeError('invalid-option', 'the provider returned no ID token');
      const info = await c.fetchUserInfo(config, tokens.access_token, idClaims.sub);
      identity = this.identityOf({ ...info, ...idClaims });
    } catch (e) {
      return this.fail(res, `The provider's answer was not accepted: ${(e as Error).message}`, clear);
    }
    const who = consoleIdentityOf(identity);
    if (!who) return this.fail(res, 'This account has no console role (viewer, approver or admin).', clear);
    const s = await this.open(who);
    // The session cookie is SameSite=Strict: this answer came from a cross-site redirect, so the
    // page moves on by a navigation of its own (a meta refresh, no script) that sends it.
    const html = page(
      { base: this.base, refreshTo: `${this.base}/inbox` },
      'Signed in',
      'sign-in',
      `<p>Signed in. <a href="${this.base}/inbox">Continue</a></p>`,
    );
    send(res, 200, 'text/html; charset=utf-8', html, { 'set-cookie': [this.sessionCookie(s.id, secure), clear] });
  }

  private identityOf(claims: Record<string, unknown>): Identity {
    const rolesClaim = claims[this.o.rolesClaim ?? 'roles'];
    const roles = Array.isArray(rolesClaim)
      ? rolesClaim.filter((r): r is string => typeof r === 'string')
      : typeof rolesClaim === 'string'
        ? rolesClaim.split(' ')
        : [];
    const tenant = claims[this.o.tenantClaim ?? 'tenant_id'];
    return {
      principal: { kind: 'user', id: String(claims.sub), ...(typeof tenant === 'string' && tenant !== '' && { tenant_id: tenant }) },
      roles,
      via: 'oauth',
    };
  }

  private fail(res: ServerResponse, message: string, clear: string): void {
    send(res, 401, 'text/plain; charset=utf-8', `${message}\n`, { 'set-cookie': clear });
  }
}
