/**
 * `tool-envelope audit report --html FILE`: one self-contained HTML page with
 * charts (latency per tool, outcomes and error categories over time) and the
 * slowest and failing calls with their envelopes.
 */
import { resolve } from 'node:path';
import { collectReportData, renderHtmlReport } from '../report/index.js';
import { parseVerbArgs, usageError } from './args.js';
import { writePrivateFile } from '../store/private-file.js';
import {
  FILTER_HELP,
  FILTER_OPTIONS,
  STORE_HELP,
  STORE_OPTIONS,
  looseFileWarning,
  parseFilter,
  positiveInt,
  redactLocation,
  withStore,
} from './audit-common.js';
import { EXIT, type CliIo } from './io.js';
import { createProgress } from './progress.js';

/** Help of `audit report`. */
export const help = `tool-envelope audit report --html FILE [filters] [--title TEXT] [--slowest N] [--failing N]

Write one self-contained HTML page (no network access needed, no script) with inline SVG charts:
latency distribution per tool, outcomes and error categories over time, a per-tool table, and the
slowest and the latest failing calls with their envelopes expandable. Aggregates are computed here,
so the page stays small (a few hundred kB) however many calls the log holds. Shows progress on a
terminal (stderr), quiet otherwise.

Options:
${STORE_HELP}
  --html FILE           where to write the page (required)
  --title TEXT          page title
  --slowest N           slowest calls listed (default 20, max 1000)
  --failing N           latest failing calls listed (default 50, max 1000)
Filters:
${FILTER_HELP}

Examples:
  tool-envelope audit report --html report.html --store ./tool-envelope.db
  tool-envelope audit report --html errors.html --since 24h --tool fs_write --title "fs_write, last day"
`;

/** Runs `audit report`. */
export async function run(args: string[], io: CliIo): Promise<number> {
  const verb = 'audit report';
  const p = parseVerbArgs(
    verb,
    args,
    { ...STORE_OPTIONS, ...FILTER_OPTIONS, html: { type: 'string' }, title: { type: 'string' }, slowest: { type: 'string' }, failing: { type: 'string' } },
    io,
  );
  if (typeof p === 'number') return p;
  if (p.positionals.length) return usageError(verb, io, `unexpected argument '${p.positionals[0]}'`);
  const html = p.values.html;
  if (typeof html !== 'string' || html === '') return usageError(verb, io, '--html FILE is required');
  const filter = parseFilter(verb, p.values, io);
  if (typeof filter === 'number') return filter;
  const slowest = positiveInt(verb, io, 'slowest', p.values.slowest, 20, 1000);
  const failing = positiveInt(verb, io, 'failing', p.values.failing, 50, 1000);
  if (slowest === undefined || failing === undefined) return EXIT.USAGE;
  return withStore(verb, p.values, io, async (store, location) => {
    const progress = createProgress(io.stderr, 'report');
    let data: Awaited<ReturnType<typeof collectReportData>>;
    try {
      data = await collectReportData(store, filter, {
        slowest,
        failing,
        source: redactLocation(location),
        ...(typeof p.values.title === 'string' && { title: p.values.title }),
        onRecord: () => progress.tick(),
      });
    } finally {
      progress.done();
    }
    const page = renderHtmlReport(data);
    const target = resolve(io.cwd, html);
    try {
      await writePrivateFile(target, page, looseFileWarning(verb, io));
    } catch (e) {
      io.stderr.write(`tool-envelope ${verb}: cannot write ${html}: ${(e as Error).message}\n`);
      return EXIT.USAGE;
    }
    io.stderr.write(`report of ${data.total} calls written to ${html} (${Math.ceil(Buffer.byteLength(page) / 1024)} kB)\n`);
    return EXIT.OK;
  });
}
