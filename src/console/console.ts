/**
 * The operator console: one request handler for every page under its base path (`/console`),
 * mounted on the gateway's HTTP listener (a route of `serveHttp`) or on a listener of its own
 * (`tool-envelope console`). Pages need a session; a state change needs a POST from the console's
 * own origin carrying the session's CSRF token; nothing changes state through GET.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Identity } from '../governance/identity.js';
import { loadOperatorKey, type OperatorKey } from '../store/operator-key.js';
import type { Store } from '../store/types.js';
import { CONSOLE_CSS, CONSOLE_JS } from './assets.js';
import { auditListPage } from './audit-list.js';
import { AuditExtras } from './audit-extras.js';
import { auditRecordPage } from './audit-record.js';
import { decide } from './decide.js';
import { redirect, send } from './headers.js';
import { type ConsoleIdentity, consoleIdentityOf } from './identity.js';
import { inboxPage } from './inbox.js';
import { inboxUpdates } from './inbox-live.js';
import { inert, marked } from './inert.js';
import { OidcSignIn, type OidcOptions } from './oidc.js';
import { page, type PageView } from './layout.js';
import { livePage } from './live.js';
import { LiveHub, type LiveHubOptions, liveFilterError, liveFilterOf } from './live-hub.js';
import { cookiesOf, FormError, queryOf, readForm } from './request.js';
import { trustedProxies } from './client-address.js';
import { type ConsoleSession, sameSecret, type SessionOptions, SessionStore } from './sessions.js';
import { cookie, signIn, type SignInContext, signInPage, signOut } from './sign-in.js';
import { SignInLimit } from './sign-in-limit.js';
import { visibleTo } from './tenancy.js';

const HTML = 'text/html; charset=utf-8';

export interface ConsoleOptions {
  store: Store;
  /** Where the pages live; default `/console`. */
  base?: string;
  /** Verifies a sign-in token (the gateway's authenticator); without it the console signs everyone in as `operator`: loopback listeners only. */
  verifyToken?: (token: string) => Promise<Identity | undefined>;
  /** The identity of a console without `verifyToken` (made an admin); default none (nobody can sign in). */
  operator?: Identity;
  /** The operator key decisions are signed with; default {@link loadOperatorKey}. */
  operatorKey?: () => Promise<OperatorKey>;
  sessions?: SessionOptions;
  /** Failed sign-ins allowed per client address (IPv6: per /64) and window; default 5 a minute. */
  signInLimit?: { failures?: number; windowMs?: number };
  /**
   * The reverse proxies in front of the console (`CIDR` or address entries, e.g. `['10.0.0.5/32']`):
   * from a peer in these ranges the client's address is read from `X-Forwarded-For`
   * (client-address.ts); from any other, and by default, the header is ignored. Proxies' ranges only.
   */
  trustProxy?: readonly string[];
  /** Sign-in with OpenID Connect as well (authorization code with PKCE). */
  oidc?: OidcOptions;
  /** The live calls stream's bounds (live-hub.ts). */
  live?: LiveHubOptions;
}

