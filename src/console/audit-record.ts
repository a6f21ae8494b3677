/**
 * One audit record: its facts, its call envelope, and its result in the three contracts (MCEC,
 * Durable Workflow and ContextOS, encoded from the stored outcome), all inert.
 */
import { encodeContextosResult, encodeDw, encodeMcec, type ToolOutcome } from 'tool-envelope/core';
import type { AuditRecord } from '../store/types.js';
import { inert, inertJson } from './inert.js';
import { page, type PageView } from './layout.js';
import { utc } from './time.js';

function encoded(outcome: unknown, encode: (o: ToolOutcome) => unknown): string {
  try {
    return `<pre>${inertJson(encode(outcome as ToolOutcome))}</pre>`;
  } catch (e) {
    return `<p class="notice error">Cannot be encoded: ${inert((e as Error).message)}</p>`;
  }
}

/** The record page. */
export function auditRecordPage(view: PageView, r: AuditRecord): string {
  const facts: [string, string][] = [
    ['id', r.id],
    ['tool', r.tool],
    ['status', r.status],
    ['error', r.category ? `${r.category}${r.errorCode ? ` / ${r.errorCode}` : ''}` : ''],
    ['principals', r.principalChain.map((p) => `${p.kind}:${p.id}${p.tenant_id ? ` (tenant ${p.tenant_id})` : ''}`).join(' → ')],
    ['started', utc(r.startedAt)],
    ['latency', `${r.latencyMs} ms`],
    ['tool call', r.toolCallId],
    ['session', r.sessionId ?? ''],
    ['approval', r.approvalId ?? ''],
    ['policy', r.policyDecision ? `${r.policyDecision.effect}: ${r.policyDecision.reason}` : ''],
    ['redaction', r.redaction ? ('off' in r.redaction ? 'off for this record' : r.redaction.pointers.join(', ')) : ''],
  ];
  const body = `<h1>Audit record</h1><section class="card"><dl>${facts.map(([k, v]) => `<dt>${k}</dt><dd>${inert(v, 2000)}</dd>`).join('')}</dl></section>
<section class="card"><h2>Call envelope (ContextOS)</h2><pre>${inertJson(r.callEnvelope)}</pre></section>
<section class="card"><h2>Result: MCEC</h2>${encoded(r.outcome, encodeMcec)}</section>
<section class="card"><h2>Result: Durable Workflow</h2>${encoded(r.outcome, encodeDw)}</section>
<section class="card"><h2>Result: ContextOS</h2>${encoded(r.outcome, encodeContextosResult)}</section>`;
  return page(view, `Audit record ${r.id}`, 'audit', body);
}
