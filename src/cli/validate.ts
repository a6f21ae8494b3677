/**
 * `tool-envelope validate`: checks envelopes (one JSON document or an NDJSON
 * stream per input) against their contract and prints a verdict per document,
 * with the JSON pointer and rule of every violation.
 *
 * @example
 * ```sh
 * tool-envelope validate --dialect auto envelopes.ndjson
 * ```
 */
import type { Issue } from '../core/errors.js';
import { validateEnvelope, type Dialect } from '../core/validate.js';
import { oneOf, parseVerbArgs, usageError } from './args.js';
import { eachDocument, type InputDocument } from './input.js';
import { EXIT, type CliIo } from './io.js';
import { formatIssues } from './report.js';

/**
 * The dialects `validate --dialect` accepts: `auto` detects the contract of each document.
 *
 * @example
 * ```ts
 * VALIDATE_DIALECTS.includes('contextos-call'); // true
 * ```
 */
export const VALIDATE_DIALECTS: readonly Dialect[] = ['auto', 'mcec', 'dw', 'contextos', 'contextos-call', 'contextos-result', 'mcec@2026-07', 'dw@14'];

/**
 * `--help` text.
 *
 * @example
 * ```ts
 * io.stdout.write(help);
 * ```
 */
export const help = `Usage: tool-envelope validate [--dialect DIALECT] [--format text|json] FILE... | -

Checks every envelope against its contract. Each input is one JSON document or
an NDJSON stream (one document per line; blank lines are skipped): when the whole
text parses as one JSON value it is one document, otherwise each line is one.
NDJSON is streamed line by line. A line that is not JSON is reported invalid
(invalid-json) and checking goes on.

Options:
  --dialect auto|mcec|dw|contextos|contextos-call|contextos-result|mcec@2026-07|dw@14
                       contract to check against (default auto: detect per document)
  --format text|json   text: one line per document, FILE:LINE: valid (CONTRACT) or
                       FILE:LINE: invalid (CONTRACT): POINTER RULE MESSAGE; ...
                       json: one JSON object per document (NDJSON):
                       {"file","line","valid","contract","issues":[{"code","path","message","params"}]}
  -h, --help           this text

Progress (documents/s) is shown on stderr when stderr is a terminal.

Examples:
  tool-envelope validate envelopes.ndjson
  tool-envelope validate --dialect dw --format json result.json
  cat results.ndjson | tool-envelope validate -

Exit codes: 0 every document valid, 1 any document invalid,
            2 usage error or an input that cannot be read.
`;

/**
 * One verdict, as printed by `--format json`.
 *
 * @example
 * ```ts
 * const v: Verdict = { file: 'a.ndjson', line: 3, valid: true, contract: 'mcec', issues: [] };
 * ```
 */
export interface Verdict {
  file: string;
  line: number;
  valid: boolean;
  /** The contract checked (the detected one with `auto`), or null when none was detected. */
  contract: string | null;
  issues: Issue[];
}

function verdictOf(file: string, doc: InputDocument, dialect: Dialect): Verdict {
  if (doc.error !== undefined) {
    const issues = doc.error.issues.length > 0 ? doc.error.issues : [{ code: doc.error.code, path: '', message: doc.error.message }];
    return { file, line: doc.line, valid: false, contract: dialect === 'auto' ? null : dialect, issues };
  }
  const r = validateEnvelope(doc.value, dialect);
  return { file, line: doc.line, valid: r.valid, contract: r.contract ?? (dialect === 'auto' ? null : dialect), issues: r.issues };
}

function formatText(v: Verdict): string {
  const where = `${v.file}:${v.line}`;
  const contract = v.contract ?? 'unknown';
  return v.valid ? `${where}: valid (${contract})\n` : `${where}: invalid (${contract}): ${formatIssues(v.issues)}\n`;
}

/**
 * Runs the verb; returns the exit code.
 *
 * @example
 * ```ts
 * const code = await run(['--format', 'json', 'a.ndjson'], io);
 * ```
 */
export async function run(args: string[], io: CliIo): Promise<number> {
  const parsed = parseVerbArgs('validate', args, { dialect: { type: 'string' }, format: { type: 'string' } }, io);
  if (typeof parsed === 'number') return parsed;
  const dialect = oneOf('validate', io, 'dialect', parsed.values.dialect, VALIDATE_DIALECTS, 'auto');
  if (dialect === undefined) return EXIT.USAGE;
  const format = oneOf('validate', io, 'format', parsed.values.format, ['text', 'json'] as const, 'text');
  if (format === undefined) return EXIT.USAGE;
  if (parsed.positionals.length === 0) return usageError('validate', io, 'give one or more FILEs, or - for stdin');

  let exit: number = EXIT.OK;
  for (const arg of parsed.positionals) {
    if (io.signal.aborted) break;
    const readable = await eachDocument('validate', arg, io, (doc, name) => {
      const v = verdictOf(name, doc, dialect);
      if (!v.valid && exit === EXIT.OK) exit = EXIT.INVALID;
      return format === 'json' ? JSON.stringify(v) + '\n' : formatText(v);
    });
    if (!readable) exit = EXIT.USAGE;
  }
  return exit;
}
