/**
 * The audit log's pages beyond the list and a record: stats, export, the session failure summary
 * and chain verification, routed here so console.ts carries one hook for reads and one for the
 * verify POST.
 */
import type { ServerResponse } from 'node:http';
import type { OperatorKey } from '../store/operator-key.js';
import type { Store } from '../store/types.js';
import { exportAudit } from './export.js';
import { failuresPage } from './failures.js';
import { redirect, send } from './headers.js';
import type { ConsoleIdentity } from './identity.js';
import { inert } from './inert.js';
import { page, type PageView } from './layout.js';
import { statsPage } from './stats.js';
import { ChainChecks } from './verify.js';

const HTML = 'text/html; charset=utf-8';

/** The routes of one console. */
export class AuditExtras {
  private readonly checks: ChainChecks;

  constructor(
    private readonly store: Store,
    operatorKey: () => Promise<OperatorKey>,
  ) {
    this.checks = new ChainChecks(store, operatorKey);
  }

  /** Answers a GET of one of these pages; false when `rest` is none of them. */
  async read(res: ServerResponse, rest: string, view: PageView & { who: ConsoleIdentity }, query: URLSearchParams): Promise<boolean> {
    const bad = (message: string, status = 400): void =>
      send(res, status, HTML, page(view, 'Bad request', 'audit', `<p class="notice error">${inert(message)}</p>`));
    if (rest === '/stats') {
      const html = await statsPage(this.store, view, query);
      typeof html === 'string' ? send(res, 200, HTML, html) : bad(html.bad);
      return true;
    }
    if (rest === '/export.ndjson' || rest === '/export.csv') {
      await exportAudit(this.store, view.who, query, rest.endsWith('.csv') ? 'csv' : 'ndjson', res);
      return true;
    }
    if (rest === '/failures') {
      const session = query.get('session')?.trim();
      if (!session) bad('Name a session: /failures?session=ID');
      else send(res, 200, HTML, await failuresPage(this.store, view, session));
      return true;
    }
    if (rest === '/verify') {
      // The chains cover every tenant's records: an admin's page.
      if (view.who.role !== 'admin') bad('Only an admin can verify the whole log.', 403);
      else send(res, 200, HTML, this.checks.page(view));
      return true;
    }
    return false;
  }

  /** The verify POST (CSRF and origin already checked by the console): starts a run, then shows its page. */
  verify(res: ServerResponse, who: ConsoleIdentity, base: string): void {
    if (who.role !== 'admin') send(res, 403, 'text/plain; charset=utf-8', 'Only an admin can verify the whole log.\n');
    else if (!this.checks.start(who)) send(res, 409, 'text/plain; charset=utf-8', `A ${this.store.kind} store has no hash chain to verify.\n`);
    else redirect(res, `${base}/verify`);
  }
}
