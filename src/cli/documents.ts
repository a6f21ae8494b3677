/**
 * Splits one CLI input (file, FIFO, stdin) into JSON documents, in memory bounded by the document
 * limit: NDJSON when the first non-blank line is JSON by itself, else one whole-text document (over the
 * limit: one `too-large`), falling back to NDJSON when it does not parse so each broken line is reported
 * where it is. Non-UTF-8 bytes and out-of-range numbers are `invalid-json` with the byte offset.
 */
import { ToolEnvelopeError, type JsonValue, parseJson } from 'tool-envelope/core';
import { ByteRun } from './byte-run.js';
import { firstInvalidUtf8, outOfRangeNumber } from './text-checks.js';

/** One document read from an input: its value, or why it is not JSON. */
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

/** The default largest document (one NDJSON line, or a whole text), in bytes: 64 MiB. */
export const DOCUMENT_LIMIT = 64 * 1024 * 1024;

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function invalid(code: 'invalid-json' | 'too-large', issue: string, message: string, params: Record<string, unknown>): ToolEnvelopeError {
  return new ToolEnvelopeError(code, message, { issues: [{ code: issue, path: '', message, params }] });
}

/**
 * `bytes` parsed; `rawIndex` gives where byte i of `bytes` is in the input from `at.offset` on (not
 * i itself when `bytes` is a text whose CRs were dropped), for the offsets its errors name.
 */
