/**
 * A child-process upstream (an SDK `Transport`), doing what `StdioClientTransport` does not: a message
 * over the size limit dropped as it arrives and answered too-large (the connection stays up), the child
 * in its own process group (ended whole on close), its stderr tail and exit kept for the operator.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { PassThrough, type Readable } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { StderrTail, type ChildExit } from './stderr-tail.js';
import { DEFAULT_MAX_RESULT_BYTES, TOO_LARGE_MARK } from '../wire/result-size.js';
import { childWriter, readChildLines, type StdoutReader } from './child-pipes.js';

/** How to start a child-process MCP server: the parameters of the SDK's `StdioClientTransport`. */
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

/** How much of the first undecodable stdout line is kept, for the operator. */
const BAD_LINE_BYTES = 200;

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
      (line) => {
        this.firstBadLine ??= line.subarray(0, BAD_LINE_BYTES).toString('utf8');
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
  /** The start of the first stdout line that was not a JSON-RPC message (as written: not yet made inert). */
  firstBadLine: string | undefined;
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
