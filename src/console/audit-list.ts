/**
 * The audit log list: the CLI's filters (tool, status, category, session, run, since, until) from
 * the query, newest first, keyset paging with the store's cursors, only what the identity may see
 * (its tenant is part of the store's query).
 */
import { auditFilterFrom } from '../store/audit-filter.js';
import type { AuditRecord, Store } from '../store/types.js';
import type { ConsoleIdentity } from './identity.js';
import { inert } from './inert.js';
import { page, type PageView } from './layout.js';
import { scopedFilter } from './tenancy.js';
import { utc } from './time.js';

const PAGE = 50;
/** The audit filters a console page takes from its query (the CLI's flags), in the order of its form. */
export const FIELDS = ['tool', 'status', 'category', 'session', 'run', 'since', 'until'] as const;

/**
 * The filter values a query names (trimmed, empty ones left out): what the list, stats and export read and keep in their links.
 */
export function filterText(query: URLSearchParams): Record<string, string> {
  const text: Record<string, string> = {};
  for (const f of FIELDS) {
    const v = query.get(f)?.trim();
    if (v) text[f] = v;
  }
  return text;
}

function row(view: PageView, r: AuditRecord): string {
  const who = r.principalChain.map((p) => `${p.kind}:${p.id}`).join(' → ');
  const href = `${view.base}/audit/${encodeURIComponent(r.id)}`;
  return `<tr><td>${utc(r.startedAt).slice(0, 19)}</td><td><a href="${href}">${inert(r.tool, 200)}</a></td><td>${inert(r.status)}</td><td title="${inert(r.errorCode ?? '', 200)}">${inert(r.category ?? '')}${r.errorCode ? ` / ${inert(r.errorCode, 200)}` : ''}</td><td title="${inert(who, 300)}">${inert(who, 300)}</td><td>${r.latencyMs} ms</td></tr>`;
}

/** The audit list page, or `{ bad }` for a filter or cursor the store refuses. */
export async function auditListPage(store: Store, view: PageView & { who: ConsoleIdentity }, query: URLSearchParams): Promise<string | { bad: string }> {
  const text = filterText(query);
  const filter = auditFilterFrom(text);
  if ('error' in filter) return { bad: filter.error };
  const who = view.who;
  let result: { rows: AuditRecord[]; nextCursor: string | null };
  try {
    // The tenant is part of the store's query: another tenant's rows are never read, and a page is full.
    const p = await store.listAudit(scopedFilter(who, filter), { cursor: query.get('cursor') || null, limit: PAGE });
    result = { rows: p.records, nextCursor: p.nextCursor };
  } catch (e) {
    return { bad: (e as Error).message };
  }
  const inputs = FIELDS.map((f) => `<input name="${f}" placeholder="${f}" aria-label="${f}" value="${inert(text[f] ?? '', 500)}">`).join('');
  const next = new URLSearchParams(text);
  if (result.nextCursor) next.set('cursor', result.nextCursor);
  const here = inert(new URLSearchParams(text).toString());
  const tools = [
    `<a id="stats" href="${view.base}/stats?${here}">Stats</a>`,
    `<a id="export-ndjson" href="${view.base}/export.ndjson?${here}">Export NDJSON</a>`,
    `<a id="export-csv" href="${view.base}/export.csv?${here}">Export CSV</a>`,
    ...(text.session
      ? [`<a id="failures" href="${view.base}/failures?${inert(new URLSearchParams({ session: text.session }).toString())}">Failures of this session</a>`]
      : []),
    ...(who.role === 'admin' ? [`<a id="verify" href="${view.base}/verify">Verify the log</a>`] : []),
  ];
  const body = `<h1>Audit log</h1>
<form class="filters" method="get" action="${view.base}/audit">${inputs}<button type="submit">Filter</button></form>
<p class="tools">${tools.join(' ')}</p>
<table class="log"><thead><tr><th>started (UTC)</th><th>tool</th><th>status</th><th>error</th><th>principals</th><th>latency</th></tr></thead>
<tbody>${result.rows.map((r) => row(view, r)).join('\n')}</tbody></table>
${result.rows.length === 0 ? '<p class="muted">No record matches.</p>' : ''}
${result.nextCursor ? `<p><a id="older" href="${view.base}/audit?${inert(next.toString())}">Older records →</a></p>` : ''}`;
  return page(view, 'Audit log', 'audit', body);
}
