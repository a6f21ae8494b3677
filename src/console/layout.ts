/**
 * The page shell every console page shares: navigation, who is signed in, sign-out (a POST with the
 * CSRF token), the one stylesheet and the one script, and no inline script or style.
 */
import { type ConsoleIdentity, principalName } from './identity.js';
import { inert } from './inert.js';

/** What a page needs of its request: the console's base path, and the session when signed in. */
export interface PageView {
  base: string;
  who?: ConsoleIdentity;
  csrf?: string;
  /** A page that moves on by itself (a meta refresh, no script) to this path. */
  refreshTo?: string;
  /** Seconds before it does; default 0. */
  refreshAfter?: number;
}

/** The hidden CSRF field of a form. */
export function csrfField(view: PageView): string {
  return `<input type="hidden" name="csrf" value="${inert(view.csrf ?? '')}">`;
}

/** A whole page. */
export function page(view: PageView, title: string, current: 'inbox' | 'audit' | 'live' | 'sign-in', body: string): string {
  const b = view.base;
  const nav = view.who
    ? `<nav><a href="${b}/inbox"${current === 'inbox' ? ' aria-current="page"' : ''}>Approvals</a> · <a href="${b}/live"${current === 'live' ? ' aria-current="page"' : ''}>Live calls</a> · <a href="${b}/audit"${current === 'audit' ? ' aria-current="page"' : ''}>Audit log</a></nav>
<span class="who">${inert(principalName(view.who.principal))} · ${view.who.role}${view.who.tenant !== null ? ` · tenant ${inert(view.who.tenant)}` : ''}</span>
<form method="post" action="${b}/sign-out">${csrfField(view)}<button type="submit">Sign out</button></form>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
${view.refreshTo ? `<meta http-equiv="refresh" content="${view.refreshAfter ?? 0};url=${inert(view.refreshTo)}">` : ''}<title>${inert(title)} · tool-envelope console</title>
<link rel="stylesheet" href="${b}/assets/console.css"><script src="${b}/assets/console.js" defer></script></head>
<body><header><strong>tool-envelope</strong>${nav}</header><main>${body}</main></body></html>`;
}
