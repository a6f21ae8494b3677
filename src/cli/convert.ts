/**
 * `tool-envelope convert`: converts result envelopes between contracts through
 * the canonical model; converted documents go to stdout, the loss report to stderr.
 *
 * @example
 * ```sh
 * tool-envelope convert --to contextos results.ndjson > contextos.ndjson
 * ```
 */
import { CONTRACT_IDS, type ContractId } from '../core/contract.js';
import { convert } from '../core/convert.js';
import { isToolEnvelopeError } from '../core/errors.js';
import { detectContract } from '../core/validate.js';
import { oneOf, parseVerbArgs, usageError } from './args.js';
import { eachDocument } from './input.js';
import { EXIT, type CliIo } from './io.js';
import { formatIssues } from './report.js';

/**
 * `--help` text.
 *
 * @example
 * ```ts
 * io.stdout.write(help);
 * ```
 */
export const help = `Usage: tool-envelope convert --to CONTRACT [--from auto|CONTRACT]
                              [--strict] [--preview-limit BYTES] FILE | -

Converts tool-result envelopes to another contract. The input is one JSON
document (written out pretty-printed) or an NDJSON stream (written out as NDJSON,
one converted document per input document, in order).

What the target contract cannot carry is reported on stderr, one line per loss:
  doc N: POINTER CODE: REASON
where N counts the input's documents from 1 and POINTER locates the field in the
canonical model. A document that is not JSON or breaks its contract is reported
as 'doc N (line L): invalid ...' and is not written.

CONTRACT is mcec, dw, contextos, or a later revision: mcec@2026-07, dw@14.

Options:
  --to CONTRACT          target contract (required)
  --from CONTRACT|auto   source contract (default auto: detect per document)
  --strict               refuse lossy conversions: such a document is not written
                         (its losses are still reported) and the exit code is 1
  --preview-limit BYTES  Durable Workflow payload_preview byte limit (default 4096)
  -h, --help             this text

Examples:
  tool-envelope convert --to dw result.json
  tool-envelope convert --to contextos --strict results.ndjson > out.ndjson
  cat mcec.ndjson | tool-envelope convert --from mcec --to dw - 2> losses.txt

Exit codes: 0 every document converted, 1 any document invalid (or lossy with
            --strict), 2 usage error or an input that cannot be read.
`;

/**
 * Runs the verb; returns the exit code.
 *
 * @example
 * ```ts
 * const code = await run(['--to', 'dw', 'a.json'], io);
 * ```
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  const parsed = parseVerbArgs(
    'convert',
    args,
    { to: { type: 'string' }, from: { type: 'string' }, strict: { type: 'boolean' }, 'preview-limit': { type: 'string' } },
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
  if (positionals.length !== 1) return usageError('convert', io, 'give exactly one FILE, or - for stdin');
  const strict = values.strict === true;

  let exit: number = EXIT.OK;
  const options = { to, from, strict, ...(previewLimitBytes === undefined ? {} : { previewLimitBytes }) };
  const readable = await eachDocument('convert', positionals[0]!, io, (doc) => {
    const label = `doc ${doc.index}`;
    if (doc.error !== undefined) {
      io.stderr.write(`${label} (line ${doc.line}): invalid: ${formatIssues(doc.error.issues)}\n`);
      exit = EXIT.INVALID;
      return undefined;
    }
    try {
      const r = convert(doc.value, options);
      for (const loss of r.losses) io.stderr.write(`${label}: ${loss.path} ${loss.code}: ${loss.reason}\n`);
      return doc.ndjson ? JSON.stringify(r.document) + '\n' : JSON.stringify(r.document, null, 2) + '\n';
    } catch (e) {
      if (isToolEnvelopeError(e, 'lossy-conversion')) {
        for (const loss of e.issues) io.stderr.write(`${label}: ${loss.path} ${loss.code}: ${loss.message}\n`);
        io.stderr.write(`${label}: not converted: lossy and --strict\n`);
      } else if (isToolEnvelopeError(e, 'invalid-envelope') || isToolEnvelopeError(e, 'unknown-contract')) {
        const contract = from === 'auto' ? (detectContract(doc.value) ?? 'unknown') : from;
        io.stderr.write(`${label} (line ${doc.line}): invalid (${contract}): ${formatIssues(e.issues)}\n`);
      } else throw e;
      exit = EXIT.INVALID;
      return undefined;
    }
  });
  if (!readable) return EXIT.USAGE;
  return exit;
}
