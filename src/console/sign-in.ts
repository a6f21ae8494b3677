/**
 * Signing in and out: a bearer token (of the gateway's tokens file, or whatever credential the
 * console's verifier accepts) exchanged for a new server-side session. The sign-in form carries a
 * one-time value also set as a cookie (no sign-in CSRF), failures are rate-limited per client address,
 * and a session id is only ever minted here, never taken from the client (no fixation).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Identity } from '../governance/identity.js';
import { addressKey } from './address-key.js';
import { clientAddress, type TrustedProxies } from './client-address.js';
import { type ConsoleIdentity, consoleIdentityOf } from './identity.js';
import { inert } from './inert.js';
import { page } from './layout.js';
import { redirect, send } from './headers.js';
import { cookiesOf, readForm } from './request.js';
import { sameSecret, type SessionStore } from './sessions.js';
import type { SignInLimit } from './sign-in-limit.js';

const HTML = 'text/html; charset=utf-8';

/** What signing in needs: where the console lives, its cookies, its sessions, its limit, and how a credential is verified. */
export interface SignInContext {
  base: string;
  /** The session cookie's name. */
  cookie: string;
  secure: boolean;
  sessions: SessionStore;
  limit: SignInLimit;
  /** The reverse proxies whose `X-Forwarded-For` names the client (client-address.ts); none: the socket's peer is. */
  trustProxy?: TrustedProxies;
  /** Verifies a token; without it, signing in needs no token and makes `operator` the identity (loopback only). */
  verifyToken?: (token: string) => Promise<Identity | undefined>;
  operator?: ConsoleIdentity;
  /** Whether OpenID Connect sign-in is offered (`<base>/oidc/start`). */
  oidc?: boolean;
}

/** A `Set-Cookie` value with the console's attributes. */
export function cookie(name: string, value: string, secure: boolean, maxAgeSec?: number): string {
  return `${name}=${value}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}${maxAgeSec !== undefined ? `; Max-Age=${maxAgeSec}` : ''}`;
}

const preName = (c: SignInContext): string => `${c.cookie}_pre`;

/** GET sign-in: the form, with a fresh one-time value in the form and in a cookie. */
export function signInPage(c: SignInContext, res: ServerResponse, status = 200, message?: string): void {
  const pre = randomBytes(24).toString('base64url');
  const field = c.verifyToken
    ? '<label for="token">Access token</label><input id="token" name="token" type="password" autocomplete="off" required>'
    : `<p>This console is on a loopback address without authentication: you sign in as ${inert(c.operator ? `${c.operator.principal.kind}:${c.operator.principal.id}` : 'the operator')}.</p>`;
  const body = `<section class="card signin"><h1>Sign in</h1>${message ? `<p class="notice error" id="sign-in-error">${inert(message)}</p>` : ''}
<form method="post" action="${c.base}/sign-in"><input type="hidden" name="pre" value="${pre}">${field}<button type="submit">Sign in</button></form>${c.oidc ? `<p><a id="oidc" href="${c.base}/oidc/start">Sign in with OpenID Connect</a></p>` : ''}</section>`;
  send(res, status, HTML, page({ base: c.base }, 'Sign in', 'sign-in', body), { 'set-cookie': cookie(preName(c), pre, c.secure, 600) });
}

const TOO_MANY = 'Too many failed sign-ins from this address: wait a minute.';

/** POST sign-in. */
export async function signIn(c: SignInContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // Counted per client (through trusted proxies only), IPv6 per /64.
  const address = addressKey(clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], c.trustProxy));
  if (!(await c.limit.allowed(address))) {
    req.resume();
    return signInPage(c, res, 429, TOO_MANY);
  }
  const form = await readForm(req, 8_192);
  const cookies = cookiesOf(req);
  const pre = cookies[preName(c)];
  if (pre === undefined || !sameSecret(form.get('pre') ?? undefined, pre)) return signInPage(c, res, 403, 'The sign-in form expired: try again.');
  let who: ConsoleIdentity | undefined;
  if (c.verifyToken) {
    // Counted before the token is checked, taken back if it is good (sign-in-limit.ts).
    if (!(await c.limit.attempt(address))) return signInPage(c, res, 429, TOO_MANY);
    const token = (form.get('token') ?? '').trim();
    const identity = token === '' ? undefined : await c.verifyToken(token);
    who = identity && consoleIdentityOf(identity);
    if (!who) return signInPage(c, res, 401, identity ? 'This token has no console role (viewer, approver or admin).' : 'The token is not accepted.');
    await c.limit.succeeded(address);
  } else who = c.operator;
  if (!who) return signInPage(c, res, 401, 'No identity to sign in as.');
  // A session the client already had ends: the new one is minted here, never adopted.
  const old = cookies[c.cookie];
  if (old !== undefined) await c.sessions.end(old);
  const s = await c.sessions.create(who);
  redirect(res, `${c.base}/inbox`, { 'set-cookie': [cookie(c.cookie, s.id, c.secure), cookie(preName(c), '', c.secure, 0)] });
}

/** POST sign-out (the caller checked the session and its CSRF token). */
export async function signOut(c: SignInContext, res: ServerResponse, sessionId: string): Promise<void> {
  await c.sessions.end(sessionId);
  redirect(res, `${c.base}/sign-in`, { 'set-cookie': cookie(c.cookie, '', c.secure, 0) });
}