/** A console's request handler. */
export interface ConsoleHandler {
  readonly base: string;
  handle(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void>;
}

/** Builds the console's handler. */
export function createConsole(options: ConsoleOptions): ConsoleHandler {
  const base = options.base ?? '/console';
  const store = options.store;
  const sessions = new SessionStore(store.consoleSessions, options.sessions);
  const live = new LiveHub(store, options.live);
  const limit = new SignInLimit(store.consoleSignInFailures, options.signInLimit);
  const trustProxy = options.trustProxy?.length ? trustedProxies(options.trustProxy) : undefined;
  let key: Promise<OperatorKey> | undefined;
  const operatorKey =
    options.operatorKey ??
    (() => {
      key ??= loadOperatorKey();
      key.catch(() => (key = undefined));
      return key;
    });
  const extras = new AuditExtras(store, operatorKey);
  const operator: ConsoleIdentity | undefined = options.operator && {
    ...(consoleIdentityOf({ ...options.operator, roles: ['admin'] }) as ConsoleIdentity),
  };
  const cookieName = (secure: boolean): string => (secure ? '__Host-te_console' : 'te_console');
  const oidc =
    options.oidc &&
    new OidcSignIn(
      options.oidc,
      base,
      store.consoleOidcFlows,
      (who) => sessions.create(who),
      (id, secure) => cookie(cookieName(secure), id, secure),
    );
  const signInContext = (secure: boolean): SignInContext => ({
    base,
    cookie: cookieName(secure),
    secure,
    oidc: oidc !== undefined,
    sessions,
    limit,
    ...(trustProxy && { trustProxy }),
    ...(options.verifyToken && { verifyToken: options.verifyToken }),
    ...(operator && { operator }),
  });

  async function route(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
    const rest = pathname === base ? '/' : pathname.startsWith(`${base}/`) ? pathname.slice(base.length) : undefined;
    if (rest === undefined) return send(res, 404, 'text/plain; charset=utf-8', 'Not found\n');
    const method = req.method ?? 'GET';
    if (rest === '/assets/console.css') return send(res, 200, 'text/css; charset=utf-8', CONSOLE_CSS);
    if (rest === '/assets/console.js') return send(res, 200, 'text/javascript; charset=utf-8', CONSOLE_JS);
    const secure = (req.socket as TLSSocket).encrypted === true;
    const ctx = signInContext(secure);
    if (rest === '/sign-in') {
      if (method === 'GET') return signInPage(ctx, res);
      if (method === 'POST') {
        if (!sameOrigin(req)) return refuse(req, res, 403, 'A sign-in must come from the console itself.');
        return signIn(ctx, req, res);
      }
      return refuse(req, res, 405, 'Method not allowed.');
    }
    if (oidc && method === 'GET' && rest === '/oidc/start') return oidc.start(res, secure);
    if (oidc && method === 'GET' && rest === '/oidc/callback') return oidc.callback(req, res, secure);
    const session = await sessions.get(cookiesOf(req)[ctx.cookie]);
    if (method === 'GET' || method === 'HEAD') {
      if (!session) return redirect(res, `${base}/sign-in`);
      return read(req, res, rest, { base, who: session.identity, csrf: session.csrf, sessionId: session.id });
    }
    if (method !== 'POST') return refuse(req, res, 405, 'Method not allowed.');
    // Every state change: a live session, from this origin, with its CSRF token.
    if (!session) return refuse(req, res, 403, 'Not signed in (or the session ended): sign in again.');
    if (!sameOrigin(req)) return refuse(req, res, 403, 'A state change must come from the console itself.');
    const form = await readForm(req);
    if (!sameSecret(form.get('csrf') ?? undefined, session.csrf)) return refuse(req, res, 403, 'The form is missing its CSRF token: reload the page.');
    if (rest === '/sign-out') return signOut(ctx, res, session.id);
    if (rest === '/verify') return extras.verify(res, session.identity, base);
    const m = /^\/approvals\/([^/]+)\/decide$/.exec(rest);
    if (m) return decideRoute(res, session, decodeURIComponent(m[1]!), form);
    return refuse(req, res, 404, 'Not found.');
  }

  async function read(req: IncomingMessage, res: ServerResponse, rest: string, view: PageView & { who: ConsoleIdentity; sessionId: string }): Promise<void> {
    const query = queryOf(req);
    if (rest === '/' || rest === '') return redirect(res, `${base}/inbox`);
    if (rest === '/inbox') return send(res, 200, HTML, await inboxPage(store, view, query.get('cursor') || null, doneNotice(query)));
    if (rest === '/inbox/updates') return send(res, 200, 'application/json; charset=utf-8', await inboxUpdates(store, view.who, query));
    if (rest === '/live' || rest === '/live/events') {
      const filter = liveFilterOf(query);
      // The audit list's answer to a filter that can never match, rather than a stream empty forever.
      const bad = liveFilterError(filter);
      if (bad !== undefined)
        return rest === '/live'
          ? send(res, 400, HTML, page(view, 'Bad request', 'live', `<p class="notice error">${inert(bad)}</p>`))
          : send(res, 400, 'text/plain; charset=utf-8', `${marked(bad, 1000)}\n`);
      if (rest === '/live') return send(res, 200, HTML, livePage(view, filter));
      sessions.endWithSession(view.sessionId, res);
      return live.subscribe(req, res, view.who, filter);
    }
    if (rest === '/audit') {
      const html = await auditListPage(store, view, query);
      return typeof html === 'string'
        ? send(res, 200, HTML, html)
        : send(res, 400, HTML, page(view, 'Bad request', 'audit', `<p class="notice error">${inert(html.bad)}</p>`));
    }
    if (await extras.read(res, rest, view, query)) return;
    const m = /^\/audit\/([^/]+)$/.exec(rest);
    if (m) {
      const r = await store.getAudit(decodeURIComponent(m[1]!));
      // Another tenant's record answers exactly as a missing one.
      if (!r || !visibleTo(view.who, r.principalChain))
        return send(res, 404, HTML, page(view, 'Not found', 'audit', '<p class="notice error">No such record.</p>'));
      return send(res, 200, HTML, auditRecordPage(view, r));
    }
    if (/^\/approvals\/[^/]+\/decide$/.test(rest))
      return send(res, 405, 'text/plain; charset=utf-8', 'A decision is a POST from the inbox.\n', { allow: 'POST' });
    return send(res, 404, HTML, page(view, 'Not found', 'inbox', '<p class="notice error">Not found.</p>'));
  }

  async function decideRoute(res: ServerResponse, session: ConsoleSession, id: string, form: URLSearchParams): Promise<void> {
    const choice = form.get('decision');
    if (choice !== 'approve' && choice !== 'reject') return send(res, 400, 'text/plain; charset=utf-8', 'decision must be approve or reject\n');
    const reason = (form.get('reason') ?? '').trim().slice(0, 1000) || null;
    const r = await decide(store, operatorKey, session.identity, id, choice, reason);
    if (r.result === 'approved' || r.result === 'rejected' || r.result === 'expired' || r.result === 'recorded') {
      return redirect(res, `${base}/inbox?done=${r.result}&id=${encodeURIComponent(id)}`);
    }
    const status = r.result === 'not-found' ? 404 : r.result === 'forbidden' ? 403 : 409;
    const view = { base, who: session.identity, csrf: session.csrf };
    return send(res, status, HTML, await inboxPage(store, view, null, 'detail' in r ? r.detail : undefined));
  }

  return {
    base,
    async handle(req, res, pathname) {
      try {
        await route(req, res, pathname);
      } catch (e) {
        if (res.headersSent) return void res.destroy();
        if (e instanceof FormError) return refuse(req, res, 400, e.message);
        send(res, 500, 'text/plain; charset=utf-8', 'The console failed to answer.\n');
      }
    },
  };
}

const DONE: Record<string, string> = {
  approved: 'approved: the gateway runs it once',
  recorded: 'has your approval; it waits for more approvers',
  rejected: 'rejected',
  expired: 'had expired: settled as expired',
};

function doneNotice(query: URLSearchParams): string | undefined {
  const done = query.get('done');
  const id = query.get('id');
  return done && DONE[done] && id ? `Request ${id} ${DONE[done]}.` : undefined;
}

/** A browser's POST names its origin; one from another site is refused (with SameSite=Strict and the CSRF token, a third line). */
function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  const host = req.headers.host;
  const secure = (req.socket as TLSSocket).encrypted === true;
  return host !== undefined && origin === `${secure ? 'https' : 'http'}://${host}`;
}

function refuse(req: IncomingMessage, res: ServerResponse, status: number, message: string): void {
  req.resume();
  send(res, status, 'text/plain; charset=utf-8', `${message}\n`);
}
