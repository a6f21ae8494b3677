/**
 * Records every gateway call in a store's audit log (through the store's
 * batching `AuditWriter`), off the answer's path.
 */
import { randomUUID } from 'node:crypto';
import { contracts, type JsonObject, isOk, type ToolOutcome } from 'tool-envelope/core';
import { AuditWriter } from '../../store/audit-writer.js';
import type { AuditRecord, Store } from '../../store/types.js';
import type { GatewayCall, GatewayRecorder } from '../call.js';

/** The ContextOS call envelope of a gateway call (what the audit log keeps as `callEnvelope`). */
export function callEnvelopeOf(call: GatewayCall): JsonObject {
  return {
    envelope_version: 'contextos.tool_call.v1',
    tool_call_id: call.toolCallId,
    run_id: call.runId,
    trace_id: call.traceId,
    ...(call.sessionId ? { session_id: call.sessionId } : {}),
    capability_id: call.tool,
    args: call.args,
    principal_chain: [],
    approval_mode_requested: call.ceiling,
    approval_mode_effective: call.ceiling,
    approval_mode_highest: call.ceiling,
    evidence_refs: [],
    idempotency_key: call.idempotencyKey ?? null,
    metadata: {
      upstream: call.upstream,
      upstream_tool: call.upstreamTool,
      ...(call.traceparent ? { traceparent: call.traceparent } : {}),
    },
  };
}

/** The audit record of one finished gateway call. */
export function auditRecordOf(call: GatewayCall, outcome: ToolOutcome, endedAt: number): AuditRecord {
  const { content: _c, ...kept } = outcome;
  const failed = !isOk(outcome) && outcome.error ? outcome.error : null;
  return {
    id: `aud_${randomUUID()}`,
    tool: call.tool,
    status: outcome.status,
    category: failed ? failed.category : null,
    errorCode: failed?.code ?? null,
    toolCallId: call.toolCallId,
    runId: call.runId,
    traceId: call.traceId,
    sessionId: call.sessionId ?? null,
    startedAt: call.startedAt,
    endedAt,
    latencyMs: outcome.latencyMs ?? Math.max(0, endedAt - call.startedAt),
    callEnvelope: callEnvelopeOf(call),
    resultEnvelope: contracts.contextos.encode(kept) as unknown as JsonObject,
    outcome: JSON.parse(JSON.stringify(kept)) as JsonObject,
    principalChain: [],
    policyDecision: null,
    idempotencyKey: call.idempotencyKey ?? null,
  };
}

/**
 * A {@link GatewayRecorder} that appends one audit record per call to a store.
 * Records are built and written after the answer went out; failures go to `onError`.
 *
 * @example
 * ```ts
 * const store = await openStore('./tool-envelope.db');
 * const gw = await Gateway.start({ upstreams, recorder: new StoreRecorder(store) });
 * ```
 */
export class StoreRecorder implements GatewayRecorder {
  private readonly writer: AuditWriter;
  private pending: [GatewayCall, ToolOutcome, number][] = [];
  private scheduled = false;

  constructor(
    store: Pick<Store, 'appendAudit'>,
    private readonly onError?: (err: unknown) => void,
  ) {
    this.writer = new AuditWriter(store, { onError: (err) => this.onError?.(err) });
  }

  record(call: GatewayCall, outcome: ToolOutcome, _envelope: JsonObject, endedAt: number): void {
    this.pending.push([call, outcome, endedAt]);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.drain());
  }

  private drain(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    for (const [call, outcome, endedAt] of batch) {
      let record: AuditRecord;
      try {
        record = auditRecordOf(call, outcome, endedAt);
      } catch (err) {
        this.onError?.(err);
        continue;
      }
      this.writer.submit(record).catch((err: unknown) => this.onError?.(err));
    }
  }

  async flush(): Promise<void> {
    if (this.pending.length > 0) this.drain();
    await this.writer.flush();
  }

  /** Records written so far. */
  get written(): number {
    return this.writer.written;
  }
}
