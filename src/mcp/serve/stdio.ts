/**
 * The SDK `Transport` serving a client on stdin/stdout: the SDK's newline-delimited JSON-RPC, each line
 * checked with plain property tests ({@link asJsonRpcMessage}) instead of zod, too-deep lines answered
 * with Invalid Request unparsed (wire/message-depth.ts), the writes of one tick in one `writev`.
 */
import type { Readable, Writable } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { jsonNestsDeeper } from 'tool-envelope/core';
import { coalesceWrites } from './coalesce.js';
import { MAX_MESSAGE_DEPTH, TOO_DEEP_MESSAGE } from '../wire/message-depth.js';
import { asJsonRpcMessage, InvalidMessageError } from '../wire/message.js';
import { isNotification, MAX_UNSENT_NOTIFICATION_BYTES, slowReaderError } from './slow-reader.js';
import { TopLevelIdScanner } from '../wire/result-size.js';
import { drainWaiter } from '../upstream/child-pipes.js';

/** The SDK's limit of one unfinished line, kept. */
const MAX_LINE_BYTES = 10 * 1024 * 1024;
const NEWLINE = 0x0a;
const RESOLVED: Promise<void> = Promise.resolve();

/**
 * Splits a byte stream into newline-delimited JSON-RPC messages. Each complete line is decoded
 * once; a bad line is reported to `onerror` and the next line is read as usual; an unfinished line
 * over the limit is an error that ends the stream (the SDK's behaviour).
 */
class LineReader {
  private pending: Buffer | undefined;

  constructor(
    private readonly onmessage: (message: JSONRPCMessage) => void,
    private readonly onerror: (error: Error) => void,
    /** A line nesting deeper than `MAX_MESSAGE_DEPTH`, not parsed: its top-level id, when it has one. */
    private readonly ontoodeep: (id: string | number | undefined) => void,
    private readonly limit = MAX_LINE_BYTES,
  ) {}

  /** Feeds a chunk; throws when an unfinished line grows past the limit. */
  push(chunk: Buffer): void {
    let buf = chunk;
    let start = 0;
    if (this.pending) {
      if (this.pending.length + chunk.length > this.limit) {
        this.pending = undefined;
        throw new Error(`ReadBuffer exceeded maximum size of ${this.limit} bytes`);
      }
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = undefined;
    }
    for (let nl = buf.indexOf(NEWLINE, start); nl !== -1; nl = buf.indexOf(NEWLINE, start)) {
      const end = nl > start && buf[nl - 1] === 0x0d ? nl - 1 : nl;
      const line = buf.toString('utf8', start, end);
      if (jsonNestsDeeper(line, MAX_MESSAGE_DEPTH)) {
        const scanner = new TopLevelIdScanner();
        scanner.feed(buf.subarray(start, end));
        start = nl + 1;
        this.ontoodeep(scanner.id());
        continue;
      }
      start = nl + 1;
      let message: JSONRPCMessage;
      try {
        message = asJsonRpcMessage(JSON.parse(line));
      } catch (err) {
        this.onerror(err as Error);
        continue;
      }
      this.onmessage(message);
    }
    if (start < buf.length) {
      if (buf.length - start > this.limit) throw new Error(`ReadBuffer exceeded maximum size of ${this.limit} bytes`);
      this.pending = buf.subarray(start);
    }
  }

  clear(): void {
    this.pending = undefined;
  }
}

/**
 * Serves one MCP client over a readable and a writable stream (default: the process's stdin and
 * stdout), newline-delimited JSON-RPC like the SDK's `StdioServerTransport`.
 *
 * @example
 * ```ts
 * const server = gateway.createServer();
 * await server.connect(new StdioServerLineTransport());
 * ```
 */
export class StdioServerLineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private started = false;
  private readonly reader: LineReader;
  private readonly ondata = (chunk: Buffer): void => {
    try {
      this.reader.push(chunk);
    } catch (err) {
      this.onerror?.(err as Error);
      void this.close();
    }
  };
  private readonly onstreamerror = (error: Error): void => {
    this.onerror?.(error);
  };

  constructor(
    private readonly stdin: Readable = process.stdin,
    private readonly stdout: Writable = process.stdout,
  ) {
    this.reader = new LineReader(
      (m) => this.onmessage?.(m),
      (e) => this.onerror?.(e),
      (id) => {
        // Answered here, as the request never reaches the server: its client is not left waiting.
        if (id !== undefined) void this.send({ jsonrpc: '2.0', id, error: { code: -32600, message: TOO_DEEP_MESSAGE } });
        this.onerror?.(new InvalidMessageError(TOO_DEEP_MESSAGE));
      },
    );
    coalesceWrites(stdout);
    this.drained = drainWaiter(stdout);
  }

  async start(): Promise<void> {
    if (this.started) throw new Error('StdioServerLineTransport already started');
    this.started = true;
    this.stdin.on('data', this.ondata);
    this.stdin.on('error', this.onstreamerror);
  }

  async close(): Promise<void> {
    this.stdin.off('data', this.ondata);
    this.stdin.off('error', this.onstreamerror);
    // Pause only when nobody else reads stdin, as the SDK's transport does.
    if (this.stdin.listenerCount('data') === 0) this.stdin.pause();
    this.reader.clear();
    this.onclose?.();
  }

  /** Notifications dropped for a client that did not read them (serve/slow-reader.ts). */
  droppedNotifications = 0;
  private readonly drained: () => Promise<void>;

  send(message: JSONRPCMessage): Promise<void> {
    const out = this.stdout;
    if (isNotification(message) && out.writableLength > MAX_UNSENT_NOTIFICATION_BYTES) {
      if (this.droppedNotifications++ === 0) this.onerror?.(slowReaderError());
      return RESOLVED;
    }
    return out.write(`${JSON.stringify(message)}\n`) ? RESOLVED : this.drained();
  }
}
