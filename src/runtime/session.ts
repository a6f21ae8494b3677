/**
 * Sessions (MCEC): a session id shared by a series of calls, and the last good observation, kept by
 * reference and summarised (inlined, or an artifact file) only when a failure carries it.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolEnvelopeError, type JsonObject, type JsonValue } from 'tool-envelope/core';
import type { ToolBinary } from './context.js';

export interface SessionOptions {
  /** The session id; a random UUID when absent. */
  id?: string;
  /** Largest observation inlined, in bytes of JSON (default 16 KiB); larger ones are summarised. */
  inlineLimitBytes?: number;
  /**
   * Where summarised observations are written. Default: a fresh temporary
   * directory, removed by `close()`. A directory you give is never removed.
   */
  artifactDir?: string;
}

interface Pending {
  toolName: string;
  toolCallId: string;
  value: JsonValue;
  binary: ToolBinary | undefined;
  summary: JsonObject | undefined;
}

const DEFAULT_INLINE_LIMIT = 16 * 1024;

/** True when the JSON text of `value` is longer than `limit` bytes; stops counting early. */
function jsonLarger(value: JsonValue, limit: number): boolean {
  let budget = limit;
  const stack: JsonValue[] = [value];
  while (stack.length > 0) {
    const v = stack.pop()!;
    if (typeof v === 'string') budget -= v.length + 2;
    else if (v === null || typeof v !== 'object') budget -= 8;
    else if (Array.isArray(v)) {
      budget -= 2 + v.length;
      for (const item of v) stack.push(item);
    } else {
      for (const k of Object.keys(v)) {
        budget -= k.length + 4;
        stack.push(v[k]!);
      }
    }
    if (budget < 0) return true;
  }
  // Character counts understate UTF-8 bytes; measure exactly when it is close.
  return budget < limit / 2 ? Buffer.byteLength(JSON.stringify(value)) > limit : false;
}

/** A tool session. Pass it to `invoke(..., { session })`. */
export class Session {
  /** The session id (MCEC `sessionId`, ContextOS `session_id`). */
  readonly id: string;
  readonly #inlineLimit: number;
  readonly #givenDir: string | undefined;
  #ownDir: string | undefined;
  #pending: Pending | undefined;
  #closed = false;

  constructor(options?: SessionOptions) {
    const id = options?.id ?? randomUUID();
    if (typeof id !== 'string' || id === '') throw new ToolEnvelopeError('invalid-option', 'session id must be a non-empty string');
    const limit = options?.inlineLimitBytes ?? DEFAULT_INLINE_LIMIT;
    if (!Number.isSafeInteger(limit) || limit < 0) throw new ToolEnvelopeError('invalid-option', 'inlineLimitBytes must be a non-negative integer');
    this.id = id;
    this.#inlineLimit = limit;
    this.#givenDir = options?.artifactDir;
  }

  /** True after `close()`. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * The last good observation, inlined or summarised; undefined when there is none.
   * Computed on first read after each good call (a large one is written to an artifact file then).
   */
  get lastObservation(): JsonObject | undefined {
    const p = this.#pending;
    if (p === undefined) return undefined;
    p.summary ??= this.#summarise(p);
    return p.summary;
  }

  /**
   * Records the observation of a successful call (the runtime calls this).
   *
   * @internal
   */
  recordSuccess(toolName: string, toolCallId: string, value: JsonValue, binary: ToolBinary | undefined): void {
    if (this.#closed) return;
    this.#pending = { toolName, toolCallId, value, binary, summary: undefined };
  }

  /**
   * Releases the observation and removes the artifact directory the session created.
   * Idempotent. Invoking with a closed session is a library error (`closed`).
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#pending = undefined;
    const dir = this.#ownDir;
    this.#ownDir = undefined;
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }

  #artifactDir(): string {
    if (this.#givenDir !== undefined) {
      mkdirSync(this.#givenDir, { recursive: true });
      return this.#givenDir;
    }
    return (this.#ownDir ??= mkdtempSync(join(tmpdir(), 'tool-envelope-session-')));
  }

  #summarise(p: Pending): JsonObject {
    const head = { tool: p.toolName, toolCallId: p.toolCallId };
    if (p.binary === undefined && !jsonLarger(p.value, this.#inlineLimit)) return { ...head, kind: 'json', value: p.value };
    const bytes = p.binary?.data ?? Buffer.from(JSON.stringify(p.value));
    const mimeType = p.binary?.mimeType ?? 'application/json';
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const ext = p.binary === undefined ? 'json' : 'bin';
    const safeId = p.toolCallId.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 100);
    const summary: JsonObject = { ...head, kind: p.binary === undefined ? 'json' : 'binary', mimeType, sizeBytes: bytes.byteLength, sha256 };
    try {
      const artifactPath = join(this.#artifactDir(), `observation-${safeId}.${ext}`);
      writeFileSync(artifactPath, bytes);
      summary.artifactPath = artifactPath;
    } catch (e) {
      // The summary is still useful without the file; say why it is missing.
      summary.artifactError = e instanceof Error ? ((e as NodeJS.ErrnoException).code ?? e.name) : 'write failed';
    }
    return summary;
  }
}

/**
 * Creates a session.
 *
 * @example
 * ```ts
 * const session = createSession({ id: 'desk-1' });
 * ```
 */
export function createSession(options?: SessionOptions): Session {
  return new Session(options);
}
