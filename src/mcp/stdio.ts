/**
 * Stdio transports for the gateway, implementing the SDK's `Transport` interface: one for serving a
 * client on stdin/stdout, one for a child-process upstream. They carry the same newline-delimited
 * JSON-RPC as the SDK's `StdioServerTransport`/`StdioClientTransport`, and the SDK's `Protocol`
 * (`Server`, `Client`) does everything MCP on top of them, as it does on the SDK's own transports.
 *
 * The serving transport splits each line out of the read chunk, `JSON.parse`s it and checks it
 * against the JSON-RPC shapes with plain property tests ({@link asJsonRpcMessage}); a line nesting
 * deeper than `MAX_MESSAGE_DEPTH` is not parsed, and a request in it is answered with an Invalid
 * Request error (message-depth.ts); writes made in the same tick leave in one `writev` (see
 * {@link coalesceWrites}).
 *
 * The child-process transport does what the SDK's `StdioClientTransport` (same wire format) does
 * not: a message over the result size limit is dropped as it arrives and answered with a too-large
 * error (the connection stays up), the child runs in its own process group (ended whole on close),
 * and its stderr tail and exit are kept for the operator. It reads and writes the child's pipes
 * with the functions of stdio-wire.ts (the SDK's own codec, a write per message). It had a fast
 * wire too (a plain property check instead of the SDK's zod parse, the writes of one tick in one
 * `writev`), removed because it did not move its row (bench/README.md).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { jsonNestsDeeper } from 'tool-envelope/core';
import { coalesceWrites } from './coalesce.js';
import { StderrTail, type ChildExit } from './stderr-tail.js';
import { MAX_MESSAGE_DEPTH, TOO_DEEP_MESSAGE } from './message-depth.js';
import { isNotification, MAX_UNSENT_NOTIFICATION_BYTES, slowReaderError } from './slow-reader.js';
import { DEFAULT_MAX_RESULT_BYTES, TOO_LARGE_MARK, TopLevelIdScanner } from './result-size.js';
import { childWriter, drainWaiter, readChildLines, type StdoutReader } from './stdio-wire.js';

/** The SDK's limit of one unfinished line, kept. */
const MAX_LINE_BYTES = 10 * 1024 * 1024;
const NEWLINE = 0x0a;
const RESOLVED: Promise<void> = Promise.resolve();

/**
 * An input line that is JSON but not a JSON-RPC 2.0 message. A `SyntaxError`, like a line that is
 * not JSON at all, so that callers classify both as a protocol fault of the peer.
 *
 * @example
 * ```ts
 * try { parseJsonRpc('{"jsonrpc":"1.0"}'); } catch (e) { e instanceof InvalidMessageError; } // true
 * ```
 */
