/**
 * Signing in to the console with OpenID Connect: the authorization code flow with PKCE (S256),
 * `state` and `nonce`, through `openid-client` (imported only when a console is configured for it).
 * The provider's claims give the principal (`user:<sub>`), the console role (a `roles` claim) and the
 * tenant (a `tenant_id` claim); the flow ends in a new console session like a token sign-in.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ToolEnvelopeError } from 'tool-envelope/core';
import type { Identity } from '../governance/identity.js';
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
type Pending = { verifier: string; state: string; nonce: string; at: number };

const FLOW_COOKIE = 'te_console_oidc';
const FLOW_MS = 600_000;

const loopback = (url: URL): boolean => ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);

/** The two routes of the flow: `start` redirects to the provider, `callback` takes its answer. */
export class OidcSignIn {
  private config: Promise<unknown> | undefined;
  private lib: Promise<OpenidClient> | undefined;
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly o: OidcOptions,
    private readonly base: string,
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
    const flow = { verifier: c.randomPKCECodeVerifier(), state: c.randomState(), nonce: c.randomNonce(), at: Date.now() };
    const key = randomBytes(24).toString('base64url');
    for (const [k, p] of this.pending) if (Date.now() - p.at > FLOW_MS) this.pending.delete(k);
    if (this.pending.size >= 10_000) this.pending.delete(this.pending.keys().next().value as string);
    this.pending.set(key, flow);
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
    const flow = key === undefined ? undefined : this.pending.get(key);
    // One use per flow: a replayed callback finds nothing.
    if (key !== undefined) this.pending.delete(key);
    const clear = this.flowCookie('', 0, secure);
    if (!flow || Date.now() - flow.at > FLOW_MS) return this.fail(res, 'The sign-in took too long or was already used: try again.', clear);
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
