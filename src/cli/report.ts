/**
 * How CLI verbs print located issues and read failures, so that `validate`
 * and `convert` speak the same way.
 */
import type { Issue } from 'tool-envelope/core';
import { printable } from '../store/printable.js';
import type { CliIo } from './io.js';

/**
 * One line per issue set: `<pointer> <rule> <message>` joined by `; `. Pointers and messages
 * quote the document (its keys, its values), so its control characters are shown as `?`.
 */
export function formatIssues(issues: readonly Issue[]): string {
  return printable(issues.map((i) => `${i.path === '' ? '(document)' : i.path} ${i.code} ${i.message}`).join('; '));
}

/** The tail that says how many issues were not listed (`--max-issues`), or '' when none. */
export function moreIssues(unlisted: number | undefined): string {
  return unlisted ? `; ... and ${unlisted} more (raise --max-issues to list them)` : '';
}

/** Reports an input that could not be opened or read, and returns nothing. */
export function ioFailure(verb: string, io: CliIo, name: string, error: unknown): void {
  const code = (error as { code?: unknown } | null)?.code;
  const why = error instanceof Error ? error.message : String(error);
  io.stderr.write(`tool-envelope ${verb}: cannot read ${printable(`${name}: ${typeof code === 'string' && !why.includes(code) ? `${code} ` : ''}${why}`)}\n`);
}
