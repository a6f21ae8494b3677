/**
 * The last lines an upstream wrote to its stderr, and how it ended: what an operator needs to see
 * when an upstream fails to start or exits ("DATABASE_URL is not set", an npm 404, a missing
 * file), instead of the SDK's bare `Connection closed`.
 */
import { printableJson } from '../../store/printable.js';

/** Lines kept per process. */
const MAX_LINES = 20;
/** Longest line kept (a server may print a whole stack or a minified bundle on one line). */
const MAX_LINE_CHARS = 500;

/** A bounded tail of a stream's lines. */
export class StderrTail {
  private readonly kept: string[] = [];
  private partial = '';

  /** Feeds a chunk of the stream. */
  push(chunk: Buffer | string): void {
    const text = this.partial + chunk.toString();
    const parts = text.split('\n');
    this.partial = parts.pop()!.slice(-MAX_LINE_CHARS);
    for (const p of parts) this.keep(p);
  }

  /** The kept lines, oldest first, the unfinished last line included. */
  lines(): string[] {
    const out = [...this.kept];
    const last = this.partial.trim();
    if (last) out.push(last.slice(0, MAX_LINE_CHARS));
    return out;
  }

  private keep(line: string): void {
    const t = line.replace(/\r$/, '').trimEnd();
    if (!t.trim()) return;
    this.kept.push(t.length > MAX_LINE_CHARS ? `${t.slice(0, MAX_LINE_CHARS)}…` : t);
    if (this.kept.length > MAX_LINES) this.kept.shift();
  }
}

/** How a child process ended, as `close` reports it. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * Why an upstream process did not start: it did not answer in time (`timedOutAfterMs`: the gateway
 * then ended it itself, so its exit says nothing), or how it ended; then the start of the first
 * stdout line that was not JSON-RPC (`badLine`, when there was one), and the last thing it said on stderr.
 */
export function describeStartFailure(
  failure: { exit?: ChildExit | undefined; spawnError?: Error | undefined; timedOutAfterMs?: number | undefined; badLine?: string | undefined },
  stderr: string[],
): string {
  const { exit, spawnError, timedOutAfterMs, badLine } = failure;
  if (spawnError || timedOutAfterMs === undefined) return describeExit(exit, stderr, spawnError, badLine);
  return withLastWords(noAnswerWithin(timedOutAfterMs), stderr, badLine);
}

/** That an upstream (a process or a URL) did not answer its start within `ms`. */
export function noAnswerWithin(ms: number): string {
  return `it did not answer initialize within ${Math.max(1, Math.round(ms / 1000))} s`;
}

/** One sentence on why an upstream process is gone: how it ended and the last thing it said. */
export function describeExit(exit: ChildExit | undefined, stderr: string[], spawnError?: Error, badLine?: string): string {
  let how: string;
  if (spawnError) {
    const code = (spawnError as NodeJS.ErrnoException).code;
    how = code === 'ENOENT' ? `the command was not found (${spawnError.message})` : `it could not be started (${spawnError.message})`;
  } else if (!exit) how = 'it closed its stdout';
  else if (exit.signal) how = `it was ended by ${exit.signal}`;
  else how = `it exited with code ${exit.code}`;
  return withLastWords(how, stderr, badLine);
}

/** `how`, then the first stdout line that was not JSON-RPC, then the key stderr line (or that there was none). */
function withLastWords(how: string, stderr: string[], badLine: string | undefined): string {
  const stdout = badLine === undefined ? '' : `; it wrote lines to stdout that are not JSON-RPC, the first: ${inertLine(badLine)}`;
  const key = keyLine(stderr);
  return key ? `${how}${stdout}; its stderr: ${key}` : `${how}${stdout}; it wrote nothing to stderr`;
}

/** An upstream's line quoted and inert on a terminal (it is the upstream's text: escapes must not act). */
function inertLine(line: string): string {
  const text = line.trim();
  const cut = text.length > BAD_LINE_CHARS ? `${text.slice(0, BAD_LINE_CHARS)}…` : text;
  return printableJson(JSON.stringify(cut));
}

/** How much of a line that is not JSON-RPC is shown. */
const BAD_LINE_CHARS = 80;

/** An error line (`Error: ...`, `npm error ...`, `fatal: ...`) says more than a stack frame or a log path. */
const ERROR_LINE = /^\s*(npm\s+)?(\w*error|fatal|panic)\b/i;

/** The line of a stderr tail that best says what went wrong: the first error line, else the last line. */
export function keyLine(stderr: readonly string[]): string | undefined {
  return stderr.find((l) => ERROR_LINE.test(l) && !/complete log of this run/i.test(l)) ?? stderr.at(-1);
}
