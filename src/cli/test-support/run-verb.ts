/**
 * Runs a CLI verb in-process with real `PassThrough` streams and collects what
 * it writes. Test support only (excluded from the build).
 */
import { PassThrough } from 'node:stream';
import type { CliIo, CliVerb } from '../io.js';

/** What a verb run returned and wrote. */
export interface VerbRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Inputs of {@link runVerb}. */
export interface VerbRunOptions {
  /** Text (or a stream) given as stdin; stdin ends after the text. */
  stdin?: string | PassThrough;
  cwd?: string;
  /** Pretend stderr is a terminal. */
  stderrIsTTY?: boolean;
  /** Aborts the run like SIGINT would. */
  signal?: AbortSignal;
  /** Called with stdout as it is written (e.g. to check streaming). */
  onStdout?: (chunk: string) => void;
  /** The verb's environment (default: empty). */
  env?: NodeJS.ProcessEnv;
}

/** Runs `verb` with `args` in-process and collects its exit code and output. */
export async function runVerb(verb: CliVerb, args: string[], options: VerbRunOptions = {}): Promise<VerbRun> {
  const stdin = options.stdin instanceof PassThrough ? options.stdin : new PassThrough();
  if (!(options.stdin instanceof PassThrough)) stdin.end(options.stdin ?? '');
  const stdout = new PassThrough();
  const stderr = new PassThrough() as PassThrough & { isTTY?: boolean };
  if (options.stderrIsTTY) stderr.isTTY = true;
  let out = '';
  let err = '';
  stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
    options.onStdout?.(c);
  });
  stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  const io: CliIo = {
    stdin,
    stdout,
    stderr,
    cwd: options.cwd ?? process.cwd(),
    env: options.env ?? {},
    signal: options.signal ?? new AbortController().signal,
  };
  const code = await verb.run(args, io);
  stdout.end();
  stderr.end();
  await new Promise((r) => setImmediate(r));
  return { code, stdout: out, stderr: err };
}
