/**
 * Reading envelopes from files or stdin for the CLI verbs. An input is one
 * JSON document or an NDJSON stream (one document per line, blank lines
 * skipped): when the whole text parses as one JSON value it is one document,
 * otherwise every line is a document. NDJSON is streamed line by line, so a
 * 1 GB file never sits in memory.
 *
 * @example
 * ```ts
 * const input = await openInput('envelopes.ndjson', io);
 * for await (const doc of readDocuments(input.stream)) console.log(doc.line, doc.value ?? doc.error?.code);
 * ```
 */
import { open } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { ToolEnvelopeError } from '../core/errors.js';
import type { JsonValue } from '../core/json.js';
import { parseJson } from '../core/json-safe.js';
import type { CliIo } from './io.js';
import { createProgress } from './progress.js';
import { ioFailure } from './report.js';

/**
 * One document read from an input: its value, or why it is not JSON.
 *
 * @example
 * ```ts
 * const d: InputDocument = { line: 3, index: 3, ndjson: true, value: { ok: true } };
 * ```
 */
export interface InputDocument {
  /** 1-based line where the document starts. */
  line: number;
  /** 1-based ordinal of the document in its input. */
  index: number;
  /** True when the input is NDJSON (false for one whole-text document). */
  ndjson: boolean;
  /** The parsed document, when the text is JSON. */
  value?: JsonValue;
  /** `invalid-json`, `too-deep` or `too-large` when it is not. */
  error?: ToolEnvelopeError;
}

/**
 * A named input stream.
 *
 * @example
 * ```ts
 * const input: Input = { name: '<stdin>', stream: process.stdin, close() {} };
 * ```
 */
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
 *
 * @example
 * ```ts
 * const input = await openInput('-', io);
 * ```
 */
export async function openInput(arg: string, io: CliIo): Promise<Input> {
  if (arg === '-') return { name: '<stdin>', stream: io.stdin, close() {} };
  const handle = await open(resolve(io.cwd, arg), 'r');
  const stream = handle.createReadStream();
  return { name: arg, stream, close: () => stream.destroy() };
}

/**
 * Above this many characters, text held back while deciding whether the
 * input is one multi-line document is treated as NDJSON instead.
 *
 * @example
 * ```ts
 * readDocuments(stream, { wholeTextLimit: WHOLE_TEXT_LIMIT / 2 });
 * ```
 */
export const WHOLE_TEXT_LIMIT = 128 * 1024 * 1024;

function parseOne(text: string, line: number, index: number, ndjson: boolean): InputDocument {
  try {
    return { line, index, ndjson, value: parseJson(text) };
  } catch (e) {
    if (e instanceof ToolEnvelopeError) return { line, index, ndjson, error: e };
    throw e;
  }
}

/**
 * Reads the documents of one input. The first non-blank line decides: if it
 * is JSON by itself, the input is NDJSON and is streamed; otherwise the text
 * is held until the end (up to `wholeTextLimit` characters) and parsed as one
 * document, falling back to NDJSON when it is not one. Rejects on I/O errors;
 * ends early, quietly, when `signal` aborts.
 *
 * @example
 * ```ts
 * for await (const doc of readDocuments(fs.createReadStream('a.ndjson'))) handle(doc);
 * ```
 */
export async function* readDocuments(
  stream: NodeJS.ReadableStream,
  options?: { wholeTextLimit?: number; signal?: AbortSignal },
): AsyncGenerator<InputDocument> {
  const limit = options?.wholeTextLimit ?? WHOLE_TEXT_LIMIT;
  const signal = options?.signal;
  const rl = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY, ...(signal ? { signal } : {}) });
  let mode: 'undecided' | 'held' | 'ndjson' = 'undecided';
  // Lines held while the input might be one multi-line document (index = line - 1).
  let held: string[] = [];
  let heldChars = 0;
  let lineNo = 0;
  let index = 0;
  function* releaseHeld(): Generator<InputDocument> {
    for (let i = 0; i < held.length; i++) {
      const text = held[i]!;
      if (text.trim() !== '') yield parseOne(text, i + 1, ++index, true);
    }
    held = [];
  }
  try {
    for await (const raw of rl) {
      lineNo++;
      const text = lineNo === 1 && raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
      if (mode === 'ndjson') {
        if (text.trim() !== '') yield parseOne(text, lineNo, ++index, true);
        continue;
      }
      held.push(text);
      heldChars += text.length + 1;
      if (mode === 'undecided') {
        if (text.trim() === '') continue;
        const first = parseOne(text, lineNo, 1, true);
        if (first.error === undefined) {
          mode = 'ndjson';
          held = [];
          index = 1;
          yield first;
          continue;
        }
        mode = 'held';
      }
      if (heldChars > limit) {
        mode = 'ndjson';
        yield* releaseHeld();
      }
    }
  } catch (e) {
    // Closed by the abort signal: stop quietly with what was read.
    if (!signal?.aborted) throw e;
  } finally {
    rl.close();
  }
  if (mode !== 'held' || signal?.aborted) return;
  const whole = held.join('\n');
  const firstLine = held.findIndex((t) => t.trim() !== '') + 1;
  const single = parseOne(whole, firstLine, 1, false);
  if (single.error === undefined) {
    yield single;
    return;
  }
  yield* releaseHeld();
}

/**
 * Reads every document of input `arg` and hands each to `onDocument`; what
 * it returns is written to stdout, honouring backpressure. Shows progress on
 * a TTY stderr and stops early when `io.signal` aborts. Returns false (after
 * reporting it on stderr) when the input cannot be opened or read; errors
 * thrown by `onDocument` propagate.
 *
 * @example
 * ```ts
 * const ok = await eachDocument('validate', 'a.ndjson', io, (doc, name) => `${name}:${doc.line}\n`);
 * ```
 */
export async function eachDocument(
  verb: string,
  arg: string,
  io: CliIo,
  onDocument: (doc: InputDocument, name: string) => string | undefined,
): Promise<boolean> {
  let name = arg;
  let input: Input;
  let docs: AsyncGenerator<InputDocument>;
  try {
    input = await openInput(arg, io);
    name = input.name;
    docs = readDocuments(input.stream, { signal: io.signal });
  } catch (e) {
    ioFailure(verb, io, name, e);
    return false;
  }
  const progress = createProgress(io.stderr, name);
  try {
    for (;;) {
      let next: IteratorResult<InputDocument>;
      try {
        next = await docs.next();
      } catch (e) {
        ioFailure(verb, io, name, e);
        return false;
      }
      if (next.done === true) return true;
      const out = onDocument(next.value, name);
      progress.tick();
      // Respect backpressure so a slow reader of stdout does not make us buffer the whole run.
      if (out !== undefined && !io.stdout.write(out)) await new Promise((r) => io.stdout.once('drain', r));
      if (io.signal.aborted) return true;
    }
  } finally {
    progress.done();
    await docs.return(undefined);
    // Stopping early (abort, an error) must not leave the file handle to the garbage collector.
    input.close();
  }
}
