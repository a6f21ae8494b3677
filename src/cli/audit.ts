/**
 * `tool-envelope audit`: query the call log of a store (SQLite file or
 * PostgreSQL URL): list, show, stats, export, approvals, failure-summary, report.
 */
import { resolve } from 'node:path';
import { isFailureStatus } from '../report/record-kind.js';
import { statsCounts } from '../report/stats-counts.js';
import { createPrivateWriteStream } from '../store/private-file.js';
import type { AuditRecord, AuditStatus, Store, ToolAuditStats } from '../store/types.js';
import { oneOf, parseVerbArgs, usageError } from './args.js';
import {
  FILTER_HELP,
  FILTER_OPTIONS,
  STORE_HELP,
  STORE_OPTIONS,
  facts,
  looseFileWarning,
  parseFilter,
  positiveInt,
  printable,
  printableJson,
  shortTime,
  table,
  withStore,
  writeChunk,
} from './audit-common.js';
import { EXIT, type CliIo } from './io.js';
import { createProgress } from './progress.js';
import { suggest } from './suggest.js';

const LIST_HELP = `tool-envelope audit list [filters] [--limit N] [--order desc|asc] [--cursor C] [--format text|json|ndjson]

List calls from the audit log, newest first. A replay (the stored outcome returned again for a
repeated idempotency key; the tool did not run again) reads '(replay)' after its status.

Options:
${STORE_HELP}
  --limit N             at most N calls (default 50, max 10000)
  --order desc|asc      newest first (default) or oldest first
  --cursor C            continue after a previous page (its "next page" cursor)
  --format F            text (aligned table, default), json ({records, nextCursor}), ndjson (one record per line)
Filters:
${FILTER_HELP}

Examples:
  tool-envelope audit list --store ./tool-envelope.db --status error,failed --since 1h
  tool-envelope audit list --store postgres://app@db/agents --tool fs_write --session s-42 --format json
`;

const SHOW_HELP = `tool-envelope audit show ID [--format text|json]

Show one call: its facts, its ContextOS call envelope and its result envelope.
ID is an audit id (aud_...) or a tool call id (the latest record of that call is shown).

Options:
${STORE_HELP}
  --format F            text (default) or json (the whole audit record)

Examples:
  tool-envelope audit show aud_5f0c... --store ./tool-envelope.db
  tool-envelope audit show 3b241101e2bb42558caf4136c566a962 --format json
`;

const STATS_HELP = `tool-envelope audit stats [filters] [--format text|json]

Per tool: calls, replays, pauses, errors and error rate by category, latency p50/p95/p99/max. A
replay (the stored outcome of a repeated idempotency key; the tool did not run again) is counted
under replays, not as a call; a pause for an approver under paused (the decided call's final
record is the call).

Options:
${STORE_HELP}
  --format F            text (aligned table, default) or json
Filters:
${FILTER_HELP}

Examples:
  tool-envelope audit stats --store ./tool-envelope.db
  tool-envelope audit stats --since 24h --format json
`;

const EXPORT_HELP = `tool-envelope audit export [filters] [--format ndjson] [--out FILE]

Write every matching audit record, oldest first, one JSON object per line. Shows progress on a
terminal (stderr), quiet otherwise.

Options:
${STORE_HELP}
  --format ndjson       the only format (default)
  --out FILE            write to FILE instead of stdout
Filters:
${FILTER_HELP}

Examples:
  tool-envelope audit export --store ./tool-envelope.db --format ndjson > calls.ndjson
  tool-envelope audit export --since 7d --status error --out errors.ndjson
`;