function parseBytes(bytes: Uint8Array, at: Omit<InputDocument, 'value' | 'error'>, rawIndex: (i: number) => number = (i) => i): InputDocument {
  const bad = firstInvalidUtf8(bytes);
  if (bad >= 0) {
    const offset = at.offset + rawIndex(bad);
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
    const offset = at.offset + rawIndex(Buffer.byteLength(text.slice(0, number.index)));
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
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

function isBlank(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  return true;
}

/** A line without its final CR. */
function withoutCr(line: Buffer): Buffer {
  return line.length > 0 && line[line.length - 1] === 0x0d ? line.subarray(0, line.length - 1) : line;
}

/**
 * The text of a whole-input document as its lines joined by LF, each without its final CR, and
 * no final LF: what JSON.parse is given. The offsets its errors name are the input's
 * ({@link rawIndexIn}).
 */
function documentText(raw: Buffer): Buffer {
  const text = raw.length > 0 && raw[raw.length - 1] === 0x0a ? raw.subarray(0, raw.length - 1) : raw;
  if (text.indexOf(0x0d) < 0) return text;
  const out = Buffer.allocUnsafe(text.length);
  let n = 0;
  let from = 0;
  for (;;) {
    const nl = text.indexOf(0x0a, from);
    const line = withoutCr(text.subarray(from, nl < 0 ? text.length : nl));
    n += line.copy(out, n);
    if (nl < 0) return out.subarray(0, n);
    out[n++] = 0x0a;
    from = nl + 1;
  }
}

/**
 * Where byte `i` of `documentText(raw)` is in `raw`: one further on for each CR dropped before it.
 * Only on an error's path, so a walk over the lines.
 */
function rawIndexIn(raw: Buffer, i: number): number {
  let dropped = 0;
  let from = 0;
  for (;;) {
    const nl = raw.indexOf(0x0a, from);
    const end = nl < 0 ? raw.length : nl;
    const kept = end - from - (end > from && raw[end - 1] === 0x0d ? 1 : 0);
    // This line's kept bytes start at from - dropped in the text; its LF follows them.
    if (i < from - dropped + kept) return i + dropped;
    dropped += end - from - kept;
    if (nl < 0 || i === from - dropped + (end - from)) return i + dropped;
    from = nl + 1;
  }
}

/**
 * The documents of one input, from its bytes as they come (the module comment says how an input
 * is split). Synchronous, so a chunk of a thousand short lines is not a thousand awaits. A line,
 * or the text of a whole-input document, is refused as `too-large` in the chunk that takes it past
 * the limit, whatever its layout: until then only its bytes are held (no object per line), so a
 * 200 MB pretty-printed document costs the limit in memory, not gigabytes of line records.
 */
class Splitter {
  /** True once a document was refused: the rest of the input is not read. */
  stopped = false;
  private mode: 'undecided' | 'held' | 'ndjson' = 'undecided';
  private first = true;
  /** The input's first bytes while they may still be the start of a BOM (it can come split over chunks). */
  private head: Buffer | undefined;
  private offset = 0;
  private lineNo = 1;
  private index = 0;
  /**
   * The unfinished line's bytes from earlier chunks; in mode 'held', the raw bytes of the
   * whole-input document (CRs and LFs included), which began as its first line.
   */
  private readonly pending: ByteRun;
  private lineStart = 0;
  private heldLine = 0;
  private heldOffset = 0;

  constructor(private readonly limit: number) {
    // The document's text plus its final newline.
    this.pending = new ByteRun(limit + 1);
  }

  *push(input: Buffer): Generator<InputDocument> {
    let chunk = input;
    if (this.first) {
      chunk = this.head ? Buffer.concat([this.head, chunk]) : chunk;
      if (chunk.length < BOM.length && BOM.subarray(0, chunk.length).equals(chunk)) {
        this.head = chunk;
        return;
      }
      this.first = false;
      this.head = undefined;
      if (chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) {
        chunk = chunk.subarray(3);
        this.offset = this.lineStart = 3;
      }
    }
    let pos = 0;
    while (pos < chunk.length) {
      if (this.mode === 'held') {
        yield* this.hold(chunk.subarray(pos));
        return;
      }
      const nl = chunk.indexOf(0x0a, pos);
      const piece = chunk.subarray(pos, nl < 0 ? chunk.length : nl);
      if (this.pending.length + piece.length > this.limit) {
        const at = { line: this.lineNo, index: ++this.index, offset: this.lineStart, ndjson: this.mode === 'ndjson' };
        yield this.refuse(at, this.mode === 'ndjson' ? 'a line' : 'a document');
        return;
      }
      if (nl < 0) {
        this.pending.append(piece);
        this.offset += piece.length;
        return;
      }
      this.offset += piece.length + 1;
      if (this.pending.length === 0) yield* this.completeLine(piece, true);
      else {
        this.pending.append(piece);
        yield* this.completeLine(undefined, true);
      }
      pos = nl + 1;
    }
  }

  /** What is left at the end of the input: its last line, the whole-input document. */
  *end(): Generator<InputDocument> {
    if (this.stopped) return;
    // An input of one or two bytes that began a BOM and ended there: they are its text.
    if (this.head) {
      const head = this.head;
      this.head = undefined;
      this.first = false;
      yield* this.push(head);
    }
    if (this.mode !== 'held' && this.pending.length > 0) yield* this.completeLine(undefined, false);
    if (this.mode !== 'held') return;
    const raw = this.pending.bytes();
    const at = { line: this.heldLine, index: 1, offset: this.heldOffset, ndjson: false };
    const text = documentText(raw);
    const single = parseBytes(text, at, raw.indexOf(0x0d) < 0 ? undefined : (i) => rawIndexIn(raw, i));
    if (single.error?.issues[0]?.code !== 'invalid-json') {
      yield single;
      return;
    }
    // Not one document: each line is one, so each broken line is reported where it is.
    let line = this.heldLine;
    for (let from = 0; from < raw.length; line++) {
      const nl = raw.indexOf(0x0a, from);
      const bytes = withoutCr(raw.subarray(from, nl < 0 ? raw.length : nl));
      if (!isBlank(bytes)) yield parseBytes(bytes, { line, index: ++this.index, offset: this.heldOffset + from, ndjson: true });
      if (nl < 0) break;
      from = nl + 1;
    }
  }

  private refuse(at: Omit<InputDocument, 'value' | 'error'>, what: string): InputDocument {
    this.stopped = true;
    return tooLarge(at, this.limit, what);
  }

  /**
   * A line of an NDJSON input, or of one still undecided: `inChunk`, or else the pending bytes;
   * it ends before its LF.
   */
  private *completeLine(inChunk: Buffer | undefined, terminated: boolean): Generator<InputDocument> {
    const line = this.lineNo;
    const offset = this.lineStart;
    this.lineNo++;
    this.lineStart = this.offset;
    const raw = inChunk ?? this.pending.bytes();
    const bytes = withoutCr(raw);
    let doc: InputDocument | undefined;
    if (isBlank(bytes)) doc = undefined;
    else if (this.mode === 'ndjson') doc = parseBytes(bytes, { line, index: ++this.index, offset, ndjson: true });
    else {
      doc = parseBytes(bytes, { line, index: 1, offset, ndjson: true });
      // A first line that is JSON, or broken in a way more lines cannot mend, makes the input NDJSON.
      if (doc.error === undefined || doc.error.issues[0]?.code !== 'invalid-json') {
        this.mode = 'ndjson';
        this.index = 1;
      } else {
        // The whole input may be one document: it starts here, and its bytes stay pending.
        this.mode = 'held';
        this.heldLine = line;
        this.heldOffset = offset;
        if (inChunk !== undefined) this.pending.append(inChunk);
        if (terminated) this.pending.append(NEWLINE);
        return;
      }
    }
    this.pending.clear();
    if (doc !== undefined) yield doc;
  }

  /**
   * More bytes of the whole-input document. Its size is that of its text: its bytes without a
   * final LF, so a document ending at exactly the limit plus its newline is still read whole.
   */
  private *hold(bytes: Buffer): Generator<InputDocument> {
    const size = this.pending.length + bytes.length - (bytes[bytes.length - 1] === 0x0a ? 1 : 0);
    if (size > this.limit) {
      yield this.refuse({ line: this.heldLine, index: 1, offset: this.heldOffset, ndjson: false }, 'a document');
      return;
    }
    this.pending.append(bytes);
  }
}

/**
 * Reads the documents of one input (see the module comment). Rejects on I/O errors; ends early,
 * quietly, when `signal` aborts.
 */
export async function* readDocuments(stream: NodeJS.ReadableStream, options?: { documentLimit?: number; signal?: AbortSignal }): AsyncGenerator<InputDocument> {
  const signal = options?.signal;
  const splitter = new Splitter(options?.documentLimit ?? DOCUMENT_LIMIT);
  const onAbort = (): void => {
    (stream as { destroy?: () => void }).destroy?.();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const raw of stream as AsyncIterable<Buffer | string>) {
      if (signal?.aborted) return;
      yield* splitter.push(typeof raw === 'string' ? Buffer.from(raw) : raw);
      if (splitter.stopped) return;
    }
  } catch (e) {
    // Destroyed by the abort signal: stop quietly with what was read.
    if (!signal?.aborted) throw e;
    return;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  if (!signal?.aborted) yield* splitter.end();
}
