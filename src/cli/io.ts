/**
 * The streams a CLI verb reads and writes. Verbs never touch `process` directly
 * (only `main.ts` exits), so tests can run them in-process.
 */
export interface CliIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /** Working directory for relative paths. */
  cwd: string;
  /** Environment variables. */
  env: NodeJS.ProcessEnv;
  /** Aborted when the process receives SIGINT/SIGTERM; long-running verbs stop and clean up. */
  signal: AbortSignal;
}

/** Exit codes shared by every verb. */
export const EXIT = {
  /** Success: everything valid / done. */
  OK: 0,
  /** The command ran, and found something invalid, lossy or failing. */
  INVALID: 1,
  /** Usage error, unreadable input, I/O error. */
  USAGE: 2,
} as const;

/** A verb module: `run` returns the exit code; `help` is the text `--help` prints. */
export interface CliVerb {
  help: string;
  /** The help for these arguments, when a verb has sub-verbs with their own help (e.g. `audit list --help`). */
  helpFor?(args: string[]): Promise<string>;
  run(args: string[], io: CliIo): Promise<number>;
  /** Exit the process right after `run` returns, even if a handle is still open (long-running servers). */
  exitWhenDone?: boolean;
}

/** The real process streams. */
export function processIo(signal: AbortSignal = new AbortController().signal): CliIo {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, cwd: process.cwd(), env: process.env, signal };
}
