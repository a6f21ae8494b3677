/**
 * What a tool handler sees besides its arguments: ids, the abort signal, and
 * ways to add warnings, artifacts, citations, mutations, progress, a partial
 * result, binary content, and to fail with a typed failure.
 */
import type { ToolFailureInit, JsonObject, ToolCall } from 'tool-envelope/core';

/**
 * Binary content a tool returns (an image, audio, a file): it travels as an MCP
 * `image`/`audio`/`resource` content block with its MIME type, base64-encoded,
 * never inlined into the JSON result. Make one with `ctx.binary(bytes, mimeType)`.
 */
export class ToolBinary {
  constructor(
    /** The bytes. */
    readonly data: Uint8Array,
    /** The MIME type, e.g. `image/png`. */
    readonly mimeType: string,
    /** A file name, for resource blocks. */
    readonly name?: string,
    /** The resource URI for non-image, non-audio content; generated when absent. */
    readonly uri?: string,
  ) {}
}

/** A progress report from a handler. */
export interface ProgressReport {
  toolName: string;
  toolCallId: string;
  progress: number;
  total?: number;
  message?: string;
}

/** Who a call is: its tool and ids. Shared by the handler's context and the runtime's events. */
export interface CallIdentity {
  /** The tool's name (ContextOS `capability_id`). */
  readonly toolName: string;
  readonly toolCallId: string;
  readonly runId: string;
  /** W3C trace id (32 hex). */
  readonly traceId: string;
  /** The session id, when the call runs in a session. */
  readonly sessionId: string | undefined;
  readonly policyDecisionId: string | null | undefined;
  /** The ContextOS call envelope, when the call came with one. */
  readonly call: ToolCall | undefined;
}

/**
 * The context a handler receives as its second argument. Calls made after the
 * outcome was settled (e.g. by a handler that overran its deadline) are ignored.
 */
export interface ToolContext extends CallIdentity {
  /** Aborted when the deadline passes (reason: a `TimeoutError`) or the caller cancels (the caller's reason). */
  readonly signal: AbortSignal;
  /** Milliseconds left before the deadline (`Infinity` without one). */
  remainingMs(): number;
  /** Adds a non-fatal warning (MCEC `warnings[]`). */
  warn(code: string, detail: string): void;
  /** Records a reference to a produced file or object (ContextOS `artifacts`). */
  artifact(ref: string): void;
  /** Records a source the result cites (ContextOS `citations`). */
  cite(citation: JsonObject): void;
  /** Records a reference to something the call changed (ContextOS `mutations`). */
  mutation(ref: string): void;
  /** Reports progress (to `invoke:progress` listeners and the caller's `onProgress`). */
  progress(progress: number, total?: number, message?: string): void;
  /** Keeps a partial result: if the call then fails, it rides in `error.partialResult`. */
  keepPartial(value: unknown): void;
  /** Sets what the session records as this call's observation (default: the result). */
  observe(value: unknown): void;
  /** Wraps bytes as binary content with a MIME type; return it (or put it in the top level of the result). */
  binary(data: Uint8Array | ArrayBuffer, mimeType: string, options?: { name?: string; uri?: string }): ToolBinary;
  /** Fails the call with a typed failure (throws a `ToolFailure`). */
  fail(init: ToolFailureInit): never;
}