/** Help of the `audit` verb (all sub-verbs). */
export const help = `tool-envelope audit <sub-verb> [options]

Query the call log that the gateway and the governed runtime write.

Sub-verbs:
  list              list calls (filters: tool, status, category, session, run, time range)
  show ID           one call with its call and result envelopes
  stats             per tool: calls, error rate by category, p50/p95/p99 latency
  export            every matching record as NDJSON
  approvals         list pending approvals; approve or reject one by id, as the approver you are
  failure-summary   write failure-summary.md for a session's failing call (MCEC)
  report            write a self-contained HTML report with charts
  verify            check the log against its signed hash chains: edited, deleted, inserted records

The approver of 'approvals approve' and 'reject' is not named on the command line: the approver is
the OS user running the command (user:NAME), or with --tokens the identity of TOOL_ENVELOPE_TOKEN.

Every sub-verb takes --store PATH|URL (SQLite file or postgres:// URL; default $TOOL_ENVELOPE_STORE,
else ./tool-envelope.db) and --help. Run 'tool-envelope audit <sub-verb> --help' for its options.

Exit codes: 0 done; 1 nothing to act on or refused (unknown id, no failing call, approval not
pending or expired, an approver who may not decide it, approved call failed, a tampered log); 2
usage error, unreadable store, I/O error, a wrong operator key (verify); 130/143 'approvals approve
--wait' stopped by SIGINT/SIGTERM while it waits.

Examples:
  tool-envelope audit list --store ./tool-envelope.db --status error --since 1h
  tool-envelope audit stats --store postgres://app@db/agents
  tool-envelope audit approvals approve apr_5f0c... --reason "ticket OPS-12" --wait 60
  tool-envelope audit failure-summary sess-42 --out failure-summary.md
  tool-envelope audit report --html report.html --since 7d
`;

type SubVerb = { help: string; run(args: string[], io: CliIo): Promise<number> };

const SUB_VERBS: Record<string, () => Promise<SubVerb>> = {
  list: async () => ({ help: LIST_HELP, run: runList }),
  show: async () => ({ help: SHOW_HELP, run: runShow }),
  stats: async () => ({ help: STATS_HELP, run: runStats }),
  export: async () => ({ help: EXPORT_HELP, run: runExport }),
  approvals: () => import('./audit-approvals.js'),
  'failure-summary': () => import('./audit-failure-summary.js'),
  report: () => import('./audit-report.js'),
  verify: () => import('./audit-verify.js'),
};

/** The help text for `tool-envelope audit <sub-verb> --help` (the verb's help when no sub-verb is named). */
export async function helpFor(args: string[]): Promise<string> {
  const load = args[0] === undefined ? undefined : SUB_VERBS[args[0]];
  return load ? (await load()).help : help;
}

/** Runs `tool-envelope audit`. */
export async function run(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined) {
    io.stderr.write(help);
    return EXIT.USAGE;
  }
  const load = SUB_VERBS[sub];
  if (!load) {
    const near = suggest(sub, Object.keys(SUB_VERBS));
    return usageError(
      'audit',
      io,
      `unknown sub-verb '${printable(sub.slice(0, 40))}'${near ? ` (did you mean '${near}'?)` : ''} (one of ${Object.keys(SUB_VERBS).join(', ')})`,
    );
  }
  const verb = await load();
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(verb.help);
    return EXIT.OK;
  }
  return verb.run(rest, io);
}

function categoryCell(r: Pick<AuditRecord, 'category' | 'errorCode'>): string {
  if (!r.category) return '';
  return r.errorCode ? `${r.category}/${r.errorCode}` : r.category;
}

async function runList(args: string[], io: CliIo): Promise<number> {
  const verb = 'audit list';
  const p = parseVerbArgs(
    verb,
    args,
    { ...STORE_OPTIONS, ...FILTER_OPTIONS, limit: { type: 'string' }, order: { type: 'string' }, cursor: { type: 'string' }, format: { type: 'string' } },
    io,
  );
  if (typeof p === 'number') return p;
  if (p.positionals.length) return usageError(verb, io, `unexpected argument '${p.positionals[0]}'`);
  const filter = parseFilter(verb, p.values, io);
  if (typeof filter === 'number') return filter;
  const limit = positiveInt(verb, io, 'limit', p.values.limit, 50, 10_000);
  const order = oneOf(verb, io, 'order', p.values.order, ['desc', 'asc'] as const, 'desc');
  const format = oneOf(verb, io, 'format', p.values.format, ['text', 'json', 'ndjson'] as const, 'text');
  if (limit === undefined || order === undefined || format === undefined) return EXIT.USAGE;
  return withStore(verb, p.values, io, async (store) => {
    const page = await store.listAudit(filter, { limit, order, cursor: (p.values.cursor as string | undefined) ?? null });
    if (format === 'json') {
      io.stdout.write(`${printableJson(JSON.stringify({ records: page.records, nextCursor: page.nextCursor }, null, 2))}\n`);
      return EXIT.OK;
    }
    if (format === 'ndjson') {
      for (const r of page.records) await writeChunk(io.stdout, `${printableJson(JSON.stringify(r))}\n`);
      return EXIT.OK;
    }
    if (page.records.length === 0) {
      io.stdout.write('No calls match.\n');
      return EXIT.OK;
    }
    // A replay is marked: it returned a stored outcome, the tool did not run again.
    const rows = page.records.map((r) => [
      shortTime(r.startedAt),
      r.id,
      r.tool,
      r.replay ? `${r.status} (replay)` : r.status,
      categoryCell(r),
      String(r.latencyMs),
      r.sessionId ?? '',
    ]);
    io.stdout.write(table(['started (UTC)', 'id', 'tool', 'status', 'category/code', 'ms', 'session'], rows, new Set(['ms']), p.values.wide === true));
    if (page.nextCursor) io.stdout.write(`\n${page.records.length} shown; next page: --cursor ${page.nextCursor}\n`);
    return EXIT.OK;
  });
}

