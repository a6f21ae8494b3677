/**
 * The live calls page: the stream's filters as a form (applied by the server, in the stream's
 * query), and an empty table that the page's script (live-assets.ts) fills from the stream with
 * `textContent`. Nothing of a call is in the HTML itself.
 */
import type { ConsoleIdentity } from './identity.js';
import { inert } from './inert.js';
import { page, type PageView } from './layout.js';
import type { LiveFilter } from './live-hub.js';

const FIELDS = ['tool', 'status', 'category', 'principal'] as const;

/** The live page's HTML. */
export function livePage(view: PageView & { who: ConsoleIdentity }, filter: LiveFilter): string {
  const b = view.base;
  const q = new URLSearchParams();
  for (const f of FIELDS) if (filter[f]) q.set(f, filter[f]);
  const inputs = FIELDS.map((f) => `<input name="${f}" placeholder="${f}" aria-label="${f}" value="${inert(filter[f] ?? '', 200)}">`).join('');
  const stream = `${b}/live/events${q.size ? `?${q}` : ''}`;
  const body = `<h1>Live calls</h1>
<form class="filters" method="get" action="${b}/live">${inputs}<button type="submit">Filter</button></form>
<p class="muted"><span id="live-state">Connecting…</span> · calls of every gateway writing this store, newest first${view.who.role === 'admin' ? '' : `, of tenant ${inert(view.who.tenant ?? '(none)', 200)} only`}</p>
<table class="log live" id="live" data-stream="${inert(stream, 2_000)}" data-audit="${b}/audit/"><thead><tr><th>time (UTC)</th><th>tool</th><th>phase</th><th>status</th><th>error</th><th>principals</th><th>latency</th><th>ids</th></tr></thead>
<tbody></tbody></table>
<p class="muted" id="live-empty">No call yet: calls appear here as they start and end.</p>`;
  return page(view, 'Live calls', 'live', body);
}
