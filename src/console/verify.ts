/**
 * The log's hash chains checked from the console, per writer: what `tool-envelope audit verify`
 * does (verifyAuditChain over the store's chain reader, with the operator key), started by an
 * admin's POST and run in the background, one run at a time per console, so a page never waits on
 * a pass over millions of records: the page shows the run's progress (refreshing itself, no script)
 * and then the last result, kept in memory with when and by whom it ran.
 */
import { CHAIN_PURPOSE, type ChainReader, type ChainReport, verifyAuditChain, WRITER_SPAN } from '../store/chain.js';
import type { OperatorKey } from '../store/operator-key.js';
import type { Store } from '../store/types.js';
import { type ConsoleIdentity, principalName } from './identity.js';
import { inert } from './inert.js';
import { csrfField, page, type PageView } from './layout.js';
import { utc } from './time.js';

interface WriterResult {
  writer: number;
  keyId: string;
  createdAt: number;
  headN: number;
  records: number;
  problems: number;
}

interface Run {
  startedAt: number;
  by: string;
  checked: number;
  endedAt?: number;
  report?: ChainReport;
  writers?: WriterResult[];
  error?: string;
}

/** Problems listed on the page (the report keeps up to 1000). */
const SHOWN = 100;

/** The chain checks of one console. */
export class ChainChecks {
  private run: Run | undefined;

  constructor(
    private readonly store: Store,
    private readonly key: () => Promise<OperatorKey>,
  ) {}

  /** Starts a run unless one is under way; false when the store has no chain. */
  start(who: ConsoleIdentity): boolean {
    const reader = (this.store as { chainReader?: () => ChainReader }).chainReader?.();
    if (!reader) return false;
    if (this.run && this.run.endedAt === undefined) return true;
    const run: Run = { startedAt: Date.now(), by: principalName(who.principal), checked: 0 };
    this.run = run;
    void this.check(run, reader);
    return true;
  }

  private async check(run: Run, reader: ChainReader): Promise<void> {
    const counts = new Map<number, number>();
    // Counts each writer's records as the check reads them (a record's place says its writer).
    const counting: ChainReader = {
      ...reader,
      origin: () => reader.origin(),
      writers: () => reader.writers(),
      links: () => reader.links(),
      unchained: () => reader.unchained(),
      chained: async function* () {
        for await (const r of reader.chained()) {
          const w = Math.floor(r.pos / WRITER_SPAN);
          counts.set(w, (counts.get(w) ?? 0) + 1);
          run.checked++;
          yield r;
        }
      },
    };
    try {
      const key = await this.key();
      const writers = await reader.writers();
      const report = await verifyAuditChain(counting, key.derive(CHAIN_PURPOSE));
      run.report = report;
      run.writers = writers.map((w) => ({
        writer: w.writer,
        keyId: w.keyId,
        createdAt: w.createdAt,
        headN: w.headN,
        records: counts.get(w.writer) ?? 0,
        problems: report.problems.filter((p) => p.writer === w.writer).length,
      }));
    } catch (e) {
      run.error = (e as Error).message;
    } finally {
      run.endedAt = Date.now();
    }
  }

  /** The verify page. */
  page(view: PageView): string {
    const run = this.run;
    const base = view.base;
    const button = `<form method="post" action="${base}/verify">${csrfField(view)}<button type="submit" class="approve">Verify the log now</button></form>`;
    if (!run) return page(view, 'Verify the log', 'audit', `<h1>Verify the log</h1><p class="muted">Not checked since this console started.</p>${button}`);
    if (run.endedAt === undefined) {
      return page(
        { ...view, refreshTo: `${base}/verify`, refreshAfter: 2 },
        'Verify the log',
        'audit',
        `<h1>Verify the log</h1><p class="notice" id="verify-running">Checking: ${run.checked} records read since ${utc(run.startedAt)} (started by ${inert(run.by)}). This page reloads itself.</p>`,
      );
    }
    const head = `<p class="muted">Last run ${utc(run.startedAt)}, ${((run.endedAt - run.startedAt) / 1000).toFixed(1)} s, started by ${inert(run.by)}.</p>`;
    if (run.error !== undefined || !run.report) {
      return page(
        view,
        'Verify the log',
        'audit',
        `<h1>Verify the log</h1>${head}<p class="notice error">The check failed: ${inert(run.error ?? 'no report')}</p>${button}`,
      );
    }
    const r = run.report;
    const rows = (run.writers ?? [])
      .map(
        (w) =>
          `<tr class="${w.problems ? 'bad' : 'good'}"><td>${w.writer}</td><td>${w.problems ? 'TAMPERED' : 'ok'}</td><td>${w.records}</td><td>${w.headN}</td><td>${w.problems}</td><td>${inert(w.keyId, 80)}</td><td>${utc(w.createdAt)}</td></tr>`,
      )
      .join('\n');
    const loose = r.problems.filter((p) => p.writer === undefined).length;
    const problems = r.problems
      .slice(0, SHOWN)
      .map(
        (p) =>
          `<tr><td>${p.writer ?? '—'}</td><td>${inert(p.kind)}</td><td>${p.id ? `<a href="${base}/audit/${encodeURIComponent(p.id)}">${inert(p.id, 120)}</a>` : ''}</td><td>${inert(p.detail, 500)}</td></tr>`,
      )
      .join('\n');
    const body = `<h1>Verify the log</h1>${head}
<p class="notice${r.ok ? '' : ' error'}" id="verify-result">${r.ok ? 'ok' : 'TAMPERED'}: ${r.verified} records verified (${r.writers} writers), ${r.unverifiable} written before the chain (unverifiable), ${r.problems.length} problems${loose ? `, ${loose} of them in no writer's chain` : ''}.</p>
<table class="writers"><thead><tr><th>writer</th><th>status</th><th>records read</th><th>head (last record)</th><th>problems</th><th>key</th><th>registered</th></tr></thead><tbody>${rows}</tbody></table>
${problems ? `<h2>Problems${r.problems.length > SHOWN ? ` (first ${SHOWN})` : ''}</h2><table class="problems"><thead><tr><th>writer</th><th>kind</th><th>record</th><th>detail</th></tr></thead><tbody>${problems}</tbody></table>` : ''}
${button}`;
    return page(view, 'Verify the log', 'audit', body);
  }
}
