/**
 * What happens to an approval request, as events for whoever listens (the gateway's log lines and
 * webhooks): requested, approved, rejected, expired, run. Each event carries the call's arguments
 * as the audit log stores them, through the store's redactor, never the raw arguments.
 */
import type { JsonValue, Principal } from 'tool-envelope/core';
import { newAuditId } from '../store/ids.js';
import { createRedactor, type RedactionOptions } from '../store/redact.js';
import type { ApprovalRequest, AuditRecord } from '../store/types.js';

/** The events of a request's life, in the order they can happen. */
export const APPROVAL_EVENTS = ['requested', 'approved', 'rejected', 'expired', 'run'] as const;
export type ApprovalEventName = (typeof APPROVAL_EVENTS)[number];

/** One event of an approval request. */
export interface ApprovalEvent {
  event: ApprovalEventName;
  approvalId: string;
  tool: string;
  principalChain: Principal[];
  /** The call's arguments as the audit log stores them (redacted). */
  args: JsonValue;
  /** The policy rule that paused the call, when a rule did. */
  rule: string | null;
  /** Why the call paused (the policy decision's reason). */
  reason: string;
  expiresAt: number | null;
  /** Who decided (approved or rejected), when someone did. */
  decidedBy: string | null;
  /** `run`: the run's status (`completed` or `failed`); `expired`: what expired (`pending` or `approved`). */
  status: string | null;
  /** When it happened (epoch ms). */
  at: number;
}

/** Receives approval events; must not throw (an event never fails a call). */
export type ApprovalEventSink = (event: ApprovalEvent) => void;

/**
 * Turns request rows into events for a sink, with the arguments redacted as the audit log redacts
 * them (`redaction`: the audit writer's options; `false`: the log stores them verbatim).
 */
export class ApprovalEvents {
  private readonly redact: (record: AuditRecord) => AuditRecord;

  constructor(
    private readonly sink: ApprovalEventSink,
    redaction: RedactionOptions | false | undefined,
  ) {
    this.redact = createRedactor(redaction ?? {});
  }

  /** Sends one event; a sink or redaction that fails is swallowed: the call's outcome stands. */
  emit(event: ApprovalEventName, a: ApprovalRequest, extra: { status?: string | null; at?: number } = {}): void {
    try {
      this.sink(this.eventOf(event, a, extra));
    } catch {
      // Listening is best effort by design: a broken listener must not change what the call does.
    }
  }

  private eventOf(event: ApprovalEventName, a: ApprovalRequest, extra: { status?: string | null; at?: number }): ApprovalEvent {
    const stored = this.redact(recordOf(a));
    const rule = (a.policyDecision as { rule?: unknown } | null)?.rule;
    return {
      event,
      approvalId: a.id,
      tool: a.tool,
      principalChain: stored.principalChain,
      args: ((stored.callEnvelope as { args?: JsonValue }).args ?? {}) as JsonValue,
      rule: typeof rule === 'string' ? rule : null,
      reason: a.reason,
      expiresAt: a.expiresAt,
      decidedBy: event === 'requested' ? null : a.decidedBy,
      status: extra.status ?? null,
      at: extra.at ?? Date.now(),
    };
  }
}

/** The request as an audit record, only so the store's redactor sees what it sees in the log. */
function recordOf(a: ApprovalRequest): AuditRecord {
  return {
    id: newAuditId(),
    tool: a.tool,
    status: 'paused',
    category: null,
    errorCode: null,
    toolCallId: a.toolCallId,
    runId: a.runId,
    traceId: a.toolCallId,
    sessionId: a.sessionId,
    startedAt: a.createdAt,
    endedAt: a.createdAt,
    latencyMs: 0,
    callEnvelope: a.callEnvelope,
    resultEnvelope: {},
    outcome: {},
    principalChain: a.principalChain,
    policyDecision: null,
    approvalId: a.id,
  };
}
