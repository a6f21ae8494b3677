/**
 * JSON-RPC over a child's pipes for `ChildProcessTransport`, with the SDK's own codec and line split:
 * newline-delimited messages, a bad line reported and skipped, a line over `limit` bytes dropped as it
 * arrives (never held whole) and reported with its id. (A faster wire was removed: it did not move its
 * bench row; see bench/README.md.)
 */
import type { Writable } from 'node:stream';
import { deserializeMessage, type JSONRPCMessage, serializeMessage } from '@modelcontextprotocol/client';
import { TopLevelIdScanner } from '../wire/result-size.js';

/** Reads one stream of newline-delimited messages. */
export interface StdoutReader {
  /** Feeds the next chunk of the stream. */
  push(chunk: Buffer): void;
  /** Forgets an unfinished line. */
  clear(): void;
}

/** Called for a line over the limit, once it has ended: its top-level id (when it has one) and its size. */
export type OnOversize = (id: string | number | undefined, bytes: number) => void;

/** Called with a line that is not a JSON-RPC message (before `onerror` is told), for the operator. */
export type OnBadLine = (line: Buffer) => void;

const NEWLINE = 0x0a;

/**
 * A line over the limit, dropped as it arrives (never held whole): its size so far and the
 * scanner looking for its top-level id.
 */
export class DroppedLine {
  private readonly scanner = new TopLevelIdScanner();
  /** Bytes of the line seen so far. */
  bytes = 0;

  constructor(first: Uint8Array) {
    this.feed(first);
  }

  /** Feeds the next bytes of the line. */
  feed(part: Uint8Array): void {
    this.scanner.feed(part);
    this.bytes += part.length;
  }

  /** Feeds `chunk` up to its first newline: the index just past that newline, or -1 when the line goes on. */
  take(chunk: Buffer): number {
    const nl = chunk.indexOf(NEWLINE);
    this.feed(nl === -1 ? chunk : chunk.subarray(0, nl));
    return nl === -1 ? -1 : nl + 1;
  }

  /** The line's top-level `id`, when it had one. */
  id(): string | number | undefined {
    return this.scanner.id();
  }
}

/** The SDK's `ReadBuffer`, with the size bound of the contract: a line over the limit is dropped, not fatal. */
class PlainLineReader implements StdoutReader {
  private buffer: Buffer | undefined;
  private dropping: DroppedLine | undefined;

  constructor(
    private readonly onmessage: (message: JSONRPCMessage) => void,
    private readonly onerror: (error: Error) => void,
    private readonly limit: number,
    private readonly onoversize: OnOversize,
    private readonly onbadline: OnBadLine | undefined,
  ) {}

  push(chunk: Buffer): void {
    let rest = chunk;
    if (this.dropping) {
      const after = this.dropping.take(rest);
      if (after === -1) return;
      this.onoversize(this.dropping.id(), this.dropping.bytes);
      this.dropping = undefined;
      rest = rest.subarray(after);
    }
    this.buffer = this.buffer ? Buffer.concat([this.buffer, rest]) : rest;
    for (let nl = this.buffer.indexOf(NEWLINE); nl !== -1; nl = this.buffer.indexOf(NEWLINE)) {
      const line = this.buffer.subarray(0, nl > 0 && this.buffer[nl - 1] === 0x0d ? nl - 1 : nl);
      this.buffer = this.buffer.subarray(nl + 1);
      this.line(line);
    }
    if (this.buffer.length > this.limit) {
      this.dropping = new DroppedLine(this.buffer);
      this.buffer = undefined;
    }
  }

  private line(bytes: Buffer): void {
    if (bytes.length > this.limit) {
      this.onoversize(new DroppedLine(bytes).id(), bytes.length);
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(bytes.toString('utf8'));
    } catch (error) {
      this.onbadline?.(bytes);
      this.onerror(error as Error);
      return;
    }
    this.onmessage(message);
  }

  clear(): void {
    this.buffer = undefined;
    this.dropping = undefined;
  }
}

/**
 * A reader of a child's stdout: each whole line's message to `onmessage`, a bad line to `onerror`,
 * a line over `limit` bytes dropped as it arrives and reported to `onoversize`; a bad line is also
 * given to `onbadline` as it was.
 */
export function readChildLines(
  onmessage: (message: JSONRPCMessage) => void,
  onerror: (error: Error) => void,
  limit: number,
  onoversize: OnOversize,
  onbadline?: OnBadLine,
): StdoutReader {
  return new PlainLineReader(onmessage, onerror, limit, onoversize, onbadline);
}

/**
 * The sender of messages to a child's stdin, with the SDK's codec: each send resolves once the
 * pipe took the message (at once, or at its next `drain`).
 */
export function childWriter(stdin: Writable): (message: JSONRPCMessage) => Promise<void> {
  const drained = drainWaiter(stdin);
  return (message) => (stdin.write(serializeMessage(message)) ? Promise.resolve() : drained());
}

/**
 * The wait for a stream's next `drain`, one promise shared by every caller until it comes: a
 * listener per write that found the stream full piled up (MaxListenersExceededWarning with a few
 * hundred messages waiting) and held memory of its own. Used by {@link childWriter} and the stdio
 * serving transport.
 */
export function drainWaiter(stream: Writable): () => Promise<void> {
  let pending: Promise<void> | undefined;
  return () =>
    (pending ??= new Promise((resolve) =>
      stream.once('drain', () => {
        pending = undefined;
        resolve();
      }),
    ));
}
