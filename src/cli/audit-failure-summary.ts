/**
 * `tool-envelope audit failure-summary SESSION`: writes `failure-summary.md`
 * (MCEC): the failing call and its envelope, the last good observation, the
 * calls before it and the artifacts.
 */
import { resolve } from 'node:path';
import { buildFailureSummary } from '../report/failure-summary.js';
import { parseVerbArgs, usageError } from './args.js';
import { writePrivateFile } from '../store/private-file.js';
import { STORE_HELP, STORE_OPTIONS, looseFileWarning, positiveInt, printable, withStore } from './audit-common.js';
import { EXIT, type CliIo } from './io.js';

/** Help of `audit failure-summary`. */
export const help = `tool-envelope audit failure-summary SESSION [--call ID] [--before N] [--out FILE]

Write what a bug report needs about a session's failure, from the audit log alone (no rerun):
the failing call with its arguments and envelopes (MCEC and ContextOS), the last good observation
(the envelope's error.lastObservation, else the last successful call before it), the calls before
it, and the artifacts they produced. Exit code 1 when the session has no failing call.

Options:
${STORE_HELP}
  --call ID             the failing call to summarise (audit id or tool call id; default: the latest failure)
  --before N            earlier calls listed (default 10, max 1000)
  --out FILE            where to write (default failure-summary.md; '-' for stdout)

Examples:
  tool-envelope audit failure-summary sess-42 --store ./tool-envelope.db
  tool-envelope audit failure-summary sess-42 --call aud_9c1e... --out - | less
`;

/** Runs `audit failure-summary`. */
export async function run(args: string[], io: CliIo): Promise<number> {
  const verb = 'audit failure-summary';
  const p = parseVerbArgs(verb, args, { ...STORE_OPTIONS, call: { type: 'string' }, before: { type: 'string' }, out: { type: 'string' } }, io);
  if (typeof p === 'number') return p;
  if (p.positionals.length !== 1) return usageError(verb, io, 'give exactly one SESSION id');
  const session = p.positionals[0]!;
  const before = positiveInt(verb, io, 'before', p.values.before, 10, 1000);
  if (before === undefined) return EXIT.USAGE;
  const out = (p.values.out as string | undefined) ?? 'failure-summary.md';
  return withStore(verb, p.values, io, async (store) => {
    const summary = await buildFailureSummary(store, session, { before, ...(typeof p.values.call === 'string' && { call: p.values.call }) });
    if (!summary) {
      io.stderr.write(
        `tool-envelope ${verb}: ${p.values.call ? `no call ${JSON.stringify(p.values.call)} in session` : 'no failing call in session'} ${JSON.stringify(session)}\n`,
      );
      return EXIT.INVALID;
    }
    if (out === '-') {
      io.stdout.write(summary.markdown);
      return EXIT.OK;
    }
    try {
      await writePrivateFile(resolve(io.cwd, out), summary.markdown, looseFileWarning(verb, io));
    } catch (e) {
      io.stderr.write(`tool-envelope ${verb}: cannot write ${out}: ${(e as Error).message}\n`);
      return EXIT.USAGE;
    }
    io.stderr.write(`failure summary of ${printable(summary.failing.tool)} (${printable(summary.failing.id)}) written to ${out}\n`);
    return EXIT.OK;
  });
}
