/**
 * What the `audit` sub-verbs share: opening the store named by `--store`,
 * the filter flags, time parsing, aligned terminal tables and writing to a
 * stream with back-pressure.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ERROR_CATEGORIES } from 'tool-envelope/core';
import type { LooseFileWarning } from '../store/private-file.js';
import { auditFilterFrom } from '../store/audit-filter.js';
import { AUDIT_STATUSES } from '../store/query.js';
import type { AuditFilter, Store } from '../store/types.js';
import { EXIT, type CliIo } from './io.js';
import { usageError, type ParsedVerbArgs } from './args.js';
import { type Cell, TABLE_WIDTH, fitTable } from './table.js';
import { printable } from '../store/printable.js';

// Text from the log (tool names, codes, ids) must not move the cursor or break the layout.
export { printable, printableJson } from '../store/printable.js';

/** The `--store`/`--pg-schema` flags every audit sub-verb takes. */
export const STORE_OPTIONS = {
  store: { type: 'string' },
  'pg-schema': { type: 'string' },
  wide: { type: 'boolean' },
} as const;

/** The filter flags of `list`, `stats`, `export` and `report`. */
export const FILTER_OPTIONS = {
  tool: { type: 'string', multiple: true },
  status: { type: 'string', multiple: true },
  category: { type: 'string', multiple: true },
  session: { type: 'string' },
  run: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
} as const;

/** Help text of the store flags, shared by every sub-verb's help. */
export const STORE_HELP = `  --store PATH|URL      SQLite file or postgres:// URL (default: $TOOL_ENVELOPE_STORE, else ./tool-envelope.db)
  --pg-schema NAME      PostgreSQL schema holding the tables (default public)
  --wide                tables show every cell whole (default: fit 100 columns)`;

/** Help text of the filter flags. */
export const FILTER_HELP = `  --tool NAME           only this tool (repeatable)
  --status S[,S...]     ${AUDIT_STATUSES.join(', ')} (repeatable)
  --category C[,C...]   error category: ${ERROR_CATEGORIES.join(', ')}
  --session ID          only calls of this session
  --run ID              only calls of this run
  --since TIME          calls started at or after TIME: ISO date/time, epoch ms, or an age like 15m, 2h, 7d
  --until TIME          calls started before TIME (same forms)`;

/** Hides a password in a connection URL before it is printed. */
export function redactLocation(location: string): string {
  return location.replace(/^(postgres(?:ql)?:\/\/[^:/@]+):[^@]*@/i, '$1:***@');
}

