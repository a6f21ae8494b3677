/**
 * A `tool-envelope gateway` run in the test's process (the verb's `run`, from the sources) whose
 * stdout and stderr are kept, stopped through its signal: for the operator tests (metrics, health,
 * logs, traces), which read what it prints and what it serves.
 */
import { run } from '../gateway.js';
import { memoryIo } from './memory-io.js';

/** A running gateway and what it wrote. */
export interface ObservedGateway {
  /** Its MCP endpoint (with `--http`), else the base of its `--metrics HOST:PORT` listener. */
  url: string;
  /** The listener's base (the endpoint without `/mcp`). */
  base: string;
  stdout(): string;
  stderr(): string;
  /** Stops it and resolves with its exit code. */
  stop(): Promise<number>;
}

/** Starts the verb with `args` and waits until its banner (`--http`) or, over stdio, its metrics listener's log line. */
export async function startGateway(args: string[], env: Record<string, string> = {}, cwd = process.cwd()): Promise<ObservedGateway> {
  const io = memoryIo({ PATH: process.env.PATH ?? '', ...env }, cwd);
  const done = run(args, io);
  let code: number | undefined;
  void done.then((c) => (code = c));
  const started = Date.now();
  // Over stdio there is no banner: the metrics listener's log line says it is up.
  const up = args.includes('--http') ? /MCP endpoint.*(http:\/\/\S+)/ : /metrics at (http:\/\/\S+)\/metrics/;
  const shown = (): string => (args.includes('--http') ? io.out() : io.err());
  while (!up.test(shown())) {
    if (code !== undefined) throw new Error(`the gateway exited (${code}): ${io.err()}`);
    if (Date.now() - started > 30_000) throw new Error(`the gateway did not start: ${io.err()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const url = up.exec(shown())![1]!;
  return {
    url,
    base: url.replace(/\/mcp$/, ''),
    stdout: io.out,
    stderr: io.err,
    stop: () => {
      io.abort();
      return done;
    },
  };
}

/** Polls `check` until it returns a value other than `undefined`, or throws `what` after `ms`. */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, ms = 30_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() - started > ms) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
