/**
 * A `CliIo` in memory for running a verb in the test's process: what it writes to stdout and stderr
 * is kept, and its signal is the test's to abort.
 */
import { PassThrough } from 'node:stream';
import { tempDir } from '../../mcp/test-support/harness.js';
import type { CliIo } from '../io.js';

/** The io, what was written so far, and the abort of its signal. */
export type MemoryIo = CliIo & { out: () => string; err: () => string; abort: () => void };

/** Makes one; `env` is the whole environment the verb sees, `cwd` a fresh temp directory by default. */
export function memoryIo(env: Record<string, string> = {}, cwd = tempDir()): MemoryIo {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  const controller = new AbortController();
  return { stdin: new PassThrough(), stdout, stderr, cwd, env, signal: controller.signal, out: () => out, err: () => err, abort: () => controller.abort() };
}
