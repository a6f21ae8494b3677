/**
 * `tool-envelope convert`: converts result envelopes between contracts through
 * the canonical model; converted documents go to stdout, the loss report to stderr.
 */
import { CONTRACT_IDS, type ContractId, type Dialect, convert, detectContract, validateEnvelope, isToolEnvelopeError } from 'tool-envelope/core';
import { maxIssuesOf, oneOf, parseVerbArgs, usageError } from './args.js';
import { type Printed, eachDocument, noDocuments } from './input.js';
import { EXIT, type CliIo } from './io.js';
import { formatIssues, moreIssues } from './report.js';

/** `--help` text. */
export const help = `Usage: tool-envelope convert --to CONTRACT [--from auto|CONTRACT]
                              [--strict] [--preview-limit BYTES] [--max-issues N] FILE | -

Converts tool-result envelopes to another contract. The input is one JSON
document (written out pretty-printed) or an NDJSON stream (written out as NDJSON,
one converted document per input document, in order). A document already in the
target contract (a ContextOS call envelope with --to contextos included) is
written out unchanged.

What the target contract cannot carry is reported on stderr, one line per loss:
  doc N: POINTER CODE: REASON
where N counts the input's documents from 1 and POINTER locates the field in the
canonical model. A document that is not JSON or breaks its contract is reported
as 'doc N (line L): invalid ...' and is not written; so is text that is not
UTF-8 or holds a number outside the double range (with its byte offset). An input
with no document is an error.

CONTRACT is mcec, dw, contextos, or a later revision: mcec@2026-07, dw@14.

Options:
  --to CONTRACT          target contract (required)
  --from CONTRACT|auto   source contract (default auto: detect per document)
  --strict               refuse lossy conversions: such a document is not written
                         (its losses are still reported) and the exit code is 1
  --preview-limit BYTES  Durable Workflow payload_preview byte limit (default 4096)
  --max-issues N         list at most N issues or losses per document (default 100)
  -h, --help             this text

Examples:
  tool-envelope convert --to dw result.json
  tool-envelope convert --to contextos --strict results.ndjson > out.ndjson
  cat mcec.ndjson | tool-envelope convert --from mcec --to dw - 2> losses.txt

Exit codes: 0 every document converted, 1 any document invalid (or lossy with
            --strict) or an input with no document, 2 usage error or an input
            that cannot be read, 130/143 interrupted (SIGINT/SIGTERM).
`;

/** Runs the verb; returns the exit code. */
export async function run(args: string[], io: CliIo): Promise<number> {
  const parsed = parseVerbArgs(
    'convert',
    args,
    {
      to: { type: 'string' },
      from: { type: 'string' },
      strict: { type: 'boolean' },
      'preview-limit': { type: 'string' },
      'max-issues': { type: 'string' },
    },
    io,
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (values.to === undefined) return usageError('convert', io, '--to is required');
  const to = oneOf('convert', io, 'to', values.to, CONTRACT_IDS, 'mcec');
  if (to === undefined) return EXIT.USAGE;
  const from = oneOf<ContractId | 'auto'>('convert', io, 'from', values.from, ['auto', ...CONTRACT_IDS], 'auto');
  if (from === undefined) return EXIT.USAGE;
  let previewLimitBytes: number | undefined;
  if (values['preview-limit'] !== undefined) {
    const raw = String(values['preview-limit']);
    previewLimitBytes = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(previewLimitBytes)) {
      return usageError('convert', io, `--preview-limit must be a non-negative integer (got '${raw}')`);
    }
  }
  const maxIssues = maxIssuesOf('convert', io, values['max-issues']);
  if (maxIssues === undefined) return EXIT.USAGE;
  if (positionals.length !== 1) return usageError('convert', io, 'give exactly one FILE, or - for stdin');
  const strict = values.strict === true;

  let exit: number = EXIT.OK;
  const options = { to, strict, ...(previewLimitBytes === undefined ? {} : { previewLimitBytes }) };
  const count = await eachDocument('convert', positionals[0]!, io, (doc) => {
    const label = `doc ${doc.index}`;
    const out = (document: unknown): string => (doc.ndjson ? JSON.stringify(document) + '\n' : JSON.stringify(document, null, 2) + '\n');
    const failed = (stderr: string): Printed => {
      exit = EXIT.INVALID;
      return { stderr };
    };
    if (doc.error !== undefined) return failed(`${label} (line ${doc.line}): invalid: ${formatIssues(doc.error.issues)}\n`);
    // Checked first with a bounded issue list: a document with a million violations stays cheap.
    const checked = validateEnvelope(doc.value, from, { maxIssues });
    // `--from contextos` checks the call-or-result union: the marker tells which one it is.
    const source = checked.contract === 'contextos' && detectContract(doc.value) === 'contextos-call' ? 'contextos-call' : (checked.contract ?? from);
    if (!checked.valid) {
      return failed(
        `${label} (line ${doc.line}): invalid (${source === 'auto' ? 'unknown' : source}): ${formatIssues(checked.issues)}${moreIssues(checked.unlisted)}\n`,
      );
    }
    // Within its own contract every envelope, a ContextOS call included, is its own conversion.
    if (familyOf(source) === to) return { stdout: out(doc.value) };
    if (source === 'contextos-call') {
      return failed(
        `${label} (line ${doc.line}): invalid (contextos-call): (document) unknown-contract a ContextOS call envelope is not a tool result; only --to contextos keeps it\n`,
      );
    }
    try {
      const r = convert(doc.value, { ...options, from: familyOf(source) });
      return {
        stdout: out(r.document),
        stderr: lossLines(
          label,
          r.losses.map((l) => ({ path: l.path, code: l.code, message: l.reason })),
          maxIssues,
        ),
      };
    } catch (e) {
      if (isToolEnvelopeError(e, 'lossy-conversion')) return failed(`${lossLines(label, e.issues, maxIssues)}${label}: not converted: lossy and --strict\n`);
      if (isToolEnvelopeError(e, 'invalid-envelope') || isToolEnvelopeError(e, 'unknown-contract')) {
        return failed(`${label} (line ${doc.line}): invalid (${source}): ${formatIssues(e.issues.slice(0, maxIssues))}\n`);
      }
      throw e;
    }
  });
  if (count === undefined) return EXIT.USAGE;
  if (count === 0 && !io.signal.aborted) {
    io.stderr.write(noDocuments('convert', positionals[0]!));
    return EXIT.INVALID;
  }
  return exit;
}

function familyOf(contract: Exclude<Dialect, 'auto'> | 'auto'): ContractId {
  return contract === 'contextos-call' || contract === 'contextos-result' ? 'contextos' : (contract as ContractId);
}

function lossLines(label: string, losses: readonly { path: string; code: string; message: string }[], maxIssues: number): string {
  let text = '';
  for (const loss of losses.slice(0, maxIssues)) text += `${label}: ${loss.path} ${loss.code}: ${loss.message}\n`;
  if (losses.length > maxIssues) text += `${label}: ... and ${losses.length - maxIssues} more losses (raise --max-issues to list them)\n`;
  return text;
}