/** Finds a record by audit id, else the latest record of a tool call id. */
export async function findRecord(store: Store, id: string): Promise<AuditRecord | undefined> {
  const byId = await store.getAudit(id);
  if (byId) return byId;
  const { records } = await store.listAudit({ toolCallId: id }, { limit: 1, order: 'desc' });
  return records[0];
}

async function runShow(args: string[], io: CliIo): Promise<number> {
  const verb = 'audit show';
  const p = parseVerbArgs(verb, args, { ...STORE_OPTIONS, format: { type: 'string' } }, io);
  if (typeof p === 'number') return p;
  if (p.positionals.length !== 1) return usageError(verb, io, 'give exactly one ID (an audit id or a tool call id)');
  const format = oneOf(verb, io, 'format', p.values.format, ['text', 'json'] as const, 'text');
  if (format === undefined) return EXIT.USAGE;
  const id = p.positionals[0]!;
  return withStore(verb, p.values, io, async (store) => {
    const r = await findRecord(store, id);
    if (!r) {
      io.stderr.write(`tool-envelope ${verb}: no call with id ${JSON.stringify(id)}\n`);
      return EXIT.INVALID;
    }
    if (format === 'json') {
      io.stdout.write(`${printableJson(JSON.stringify(r, null, 2))}\n`);
      return EXIT.OK;
    }
    const pairs: [string, string][] = [
      ['id', r.id],
      ['tool', r.tool],
      ['status', r.status],
      ['category', categoryCell(r) || '-'],
      ['started', `${shortTime(r.startedAt)} UTC`],
      ['latency', `${r.latencyMs} ms`],
      ['tool call', r.toolCallId],
      ['run', r.runId],
      ['trace', r.traceId],
      ['session', r.sessionId ?? '-'],
      ['principals', r.principalChain.map((x) => `${x.kind}:${x.id}`).join(' → ') || '-'],
      ['policy', r.policyDecision ? `${r.policyDecision.effect} (${r.policyDecision.reason})` : '-'],
    ];
    // Which rule of which policy decided (a reloaded gateway runs several over its life).
    const decided = r.policyDecision;
    if (typeof decided?.rule === 'string') pairs.push(['policy rule', decided.rule]);
    if (typeof decided?.policyDigest === 'string') pairs.push(['policy digest', `sha256:${decided.policyDigest}`]);
    if (r.idempotencyKey) pairs.push(['idempotency key', r.idempotencyKey + (r.replay ? ' (replayed)' : '')]);
    if (r.approvalId) pairs.push(['approval', r.approvalId]);
    io.stdout.write(facts(pairs));
    io.stdout.write(`\nCall envelope:\n${printableJson(JSON.stringify(r.callEnvelope, null, 2))}\n`);
    io.stdout.write(`\nResult envelope:\n${printableJson(JSON.stringify(r.resultEnvelope, null, 2))}\n`);
    return EXIT.OK;
  });
}

function errorCount(s: ToolAuditStats): number {
  let n = 0;
  for (const [status, count] of Object.entries(s.byStatus)) if (isFailureStatus(status as AuditStatus)) n += count ?? 0;
  return n;
}

function rate(part: number, whole: number): string {
  return whole === 0 ? '0.0%' : `${((100 * part) / whole).toFixed(1)}%`;
}

