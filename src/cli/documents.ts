/**
 * Splits one CLI input (bytes from a file, a FIFO or stdin) into JSON documents, in memory bounded
 * by the document limit whatever the input holds. An input is one JSON document or an NDJSON
 * stream: when its first non-blank line is JSON by itself the input is NDJSON and is streamed line
 * by line; otherwise the whole text is one document (of any size: over the limit it is one
 * `too-large` document, never millions of lines). A whole text that does not parse falls back to
 * NDJSON, so each broken line is reported where it is.
 *
 * Every document is checked beyond JSON.parse: bytes that are not UTF-8 and numbers outside the
 * double range are `invalid-json` errors naming the byte offset; a line or text over the limit is a
 * `too-large` error. None of these stops the reading.
 *
 * @example
 * ```ts
 * for await (const doc of readDocuments(fs.createReadStream('a.ndjson'))) console.log(doc.line, doc.error?.code);
 * ```
 */
import { ToolEnvelopeError, type JsonValue, parseJson } from 'tool-envelope/core';
import { firstInvalidUtf8, outOfRangeNumber } from './text-checks.js';

/**
 * One document read from an input: its value, or why it is not JSON.
 *
 * @example
 * ```ts
 * const d: InputDocument = { line: 3, index: 3, offset: 40, ndjson: true, value: { ok: true } };
 * ```
 */
export interface InputDocument {
  /** 1-based line where the document starts. */
  line: number;
  /** 1-based ordinal of the document in its input. */
  index: number;
  /** Byte offset in the input where the document starts. */
  offset: number;
  /** True when the input is NDJSON (false for one whole-text document). */
  ndjson: boolean;
  /** The parsed document, when the text is JSON. */
  value?: JsonValue;
  /** `invalid-json` (also for bad UTF-8 and out-of-range numbers), `too-deep` or `too-large` when it is not. */
  error?: ToolEnvelopeError;
}

/**
 * The default largest document (one NDJSON line, or a whole text), in bytes: 64 MiB.
 *
 * @example
 * ```ts
 * readDocuments(stream, { documentLimit: DOCUMENT_LIMIT / 4 });
 * ```
 */
export const DOCUMENT_LIMIT = 64 * 1024 * 1024;

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function invalid(code: 'invalid-json' | 'too-large', issue: string, message: string, params: Record<string, unknown>): ToolEnvelopeError {
  return new ToolEnvelopeError(code, message, { issues: [{ code: issue, path: '', message, params }] });
}

function parseBytes(bytes: Uint8Array, at: Omit<InputDocument, 'value' | 'error'>): InputDocument {
  const bad = firstInvalidUtf8(bytes);
  if (bad >= 0) {
    const offset = at.offset + bad;
    return {
      ...at,
      error: invalid('invalid-json', 'invalid-utf8', `not UTF-8: byte 0x${bytes[bad]!.toString(16).padStart(2, '0')} at offset ${offset}`, { offset }),
    };
  }
  const text = decoder.decode(bytes);
  let value: JsonValue;
  try {
    value = parseJson(text);
  } catch (e) {
    if (e instanceof ToolEnvelopeError) return { ...at, error: e };
    throw e;
  }
  const number = outOfRangeNumber(text);
  if (number !== undefined) {
    const offset = at.offset + Buffer.byteLength(text.slice(0, number.index));
    const message = `number ${number.token.length > 40 ? `${number.token.slice(0, 40)}...` : number.token} at offset ${offset} is outside the range of a double`;
    return { ...at, error: invalid('invalid-json', 'number-out-of-range', message, { offset }) };
  }
  return { ...at, value };
}

function tooLarge(at: Omit<InputDocument, 'value' | 'error'>, limit: number, what: string): InputDocument {
  const message = `${what} at offset ${at.offset} is larger than the ${limit}-byte limit; the rest of the input is not read`;
  return { ...at, error: invalid('too-large', 'too-large', message, { offset: at.offset, limit }) };
}

const NEWLINE = Buffer.from('\n');

function isBlank(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  return true;
}

/** One line of input: its bytes (without the newline and a final CR), or none when it overflowed the limit. */
interface Line {
  bytes?: Buffer;
  length: number;
  line: number;
  offset: number;
}

/**
 * Yields the lines of `stream` with their byte offsets. A line longer than `limit` is yielded
 * without its bytes as soon as it passes the limit, and the reading stops there (`/dev/zero` or a
 * stream with no newline must not run on). Ends quietly when `signal` aborts.
 */
