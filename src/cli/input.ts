/**
 * Opening the inputs of the CLI verbs (files, FIFOs, stdin) and running a verb over each of their
 * documents (read by documents.ts), writing what it prints with backpressure on stdout and stderr.
 */
import { open } from 'node:fs/promises';
import { resolve } from 'node:path';
import { type InputDocument, readDocuments } from './documents.js';
import type { CliIo } from './io.js';
import { createProgress } from './progress.js';
import { ioFailure } from './report.js';

/** A named input stream. */
export interface Input {
  /** File name as given, or `<stdin>`. */
  name: string;
  stream: NodeJS.ReadableStream;
  /** Releases the file (a no-op for stdin, which belongs to the process). */
  close(): void;
}

/**
 * Opens `arg` (a path relative to `io.cwd`, or `-` for stdin). Rejects with
 * the file system error (ENOENT, EACCES, ...) when the file cannot be opened.
 */
export async function openInput(arg: string, io: CliIo): Promise<Input> {
  if (arg === '-') return { name: '<stdin>', stream: io.stdin, close() {} };
  const handle = await open(resolve(io.cwd, arg), 'r');
  const stream = handle.createReadStream();
  return { name: arg, stream, close: () => stream.destroy() };
}

/** What a verb prints for one document. */
export interface Printed {
  stdout?: string;
  stderr?: string;
}

async function write(stream: NodeJS.WritableStream, text: string | undefined, signal: AbortSignal): Promise<void> {
  if (text === undefined || text === '' || stream.write(text)) return;
  // A slow reader must not make us buffer the whole run; a signal must not wait for it.
  await new Promise<void>((resolveDrain) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      signal.removeEventListener('abort', done);
      resolveDrain();
    };
    stream.once('drain', done);
    stream.once('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Reads every document of input `arg` and hands each to `onDocument`; what it returns is written
 * to stdout and stderr, honouring backpressure on both. Shows progress on a TTY stderr and stops
 * early when `io.signal` aborts. Returns how many documents were read, or undefined (after
 * reporting it on stderr) when the input cannot be opened or read; errors thrown by `onDocument`
 * propagate.
 */
export async function eachDocument(
  verb: string,
  arg: string,
  io: CliIo,
  onDocument: (doc: InputDocument, name: string) => Printed,
): Promise<number | undefined> {
  let name = arg;
  let input: Input;
  let docs: AsyncGenerator<InputDocument>;
  try {
    input = await openInput(arg, io);
    name = input.name;
    docs = readDocuments(input.stream, { signal: io.signal });
  } catch (e) {
    ioFailure(verb, io, name, e);
    return undefined;
  }
  const progress = createProgress(io.stderr, name);
  let count = 0;
  try {
    for (;;) {
      let next: IteratorResult<InputDocument>;
      try {
        next = await docs.next();
      } catch (e) {
        ioFailure(verb, io, name, e);
        return undefined;
      }
      if (next.done === true) return count;
      count++;
      const printed = onDocument(next.value, name);
      progress.tick();
      await write(io.stdout, printed.stdout, io.signal);
      await write(io.stderr, printed.stderr, io.signal);
      if (io.signal.aborted) return count;
    }
  } finally {
    progress.done();
    await docs.return(undefined);
    // Stopping early (abort, an error) must not leave the file handle to the garbage collector.
    input.close();
  }
}

/** The message for an input that holds no document (empty, or only blank lines). */
export function noDocuments(verb: string, name: string): string {
  return `tool-envelope ${verb}: ${name === '-' ? '<stdin>' : name}: no documents (the input is empty or blank)\n`;
}