function ms(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

async function runStats(args: string[], io: CliIo): Promise<number> {
  const verb = 'audit stats';
  const p = parseVerbArgs(verb, args, { ...STORE_OPTIONS, ...FILTER_OPTIONS, format: { type: 'string' } }, io);
  if (typeof p === 'number') return p;
  if (p.positionals.length) return usageError(verb, io, `unexpected argument '${p.positionals[0]}'`);
  const filter = parseFilter(verb, p.values, io);
  if (typeof filter === 'number') return filter;
  const format = oneOf(verb, io, 'format', p.values.format, ['text', 'json'] as const, 'text');
  if (format === undefined) return EXIT.USAGE;
  return withStore(verb, p.values, io, async (store) => {
    const stats = await statsCounts(store, filter);
    if (format === 'json') {
      const rows = stats.map(({ failures, ...s }) => ({
        ...s,
        errors: errorCount(s),
        errorRate: s.count ? errorCount(s) / s.count : 0,
        errorsByCategory: failures,
      }));
      io.stdout.write(`${printableJson(JSON.stringify(rows, null, 2))}\n`);
      return EXIT.OK;
    }
    if (stats.length === 0) {
      io.stdout.write('No calls match.\n');
      return EXIT.OK;
    }
    const header = ['tool', 'calls', 'replays', 'paused', 'errors', 'error rate', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'errors by category'];
    const rows = stats.map((s) => {
      const cats = Object.entries(s.failures)
        .sort((a, b) => (b[1] ?? 0) - (a[1] ?? 0))
        .map(([c, n]) => `${c} ${n} (${rate(n ?? 0, s.count)})`)
        .join(', ');
      return [
        s.tool,
        String(s.count),
        String(s.replays),
        String(s.paused),
        String(errorCount(s)),
        rate(errorCount(s), s.count),
        ms(s.latencyMs.p50),
        ms(s.latencyMs.p95),
        ms(s.latencyMs.p99),
        ms(s.latencyMs.max),
        cats,
      ];
    });
    const calls = stats.reduce((n, s) => n + s.count, 0);
    const replays = stats.reduce((n, s) => n + s.replays, 0);
    const paused = stats.reduce((n, s) => n + s.paused, 0);
    const errors = stats.reduce((n, s) => n + errorCount(s), 0);
    rows.push(['(all)', String(calls), String(replays), String(paused), String(errors), rate(errors, calls), '', '', '', '', '']);
    io.stdout.write(
      table(header, rows, new Set(['calls', 'replays', 'paused', 'errors', 'error rate', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms']), p.values.wide === true),
    );
    return EXIT.OK;
  });
}

async function runExport(args: string[], io: CliIo): Promise<number> {
  const verb = 'audit export';
  const p = parseVerbArgs(verb, args, { ...STORE_OPTIONS, ...FILTER_OPTIONS, format: { type: 'string' }, out: { type: 'string' } }, io);
  if (typeof p === 'number') return p;
  if (p.positionals.length) return usageError(verb, io, `unexpected argument '${p.positionals[0]}'`);
  const filter = parseFilter(verb, p.values, io);
  if (typeof filter === 'number') return filter;
  const format = oneOf(verb, io, 'format', p.values.format, ['ndjson'] as const, 'ndjson');
  if (format === undefined) return EXIT.USAGE;
  return withStore(verb, p.values, io, async (store) => {
    const outPath = p.values.out as string | undefined;
    let out: NodeJS.WritableStream = io.stdout;
    if (outPath !== undefined) {
      let file: ReturnType<typeof createPrivateWriteStream>;
      try {
        file = createPrivateWriteStream(resolve(io.cwd, outPath), looseFileWarning(verb, io));
      } catch (e) {
        io.stderr.write(`tool-envelope ${verb}: cannot write ${outPath}: ${(e as Error).message}\n`);
        return EXIT.USAGE;
      }
      try {
        await new Promise<void>((ok, fail) => {
          file.once('open', () => ok());
          file.once('error', fail);
        });
      } catch (e) {
        io.stderr.write(`tool-envelope ${verb}: cannot write ${outPath}: ${(e as Error).message}\n`);
        return EXIT.USAGE;
      }
      out = file;
    }
    const progress = createProgress(io.stderr, 'export');
    let n = 0;
    try {
      for await (const r of store.iterateAudit(filter, 1000)) {
        if (io.signal.aborted) break;
        await writeChunk(out, `${JSON.stringify(r)}\n`);
        progress.tick();
        n++;
      }
    } finally {
      progress.done();
      if (out !== io.stdout) await new Promise<void>((done) => (out as NodeJS.WritableStream).end(done));
    }
    if (outPath !== undefined) io.stderr.write(`${n} records written to ${outPath}\n`);
    return io.signal.aborted ? EXIT.USAGE : EXIT.OK;
  });
}
