/**
 * A session's failure summary: the failed calls of one session (those with a failure status, the
 * rule `audit failure-summary` and `audit stats` share, report/record-kind.ts: a paused call is
 * waiting, not failed, though it carries a category), grouped by category then tool, with how many, when first and last, and the latest error code and
 * record, read through the store's session index and scoped to the viewer's tenant in the query.
 * A session is read up to a bound; the page says when it stopped there.
 */
import { FAILURE_STATUSES } from '../report/record-kind.js';
import type { AuditRecord, Store } from '../store/types.js';
import type { ConsoleIdentity } from './identity.js';
import { inert } from './inert.js';
import { page, type PageView } from './layout.js';
import { scopedFilter } from './tenancy.js';
import { utc } from './time.js';

/** The group of failures without a category. */
const UNCATEGORISED = '(no category)';

/** Failed records read at most. */
const BOUND = 20_000;

interface Group {
  tool: string;
  count: number;
  first: number;
  last: AuditRecord;
}

/** The failure summary page of `session` (the query's `session`). */
export async function failuresPage(store: Store, view: PageView & { who: ConsoleIdentity }, session: string): Promise<string> {
  const byCategory = new Map<string, Map<string, Group>>();
  let read = 0;
  let cursor: string | null = null;
  do {
    const p = await store.listAudit(scopedFilter(view.who, { sessionId: session, status: [...FAILURE_STATUSES] }), { cursor, limit: 1000, order: 'asc' });
    for (const r of p.records) {
      // An interrupted call has no category: nobody wrote how it ended.
      const c = r.category ?? UNCATEGORISED;
      let tools = byCategory.get(c);
      if (!tools) byCategory.set(c, (tools = new Map()));
      const g = tools.get(r.tool);
      if (g) {
        g.count++;
        g.last = r;
      } else tools.set(r.tool, { tool: r.tool, count: 1, first: r.startedAt, last: r });
    }
    read += p.records.length;
    cursor = p.nextCursor;
  } while (cursor && read < BOUND);
  const list = (extra: Record<string, string>): string => `${view.base}/audit?${inert(new URLSearchParams({ session, ...extra }).toString(), 4000)}`;
  const sections = [...byCategory]
    .map(([category, tools]) => ({
      category,
      tools: [...tools.values()].sort((a, b) => b.count - a.count),
      total: [...tools.values()].reduce((n, g) => n + g.count, 0),
    }))
    .sort((a, b) => b.total - a.total)
    .map(
      ({
        category,
        tools,
        total,
      }) => `<section class="card"><h2>${category === UNCATEGORISED ? inert(category) : `<a href="${list({ category })}">${inert(category)}</a>`}: ${total} failed</h2>
<table class="log"><thead><tr><th>tool</th><th>failed</th><th>first</th><th>last</th><th>last error</th></tr></thead><tbody>${tools
        .map(
          (g) =>
            `<tr><td title="${inert(g.tool, 500)}"><a href="${list(category === UNCATEGORISED ? { status: FAILURE_STATUSES.join(','), tool: g.tool } : { category, tool: g.tool })}">${inert(g.tool, 200)}</a></td><td>${g.count}</td><td>${utc(g.first).slice(0, 19)}</td><td>${utc(g.last.startedAt).slice(0, 19)}</td><td><a href="${view.base}/audit/${encodeURIComponent(g.last.id)}">${inert(g.last.errorCode ?? g.last.status, 200)}</a></td></tr>`,
        )
        .join('\n')}</tbody></table></section>`,
    )
    .join('\n');
  const body = `<h1>Failures of session <code>${inert(session, 300)}</code></h1>
<p class="muted">${read} failed calls${cursor ? ` (stopped after ${BOUND}: narrow by time in the <a href="${list({ status: FAILURE_STATUSES.join(',') })}">audit list</a>)` : ''}. <a href="${list({})}">Every call of this session</a>.</p>
${sections || '<p class="muted">No failed call in this session.</p>'}`;
  return page(view, 'Session failures', 'audit', body);
}
