/**
 * `tool-envelope validate`: checks envelopes (one JSON document or an NDJSON
 * stream per input) against their contract and prints a verdict per document,
 * with the JSON pointer and rule of every violation.
 */
import { type Issue, validateEnvelope, type Dialect } from 'tool-envelope/core';
import { maxIssuesOf, oneOf, parseVerbArgs, usageError } from './args.js';
import type { InputDocument } from './documents.js';
import { eachDocument, noDocuments } from './input.js';
import { EXIT, type CliIo } from './io.js';
import { formatIssues, moreIssues } from './report.js';

/** The dialects `validate --dialect` accepts: `auto` detects the contract of each document. */
export const VALIDATE_DIALECTS: readonly Dialect[] = ['auto', 'mcec', 'dw', 'contextos', 'contextos-call', 'contextos-result', 'mcec@2026-07', 'dw@14'];

/** `--help` text. */
export const help = `Usage: tool-envelope validate [--dialect DIALECT] [--format text|json] [--max-issues N] FILE... | -

Checks every envelope against its contract. Each input is one JSON document or
an NDJSON stream (one document per line; blank lines are skipped): when its first
line is JSON by itself, each line is one document, streamed; otherwise the whole
text is one document. A line that is not JSON (or not UTF-8, or with a number
outside the double range) is reported invalid (invalid-json, with its byte
offset) and checking goes on. A document over 64 MiB is reported too-large and
the rest of that input is not read. An input with no document is an error.

Options:
  --dialect auto|mcec|dw|contextos|contextos-call|contextos-result|mcec@2026-07|dw@14
                       contract to check against (default auto: detect per document)
  --format text|json   text: one line per document, FILE:LINE: valid (CONTRACT) or
                       FILE:LINE: invalid (CONTRACT): POINTER RULE MESSAGE; ...
                       json: one JSON object per document (NDJSON):
                       {"file","line","valid","contract","issues":[{"code","path","message","params"}],"unlisted"}
  --max-issues N       list at most N issues per document (default 100); the count
                       of the rest is printed ("unlisted" in JSON)
  -h, --help           this text

Progress (documents/s) is shown on stderr when stderr is a terminal.

Examples:
  tool-envelope validate envelopes.ndjson
  tool-envelope validate --dialect dw --format json result.json
  cat results.ndjson | tool-envelope validate -

Exit codes: 0 every document valid, 1 any document invalid or an input with no
            document, 2 usage error or an input that cannot be read,
            130/143 interrupted (SIGINT/SIGTERM).
`;

/** One verdict, as printed by `--format json`. */
export interface Verdict {
  file: string;
  line: number;
  valid: boolean;
  /** The contract checked (the detected one with `auto`), or null when none was detected. */
  contract: string | null;
  issues: Issue[];
  /** How many more issues were found than `issues` lists (`--max-issues`); absent when none. */
  unlisted?: number;
}

function verdictOf(file: string, doc: InputDocument, dialect: Dialect, maxIssues: number): Verdict {
  if (doc.error !== undefined) {
    const issues = doc.error.issues.length > 0 ? doc.error.issues : [{ code: doc.error.code, path: '', message: doc.error.message }];
    return { file, line: doc.line, valid: false, contract: dialect === 'auto' ? null : dialect, issues };
  }
  const r = validateEnvelope(doc.value, dialect, { maxIssues });
  const contract = r.contract ?? (dialect === 'auto' ? null : dialect);
  return { file, line: doc.line, valid: r.valid, contract, issues: r.issues, ...(r.unlisted ? { unlisted: r.unlisted } : {}) };
}

function formatText(v: Verdict): string {
  const where = `${v.file}:${v.line}`;
  const contract = v.contract ?? 'unknown';
  return v.valid ? `${where}: valid (${contract})\n` : `${where}: invalid (${contract}): ${formatIssues(v.issues)}${moreIssues(v.unlisted)}\n`;
}

/** Runs the verb; returns the exit code. */
export async function run(args: string[], io: CliIo): Promise<number> {
  const parsed = parseVerbArgs('validate', args, { dialect: { type: 'string' }, format: { type: 'string' }, 'max-issues': { type: 'string' } }, io);
  if (typeof parsed === 'number') return parsed;
  const dialect = oneOf('validate', io, 'dialect', parsed.values.dialect, VALIDATE_DIALECTS, 'auto');
  if (dialect === undefined) return EXIT.USAGE;
  const format = oneOf('validate', io, 'format', parsed.values.format, ['text', 'json'] as const, 'text');
  if (format === undefined) return EXIT.USAGE;
  const maxIssues = maxIssuesOf('validate', io, parsed.values['max-issues']);
  if (maxIssues === undefined) return EXIT.USAGE;
  if (parsed.positionals.length === 0) return usageError('validate', io, 'give one or more FILEs, or - for stdin');

  let exit: number = EXIT.OK;
  for (const arg of parsed.positionals) {
    if (io.signal.aborted) break;
    const count = await eachDocument('validate', arg, io, (doc, name) => {
      const v = verdictOf(name, doc, dialect, maxIssues);
      if (!v.valid && exit === EXIT.OK) exit = EXIT.INVALID;
      return { stdout: format === 'json' ? JSON.stringify(v) + '\n' : formatText(v) };
    });
    if (count === undefined) exit = EXIT.USAGE;
    else if (count === 0 && !io.signal.aborted) {
      io.stderr.write(noDocuments('validate', arg));
      if (exit === EXIT.OK) exit = EXIT.INVALID;
    }
  }
  return exit;
}