export class InvalidMessageError extends SyntaxError {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidMessageError';
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isId(v: unknown): boolean {
  return typeof v === 'string' || Number.isInteger(v);
}

function onlyKeys(o: Record<string, unknown>, allowed: readonly string[]): boolean {
  for (const k in o) if (!allowed.includes(k)) return false;
  return true;
}

const REQUEST_KEYS = ['jsonrpc', 'id', 'method', 'params'] as const;
const RESULT_KEYS = ['jsonrpc', 'id', 'result'] as const;
const ERROR_KEYS = ['jsonrpc', 'id', 'error'] as const;

/**
 * Checks that a parsed value is a JSON-RPC 2.0 message with the shapes the SDK's
 * `JSONRPCMessageSchema` accepts (request, notification, result or error response; no unknown
 * top-level keys; integer or string ids and progress tokens) and returns it as it is.
 *
 * @example
 * ```ts
 * asJsonRpcMessage({ jsonrpc: '2.0', id: 1, method: 'ping' }); // the same object
 * ```
 */
export function asJsonRpcMessage(value: unknown): JSONRPCMessage {
  if (!isObject(value) || value.jsonrpc !== '2.0') throw new InvalidMessageError('Invalid JSON-RPC message: expected an object with jsonrpc "2.0"');
  if ('method' in value) {
    if (typeof value.method !== 'string') throw new InvalidMessageError('Invalid JSON-RPC message: method must be a string');
    if ('id' in value && !isId(value.id)) throw new InvalidMessageError('Invalid JSON-RPC request: id must be a string or an integer');
    const params = value.params;
    if (params !== undefined) {
      if (!isObject(params)) throw new InvalidMessageError('Invalid JSON-RPC message: params must be an object');
      const meta = params._meta;
      if (meta !== undefined) {
        if (!isObject(meta)) throw new InvalidMessageError('Invalid JSON-RPC message: params._meta must be an object');
        if (meta.progressToken !== undefined && !isId(meta.progressToken)) {
          throw new InvalidMessageError('Invalid JSON-RPC message: progressToken must be a string or an integer');
        }
      }
    }
    if (!onlyKeys(value, REQUEST_KEYS)) throw new InvalidMessageError('Invalid JSON-RPC message: unknown top-level key');
    return value as unknown as JSONRPCMessage;
  }
  if ('result' in value) {
    if (!isId(value.id)) throw new InvalidMessageError('Invalid JSON-RPC response: id must be a string or an integer');
    if (!isObject(value.result)) throw new InvalidMessageError('Invalid JSON-RPC response: result must be an object');
    if (!onlyKeys(value, RESULT_KEYS)) throw new InvalidMessageError('Invalid JSON-RPC response: unknown top-level key');
    return value as unknown as JSONRPCMessage;
  }
  if ('error' in value) {
    if (value.id !== undefined && !isId(value.id)) throw new InvalidMessageError('Invalid JSON-RPC error: id must be a string or an integer');
    const error = value.error;
    if (!isObject(error) || !Number.isInteger(error.code) || typeof error.message !== 'string') {
      throw new InvalidMessageError('Invalid JSON-RPC error: error needs an integer code and a string message');
    }
    if (!onlyKeys(value, ERROR_KEYS)) throw new InvalidMessageError('Invalid JSON-RPC error: unknown top-level key');
    return value as unknown as JSONRPCMessage;
  }
  throw new InvalidMessageError('Invalid JSON-RPC message: neither a request, a notification nor a response');
}

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

  /** Notifications dropped for a client that did not read them (slow-reader.ts). */
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

/**
 * How to start a child-process MCP server: the parameters of the SDK's `StdioClientTransport`.
 *
 * @example
 * ```ts
 * const p: ChildProcessParams = { command: 'node', args: ['server.js'], stderr: 'pipe' };
 * ```
 */
export interface ChildProcessParams {
  command: string;
  args?: string[];
  /** Merged over the SDK's safe default environment (`getDefaultEnvironment()`). */
  env?: Record<string, string>;
  cwd?: string;
  /** The child's stderr: `inherit` (default), `pipe` (read it from {@link ChildProcessTransport.stderr}) or `ignore`. */
  stderr?: 'inherit' | 'pipe' | 'ignore';
  /**
   * Largest message read from the child, in bytes (default 10 MiB). A bigger one is dropped as it
   * arrives and its request answered with a JSON-RPC error whose `data` holds `TOO_LARGE_MARK`; the
   * connection stays up.
   */
  maxMessageBytes?: number;
  /** On close: how long the child may take to exit after its stdin ends, before SIGTERM; default 150 ms. */
  exitGraceMs?: number;
  /** On close: how long after SIGTERM before SIGKILL; default 250 ms. */
  termGraceMs?: number;
}

function killTree(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (process.platform !== 'win32' && child.pid) process.kill(-child.pid, signal);
    else child.kill(signal);
  } catch {
    // Already gone.
  }
}

/**
 * Talks to an MCP server in a child process over its stdin/stdout, like the SDK's
 * `StdioClientTransport` (same shutdown order: end stdin, then SIGTERM, then SIGKILL, with shorter graces,
 * to the child's whole process group).
 *
 * @example
 * ```ts
 * const client = new Client({ name: 'me', version: '1' });
 * await client.connect(new ChildProcessTransport({ command: 'node', args: ['server.js'] }));
 * ```
 */
