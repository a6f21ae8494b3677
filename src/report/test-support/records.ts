/**
 * Audit records for report tests at volume (100 000 calls): built the way the
 * gateway and the governed runtime build them (canonical outcome → ContextOS
 * envelopes), with a seeded random mix of tools, statuses, categories and
 * latencies. Test support only.
 */
import { encodeContextosCall, encodeContextosResult } from '../../core/contracts/contextos.js';
import type { JsonObject } from '../../core/json.js';
import { failure, success, toolError, type ToolCall, type ToolOutcome } from '../../core/model.js';
import type { ErrorCategory } from '../../core/taxonomy.js';
import type { AuditRecord } from '../../store/types.js';

/** A small deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TOOLS = ['fs_read', 'fs_write', 'http_get', 'db_query', 'browser_click', 'screen_capture', 'search', 'repo_delete'];
const CATS: ErrorCategory[] = ['timeout', 'no-target', 'invalid-argument', 'internal', 'stale-element', 'capture-blank'];

export interface SyntheticOptions {
  seed?: number;
  /** Epoch ms of the first call. */
  start?: number;
  /** Mean ms between calls. */
  spacingMs?: number;
}

/** `n` audit records in start order. */
export function* syntheticRecords(n: number, options: SyntheticOptions = {}): Generator<AuditRecord> {
  const rand = prng(options.seed ?? 42);
  let t = options.start ?? Date.UTC(2025, 0, 1);
  const spacing = options.spacingMs ?? 50;
  for (let i = 0; i < n; i++) {
    t += Math.floor(rand() * spacing * 2);
    const tool = TOOLS[Math.floor(rand() * rand() * TOOLS.length)]!;
    // A lognormal-ish latency: most calls fast, a long tail.
    const latencyMs = Math.round(Math.exp(rand() * 4 + rand() * rand() * 6));
    const r = rand();
    const session = `sess-${Math.floor(i / 50)}`;
    const toolCallId = `call-${i.toString(16).padStart(8, '0')}`;
    const call: ToolCall = {
      toolCallId,
      runId: 'run-synthetic',
      traceId: (i + 1).toString(16).padStart(32, '0'),
      sessionId: session,
      capabilityId: tool,
      args: { n: i, path: `/data/${i % 100}.txt` },
      principalChain: [
        { kind: 'user', id: 'u1' },
        { kind: 'agent', id: 'a1' },
      ],
      approvalModeRequested: 'read_only',
      approvalModeEffective: 'read_only',
      approvalModeHighest: 'read_only',
      evidenceRefs: [],
    };
    const ids = { toolCallId, runId: call.runId, traceId: call.traceId, sessionId: session, capabilityId: tool, latencyMs };
    let outcome: ToolOutcome;
    if (r < 0.9) outcome = success({ rows: i % 7, page: 1 }, ids);
    else if (r < 0.97) {
      const cat = CATS[Math.floor(rand() * CATS.length)]!;
      outcome = failure(toolError(cat, `${cat}-synthetic`, `Synthetic ${cat} failure #${i}.`), ids);
    } else if (r < 0.985) outcome = failure(toolError('elevation', 'policy-denied', 'Blocked by policy.'), { ...ids, status: 'blocked' });
    else if (r < 0.99) outcome = failure(toolError('elevation', 'approval-required', 'Waiting for an approver.'), { ...ids, status: 'paused' });
    else outcome = { ...success({ done: true }, ids), status: 'completed' };
    const category = outcome.error ? outcome.error.category : null;
    yield {
      id: `aud_${i.toString(16).padStart(8, '0')}`,
      tool,
      status: outcome.status,
      category,
      errorCode: outcome.error?.code ?? null,
      toolCallId,
      runId: call.runId,
      traceId: call.traceId,
      sessionId: session,
      startedAt: t,
      endedAt: t + latencyMs,
      latencyMs,
      callEnvelope: encodeContextosCall(call) as unknown as JsonObject,
      resultEnvelope: encodeContextosResult(outcome) as unknown as JsonObject,
      outcome: JSON.parse(JSON.stringify(outcome)) as JsonObject,
      principalChain: call.principalChain,
      policyDecision: null,
      idempotencyKey: null,
      replay: false,
      approvalId: null,
    };
  }
}
