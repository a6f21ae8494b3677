/**
 * The approvals inbox: the pending requests an identity may see, each with its tool, its arguments
 * as the audit log stores them (redacted), its principal chain and how much of it was verified, the
 * rule that paused it, its age and expiry; approve and reject forms for approvers and admins only.
 */
import type { Principal } from 'tool-envelope/core';
import type { ApprovalRequest, Store } from '../store/types.js';
import type { ConsoleIdentity } from './identity.js';
import { inert, inertJson } from './inert.js';
import { csrfField, page, type PageView } from './layout.js';
import { scanVisible } from './scan.js';
import { visibleTo } from './tenancy.js';
import { duration, utc } from './time.js';

const PAGE = 25;

/** True when the identity may decide approval requests. */
export function canDecide(who: ConsoleIdentity): boolean {
  return who.role === 'approver' || who.role === 'admin';
}

/**
 * The arguments of a paused call as its audit record stores them (redacted), or `undefined` when
 * the log holds no record of it: the request's own envelope is not redacted and is never shown.
 */
async function loggedArgs(store: Store, a: ApprovalRequest): Promise<unknown> {
  const { records } = await store.listAudit({ toolCallId: a.toolCallId }, { limit: 20 });
  const r = records.find((x) => x.approvalId === a.id) ?? records[0];
  return r ? (r.callEnvelope.args ?? {}) : undefined;
}

function chainText(chain: readonly Principal[], verified: unknown): string {
  if (chain.length === 0) return '<span class="muted">none</span>';
  const n = typeof verified === 'number' ? verified : undefined;
  return chain
    .map((p, i) => {
      const mark = n === undefined ? '' : i < n ? ' <span class="muted">(verified)</span>' : ' <span class="muted">(declared)</span>';
      return `${inert(`${p.kind}:${p.id}`)}${p.tenant_id ? ` <span class="muted">tenant ${inert(p.tenant_id)}</span>` : ''}${mark}`;
    })
    .join(' → ');
}

function card(view: PageView, who: ConsoleIdentity, a: ApprovalRequest, args: unknown, now: number): string {
  const d = a.policyDecision;
  const rule = typeof d?.rule === 'string' ? d.rule : null;
  const expires =
    a.expiresAt === null ? 'never' : a.expiresAt <= now ? `${utc(a.expiresAt)} (expired)` : `${utc(a.expiresAt)} (in ${duration(a.expiresAt - now)})`;
  const forms = canDecide(who)
    ? `<form class="decide" method="post" action="${view.base}/approvals/${encodeURIComponent(a.id)}/decide">${csrfField(view)}
<input type="text" name="reason" maxlength="1000" placeholder="Reason (recorded)" aria-label="Reason">
<button class="approve" type="submit" name="decision" value="approve">Approve</button>
<button class="reject" type="submit" name="decision" value="reject">Reject</button></form>`
    : '<p class="muted">Viewers cannot decide.</p>';
  return `<section class="card" data-approval="${inert(a.id)}" data-state="pending"><h2 title="${inert(a.tool, 500)}">${inert(a.tool, 200)}</h2><dl>
<dt>Request</dt><dd>${inert(a.id)}</dd>
<dt>Principals</dt><dd>${chainText(a.principalChain, d?.verifiedPrincipals)}</dd>
<dt>Paused by</dt><dd>${rule !== null ? `rule ${inert(rule)}: ` : ''}${inert(a.reason)}</dd>
<dt>Age</dt><dd>${duration(now - a.createdAt)} <span class="muted">(since ${utc(a.createdAt)})</span></dd>
<dt>Expires</dt><dd>${expires}</dd>
<dt>Session</dt><dd>${a.sessionId === null ? '<span class="muted">none</span>' : inert(a.sessionId)}</dd>
</dl><div class="muted">Arguments (as logged)</div>${args === undefined ? '<p class="muted">Not shown: the audit log holds no record of this call.</p>' : `<pre>${inertJson(args)}</pre>`}
${forms}</section>`;
}

/** The inbox page's HTML. */
export async function inboxPage(store: Store, view: PageView & { who: ConsoleIdentity }, cursor: string | null, notice?: string): Promise<string> {
  const now = Date.now();
  const who = view.who;
  const { rows, nextCursor } = await scanVisible(
    async (c) => {
      const p = await store.listApprovals({ state: 'pending', limit: PAGE, cursor: c });
      return { rows: p.approvals, nextCursor: p.nextCursor };
    },
    (a) => visibleTo(who, a.principalChain),
    cursor,
    PAGE,
  );
  const cards: string[] = [];
  for (const a of rows) cards.push(card(view, who, a, await loggedArgs(store, a), now));
  // The cards follow their requests by a short poll (inbox-live.ts); the page works without it.
  const body = `<h1>Approvals waiting</h1>${notice ? `<p class="notice">${inert(notice)}</p>` : ''}
<p id="inbox-new" hidden></p><div id="inbox" data-updates="${view.base}/inbox/updates">
${cards.length === 0 ? '<p class="muted" id="empty">No request is waiting for a decision.</p>' : cards.join('\n')}</div>
${nextCursor ? `<p><a href="${view.base}/inbox?cursor=${encodeURIComponent(nextCursor)}">Older requests →</a></p>` : ''}`;
  return page(view, 'Approvals', 'inbox', body);
}