export class ChildProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child: ChildProcess | undefined;
  private spawned = false;
  private readonly reader: StdoutReader;
  private sendToChild: ((message: JSONRPCMessage) => Promise<void>) | undefined;
  /** Made at once (as the SDK does) so that listeners can attach before the child starts and nothing it writes is lost. */
  private readonly stderrStream: PassThrough | null;

  constructor(private readonly params: ChildProcessParams) {
    this.stderrStream = params.stderr === 'pipe' ? new PassThrough() : null;
    const limit = params.maxMessageBytes ?? DEFAULT_MAX_RESULT_BYTES;
    this.reader = readChildLines(
      (m) => this.onmessage?.(m),
      (e) => this.onerror?.(e),
      limit,
      (id, bytes) => {
        const message = `a message of ${bytes} bytes is over the limit of ${limit} bytes and was dropped`;
        if (id === undefined) this.onerror?.(new Error(message));
        else this.onmessage?.({ jsonrpc: '2.0', id, error: { code: -32603, message, data: { [TOO_LARGE_MARK]: true, bytes, limitBytes: limit } } });
      },
    );
  }

  /** The child's process id once started. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** The child's stderr when `stderr: 'pipe'` was asked for. */
  get stderr(): Readable | null {
    return this.stderrStream;
  }

  /** The last lines of the child's stderr (with `stderr: 'pipe'`), and how it ended once it has. */
  readonly stderrTail = new StderrTail();
  /** Set when the child has exited (its `close`). */
  exit: ChildExit | undefined;
  /** Set when the child could not be spawned at all. */
  spawnError: Error | undefined;
  // Declared before `ended`, whose executor sets it (class fields are defined in order).
  private markEnded: () => void = () => {};
  /** Resolves when the child has exited or failed to spawn. */
  readonly ended: Promise<void> = new Promise((resolve) => {
    this.markEnded = resolve;
  });

  start(): Promise<void> {
    if (this.spawned) throw new Error('ChildProcessTransport already started');
    this.spawned = true;
    const p = this.params;
    return new Promise((resolve, reject) => {
      const child = spawn(p.command, p.args ?? [], {
        env: { ...getDefaultEnvironment(), ...p.env },
        stdio: ['pipe', 'pipe', p.stderr ?? 'inherit'],
        shell: false,
        // Its own process group, so that closing ends the server a wrapper (`npx`, `sh -c`) started too.
        detached: process.platform !== 'win32',
        windowsHide: process.platform === 'win32',
        ...(p.cwd !== undefined ? { cwd: p.cwd } : {}),
      });
      this.child = child;
      child.on('error', (error) => {
        if (child.pid === undefined) {
          this.spawnError = error;
          this.markEnded();
        }
        reject(error);
        this.onerror?.(error);
      });
      child.on('spawn', () => resolve());
      child.on('close', (code, signal) => {
        this.exit = { code, signal };
        this.markEnded();
        this.child = undefined;
        this.onclose?.();
      });
      child.stdin!.on('error', (error) => this.onerror?.(error));
      this.sendToChild = childWriter(child.stdin!);
      child.stdout!.on('data', (chunk: Buffer) => {
        try {
          this.reader.push(chunk);
        } catch (error) {
          this.onerror?.(error as Error);
          void this.close();
        }
      });
      child.stdout!.on('error', (error) => this.onerror?.(error));
      if (this.stderrStream && child.stderr) {
        // Kept here, synchronously: every line is in the tail before the child's 'close' is reported.
        child.stderr.on('data', (chunk: Buffer) => this.stderrTail.push(chunk));
        child.stderr.pipe(this.stderrStream);
      }
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    this.reader.clear();
    if (!child) return;
    // Sends from now on fail with 'Not connected', as with the SDK's transport; onclose still comes from the child's 'close'.
    this.child = undefined;
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const grace = (ms: number): Promise<void> => Promise.race([closed, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
    try {
      child.stdin?.end();
    } catch {
      // Already closed.
    }
    // Short graces: a gateway must be gone within 500 ms of its own stdin closing, upstreams included.
    await grace(this.params.exitGraceMs ?? 150);
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      if (child.exitCode !== null || child.signalCode !== null) break;
      killTree(child, signal);
      if (signal === 'SIGTERM') await grace(this.params.termGraceMs ?? 250);
    }
    // A wrapper (`npx`, `sh -c`) may have exited and left its server running in the group.
    killTree(child, 'SIGKILL');
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (!this.child?.stdin || !this.sendToChild) return Promise.reject(new Error('Not connected'));
    return this.sendToChild(message);
  }
}
