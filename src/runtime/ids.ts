/**
 * Identifiers for tool calls: ContextOS `tool_call_id`, `run_id`, and W3C
 * trace ids (32 lowercase hex digits, never all zeros).
 */
import { randomBytes, randomFillSync, randomUUID } from 'node:crypto';
import type { ToolCall } from 'tool-envelope/core';

/**
 * Random hex is cut from batches. `randomFillSync` costs about 4 µs per call
 * whatever the size, so random bytes are drawn 64 KiB at a time (one refill
 * per 1024 calls); one native hex conversion of 512 of those bytes then
 * serves 16 calls (two 128-bit ids each). Ids are slices of that 1 KiB text.
 * A speed trick (bench/README.md): it pays for the `runtime.invoke added cost per call,
 * no schema, no store` row; its plain reference is {@link referenceHex32}, which
 * src/runtime/ids.test.ts runs beside it ({@link useReferenceIds}).
 */
const POOL_BYTES = 64 * 1024;
const HEX_BATCH_BYTES = 512;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolPos = POOL_BYTES;
let batch = '';
let batchPos = 0;

/** 32 random lowercase hex digits (128 bits from `crypto.randomFillSync`). */
function randomHex32(): string {
  if (batchPos + 32 > batch.length) {
    if (poolPos + HEX_BATCH_BYTES > POOL_BYTES) {
      randomFillSync(pool);
      poolPos = 0;
    }
    batch = pool.toString('hex', poolPos, poolPos + HEX_BATCH_BYTES);
    poolPos += HEX_BATCH_BYTES;
    batchPos = 0;
  }
  const id = batch.slice(batchPos, batchPos + 32);
  batchPos += 32;
  return id;
}

/** The plain reference of {@link randomHex32}: 16 fresh random bytes for every id. */
function referenceHex32(): string {
  return randomBytes(16).toString('hex');
}

let hex32: () => string = randomHex32;

/**
 * Makes every id of this process come from the plain reference (16 fresh random bytes
 * per id) instead of the pooled batches, or back (for tests; the ids look the same).
 */
export function useReferenceIds(on: boolean): void {
  hex32 = on ? referenceHex32 : randomHex32;
}

/** A fresh random W3C trace id: 16 random bytes as 32 lowercase hex digits, never all zeros. */
export function newTraceId(): string {
  const id = hex32();
  // An all-zero trace id is invalid in W3C Trace Context; 2^-128, but cheap to exclude. (The
  // first digit decides almost always: comparing a slice of the batch with a constant is a
  // call into the engine's runtime.)
  return id.charCodeAt(0) === 48 && id === '00000000000000000000000000000000' ? newTraceId() : id;
}

/** A fresh tool call id: 128 random bits as 32 lowercase hex digits. */
export function newToolCallId(): string {
  return hex32();
}

let uuidMs = -1;
let uuidMsHex = '';

/**
 * A fresh UUIDv7 (RFC 9562): the Unix time in milliseconds (48 bits), then 74 random bits. Ids
 * made later sort after (to the millisecond), so the audit log indexes them at its end (see
 * `toolCallKey` in store/query.ts); the random bits come from the same pool as the other ids.
 */
export function newUuidV7(): string {
  const now = Date.now();
  if (now !== uuidMs) {
    uuidMs = now;
    uuidMsHex = now.toString(16).padStart(12, '0');
  }
  const r = hex32();
  const variant = '89ab'.charAt(Number.parseInt(r.charAt(16), 16) & 3);
  return `${uuidMsHex.slice(0, 8)}-${uuidMsHex.slice(8, 12)}-7${r.slice(13, 16)}-${variant}${r.slice(17, 20)}-${r.slice(20, 32)}`;
}

/** The ids a call runs under. Any id not given is generated. */
export interface CallIds {
  toolCallId: string;
  runId: string;
  traceId: string;
  sessionId?: string;
  policyDecisionId?: string | null;
}

/** Ids a caller may pin for one call (helper layers pass pre-resolved ids). */
export type CallIdsInit = Partial<CallIds>;

/**
 * The one rule for a call's ids, written into `target` (every field set, `undefined` when
 * absent, so that a class keeps one shape): explicit `ids` win, then the ContextOS call
 * envelope's ids, then `sessionId`; a missing tool call id or trace id is generated, a
 * missing `runId` is `defaultRunId`. The runtime's per-call state takes its ids this way
 * (no object in between); {@link resolveCallIds} is the same rule as a fresh object.
 */
export function assignCallIds(
  target: CallIds,
  ids: CallIdsInit | undefined,
  call: ToolCall | undefined,
  sessionId: string | undefined,
  defaultRunId: string,
): void {
  if (ids === undefined && call === undefined) {
    target.toolCallId = newToolCallId();
    target.runId = defaultRunId;
    target.traceId = newTraceId();
    target.sessionId = sessionId;
    target.policyDecisionId = undefined;
    return;
  }
  target.toolCallId = ids?.toolCallId ?? call?.toolCallId ?? newToolCallId();
  target.runId = ids?.runId ?? call?.runId ?? defaultRunId;
  target.traceId = ids?.traceId ?? call?.traceId ?? newTraceId();
  target.sessionId = ids?.sessionId ?? call?.sessionId ?? sessionId;
  target.policyDecisionId = ids?.policyDecisionId !== undefined ? ids.policyDecisionId : call?.policyDecisionId;
}

/**
 * Resolves the ids of one call: explicit `ids` win, then the ContextOS call
 * envelope's ids, then the session's id; missing ones are generated
 * (`runId` falls back to `defaultRunId`). Absent optional ids are left out.
 */
export function resolveCallIds(
  source: { ids?: CallIdsInit | undefined; call?: ToolCall | undefined; sessionId?: string | undefined },
  defaultRunId: string,
): CallIds {
  const all: CallIds = { toolCallId: '', runId: '', traceId: '', sessionId: undefined, policyDecisionId: undefined };
  assignCallIds(all, source.ids, source.call, source.sessionId, defaultRunId);
  const out: CallIds = { toolCallId: all.toolCallId, runId: all.runId, traceId: all.traceId };
  if (all.sessionId !== undefined) out.sessionId = all.sessionId;
  if (all.policyDecisionId !== undefined) out.policyDecisionId = all.policyDecisionId;
  return out;
}

/** The run id used for calls made without a run context in this process. */
export const PROCESS_RUN_ID: string = randomUUID();
