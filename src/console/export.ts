/**
 * Export of the audit list's current filter as NDJSON (each record whole, as the store reads it) or
 * CSV (one line a call, its facts), streamed from the store's pages with back-pressure, scoped to the
 * viewer's tenant in the store's query. Every string comes from the log and is hostile: a CSV cell
 * that a spreadsheet would take as a formula (starting with = + - @, tab or carriage return) is
 * prefixed with a quote, and every cell is quoted.
 */
import type { ServerResponse } from 'node:http';
import { auditFilterFrom } from '../store/audit-filter.js';
import { filterText } from './audit-list.js';
import type { AuditRecord, Store } from '../store/types.js';
import { head } from './headers.js';
import type { ConsoleIdentity } from './identity.js';
import { scopedFilter } from './tenancy.js';

const COLUMNS = [
  'id',
  'started_at',
  'tool',
  'status',
  'category',
  'error_code',
  'latency_ms',
  'principals',
  'session_id',
  'run_id',
  'tool_call_id',
  'approval_id',
  'replay',
];

/** One CSV cell: quoted, inner quotes doubled, and a would-be formula prefixed with `'`. */
export function csvCell(value: unknown): string {
  let s = value === null || value === undefined ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return `"${s.replace(/"/g, '""')}"`;
}

function csvLine(r: AuditRecord): string {
  const cells = [
    r.id,
    new Date(r.startedAt).toISOString(),
    r.tool,
    r.status,
    r.category,
    r.errorCode,
    r.latencyMs,
    r.principalChain.map((p) => `${p.kind}:${p.id}${p.tenant_id ? `@${p.tenant_id}` : ''}`).join(' > '),
    r.sessionId,
    r.runId,
    r.toolCallId,
    r.approvalId,
    r.replay === true,
  ];
  return `${cells.map(csvCell).join(',')}\r\n`;
}

/** Streams the export; answers 400 for a filter the store refuses. */
export async function exportAudit(store: Store, who: ConsoleIdentity, query: URLSearchParams, format: 'ndjson' | 'csv', res: ServerResponse): Promise<void> {
  const filter = auditFilterFrom(filterText(query));
  if ('error' in filter) {
    head(res, 400, 'text/plain; charset=utf-8');
    return void res.end(`${filter.error}\n`);
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  head(res, 200, format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8', {
    'content-disposition': `attachment; filename="audit-${stamp}.${format}"`,
  });
  let gone = false;
  res.once('close', () => (gone = true));
  if (format === 'csv') res.write(`${COLUMNS.map(csvCell).join(',')}\r\n`);
  for await (const r of store.iterateAudit(scopedFilter(who, filter), 500)) {
    if (gone) return;
    const line = format === 'csv' ? csvLine(r) : `${JSON.stringify(r)}\n`;
    if (!res.write(line)) await drained(res);
  }
  res.end();
}

/** Resolves when the socket takes more, or is gone (each listener removed, so a long export piles none up). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