async function* lines(stream: NodeJS.ReadableStream, limit: number, signal?: AbortSignal): AsyncGenerator<Line> {
  let parts: Buffer[] = [];
  let length = 0;
  let lineNo = 1;
  let offset = 0;
  let start = 0;
  let first = true;
  const finish = (): Line => {
    let bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts, length);
    if (bytes.length > 0 && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, bytes.length - 1);
    const line: Line = { bytes, length, line: lineNo, offset: start };
    parts = [];
    length = 0;
    return line;
  };
  const onAbort = (): void => {
    (stream as { destroy?: () => void }).destroy?.();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const raw of stream as AsyncIterable<Buffer | string>) {
      if (signal?.aborted) return;
      let chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
      if (first) {
        first = false;
        if (chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) {
          chunk = chunk.subarray(3);
          offset = start = 3;
        }
      }
      let pos = 0;
      for (;;) {
        const nl = chunk.indexOf(0x0a, pos);
        const piece = chunk.subarray(pos, nl < 0 ? chunk.length : nl);
        if (length + piece.length > limit) {
          yield { length: length + piece.length, line: lineNo, offset: start };
          return;
        }
        parts.push(piece);
        length += piece.length;
        offset += piece.length;
        if (nl < 0) break;
        offset++;
        yield finish();
        lineNo++;
        start = offset;
        pos = nl + 1;
      }
    }
  } catch (e) {
    // Destroyed by the abort signal: stop quietly with what was read.
    if (!signal?.aborted) throw e;
    return;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  if (length > 0) yield finish();
}

/**
 * Reads the documents of one input (see the module comment). Rejects on I/O errors; ends early,
 * quietly, when `signal` aborts.
 *
 * @example
 * ```ts
 * for await (const doc of readDocuments(process.stdin, { signal })) handle(doc);
 * ```
 */
export async function* readDocuments(stream: NodeJS.ReadableStream, options?: { documentLimit?: number; signal?: AbortSignal }): AsyncGenerator<InputDocument> {
  const limit = options?.documentLimit ?? DOCUMENT_LIMIT;
  const signal = options?.signal;
  let mode: 'undecided' | 'held' | 'ndjson' = 'undecided';
  // Lines held while the input may be one multi-line document.
  const held: Buffer[] = [];
  const heldLines: Line[] = [];
  let heldBytes = 0;
  let index = 0;
  for await (const line of lines(stream, limit, signal)) {
    if (mode !== 'held' && line.bytes !== undefined && isBlank(line.bytes)) continue;
    if (line.bytes === undefined) {
      const start = heldLines[0] ?? line;
      const at = { line: start.line, index: ++index, offset: start.offset, ndjson: mode === 'ndjson' };
      yield tooLarge(at, limit, mode === 'ndjson' ? 'a line' : 'a document');
      return;
    }
    if (mode === 'ndjson') {
      yield parseBytes(line.bytes, { line: line.line, index: ++index, offset: line.offset, ndjson: true });
      continue;
    }
    if (mode === 'undecided') {
      const doc = parseBytes(line.bytes, { line: line.line, index: 1, offset: line.offset, ndjson: true });
      // A first line that is JSON, or broken in a way more lines cannot mend, makes the input NDJSON.
      if (doc.error === undefined || doc.error.issues[0]?.code !== 'invalid-json') {
        mode = 'ndjson';
        index = 1;
        yield doc;
        continue;
      }
      mode = 'held';
    }
    heldBytes += line.length + 1;
    if (heldBytes - 1 > limit) {
      const first = heldLines[0]!;
      yield tooLarge({ line: first.line, index: 1, offset: first.offset, ndjson: false }, limit, 'a document');
      return;
    }
    if (held.length > 0) held.push(NEWLINE);
    held.push(line.bytes);
    heldLines.push(line);
  }
  if (mode !== 'held' || signal?.aborted) return;
  const first = heldLines[0]!;
  const single = parseBytes(Buffer.concat(held), { line: first.line, index: 1, offset: first.offset, ndjson: false });
  if (single.error?.issues[0]?.code !== 'invalid-json') {
    yield single;
    return;
  }
  // Not one document: each line is one, so each broken line is reported where it is.
  for (const l of heldLines) {
    if (isBlank(l.bytes!)) continue;
    yield parseBytes(l.bytes!, { line: l.line, index: ++index, offset: l.offset, ndjson: true });
  }
}