function isPostgres(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/**
 * Opens the store the flags name, or writes why it cannot and returns {@link EXIT.USAGE}.
 * A SQLite file must exist: an audit query never creates an empty log by accident.
 */
export async function openAuditStore(verb: string, values: ParsedVerbArgs['values'], io: CliIo): Promise<{ store: Store; location: string } | number> {
  const given = (values.store as string | undefined) ?? io.env.TOOL_ENVELOPE_STORE ?? './tool-envelope.db';
  const schema = values['pg-schema'] as string | undefined;
  const pg = isPostgres(given);
  if (schema !== undefined && !pg) return usageError(verb, io, '--pg-schema applies to a postgres:// store only');
  const location = pg || given === 'memory' || given === ':memory:' ? given : resolve(io.cwd, given.replace(/^sqlite:/i, ''));
  if (!pg && location !== 'memory' && location !== ':memory:' && !existsSync(location)) {
    io.stderr.write(`tool-envelope ${verb}: no store at ${location} (give --store PATH|URL, or set TOOL_ENVELOPE_STORE)\n`);
    return EXIT.USAGE;
  }
  try {
    const { openStore } = await import('../store/index.js');
    // A command's few writes (a decision, a prune) commit on its own thread: a writer thread, made to
    // keep inserts off a gateway's calls, would cost a short-lived command more to start than it saves.
    const options = { ...(schema !== undefined && { schema }), onLooseFile: looseFileWarning(verb, io), auditWorker: false };
    return { store: await openStore(location, options), location };
  } catch (e) {
    io.stderr.write(`tool-envelope ${verb}: cannot open the store ${redactLocation(location)}: ${e instanceof Error ? e.message : String(e)}\n`);
    return EXIT.USAGE;
  }
}

/**
 * Opens the store, runs `body`, and closes the store whatever happens. Store
 * failures while running become exit code 2 with one line on stderr.
 */
export async function withStore(
  verb: string,
  values: Record<string, unknown>,
  io: CliIo,
  body: (store: Store, location: string) => Promise<number>,
): Promise<number> {
  const opened = await openAuditStore(verb, values as never, io);
  if (typeof opened === 'number') return opened;
  try {
    return await body(opened.store, opened.location);
  } catch (e) {
    io.stderr.write(`tool-envelope ${verb}: ${e instanceof Error ? e.message : String(e)}\n`);
    return EXIT.USAGE;
  } finally {
    await opened.store.close().catch(() => undefined);
  }
}

/**
 * The exit code of a command stopped by a signal while it waited: 130 for SIGINT, 143 for SIGTERM.
 * main.ts aborts `io.signal` with "received SIGINT" or "received SIGTERM" as its reason.
 */
export function interruptedExit(signal: AbortSignal): number {
  const reason: unknown = signal.reason;
  return /SIGTERM/.test(reason instanceof Error ? reason.message : String(reason)) ? 143 : 130;
}

/** Reports a private file (store, report, summary, export) that group or others can read, on the verb's stderr. */
export function looseFileWarning(verb: string, io: CliIo): LooseFileWarning {
  return (file, mode) =>
    io.stderr.write(`tool-envelope ${verb}: warning: ${file} has mode ${mode.toString(8).padStart(4, '0')}: group or others can read it (chmod 600 ${file})\n`);
}

/** Builds an {@link AuditFilter} from the filter flags, or writes a usage error and returns {@link EXIT.USAGE}. */
export function parseFilter(verb: string, values: ParsedVerbArgs['values'], io: CliIo, now = Date.now()): AuditFilter | number {
  const filter = auditFilterFrom(values, '--', now);
  return 'error' in filter ? usageError(verb, io, filter.error) : filter;
}

/** Parses a positive integer flag, or writes a usage error and returns `undefined`. */
export function positiveInt(verb: string, io: CliIo, flag: string, value: unknown, fallback: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (typeof value === 'string' && /^\d+$/.test(value) && Number.isSafeInteger(n) && n >= 1 && n <= max) return n;
  usageError(verb, io, `--${flag} must be an integer from 1 to ${max} (got '${String(value)}')`);
  return undefined;
}

/** Aligned `key  value` lines, values made {@link printable}. */
export function facts(pairs: readonly (readonly [string, string])[]): string {
  const w = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(w)}  ${printable(v)}`).join('\n') + '\n';
}

/**
 * Formats rows as an aligned text table: a header, a rule, one line per row, fitting 100 columns
 * unless `wide` (see table.ts). Columns named in `right` are right-aligned (numbers); an `id`
 * column is never shortened; session, expiry, decider, principals, why, max ms and created are left out first.
 */
export function table(header: readonly string[], rows: readonly (readonly Cell[])[], right: ReadonlySet<string> = new Set(), wide = false): string {
  return fitTable(
    header,
    // A FitCell makes its own parts printable.
    rows.map((r) => r.map((c) => (typeof c === 'string' ? printable(c) : c))),
    { ...FIT, right, width: wide ? Number.POSITIVE_INFINITY : TABLE_WIDTH },
  );
}

// By header, across the audit tables: ids are copied whole, statuses ('completed (replay)') read
// whole; times keep their end; the columns
// `show` (or --wide) gives are the first to go, then in stats the maximum latency and p95 (p50 and
// p99 stay), so that tool names are not cut, and in approvals the creation time, so that the
// arguments read.
const FIT = {
  keep: new Set(['id', 'status']),
  cutStart: new Set(['started (UTC)', 'created (UTC)', 'expires (UTC)']),
  optional: ['session', 'expires (UTC)', 'decided by', 'principals', 'why', 'max ms', 'p95 ms', 'created (UTC)'],
};

/** A time for terminal output: `YYYY-MM-DD HH:MM:SS.mmm` in UTC. */
export function shortTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

/**
 * Writes `chunk`, waiting for `drain` when the stream's buffer is full, so a
 * large export never piles up in memory.
 */
export async function writeChunk(stream: NodeJS.WritableStream, chunk: string): Promise<void> {
  if (stream.write(chunk)) return;
  await new Promise<void>((resolveDrain, reject) => {
    const onError = (e: unknown): void => {
      stream.off('drain', onDrain);
      reject(e);
    };
    const onDrain = (): void => {
      stream.off('error', onError);
      resolveDrain();
    };
    stream.once('drain', onDrain);
    stream.once('error', onError);
  });
}
