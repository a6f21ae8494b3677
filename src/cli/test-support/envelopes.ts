/** Sample envelopes of every contract, for CLI tests. Test support only. */
/** One valid (or deliberately invalid) document per case. */
export const SAMPLES = {
  mcecOk: { ok: true, result: { rows: 3 } },
  mcecError: {
    ok: false,
    error: { code: 'wait-condition-timeout', category: 'timeout', detail: 'Waited 5 s for the dialog.' },
  },
  dwOk: {
    schema: 'durable-workflow.v2.mcp-tool-result',
    version: 1,
    status: 'ok',
    result: { rows: [1, 2, 3] },
    payload_preview: '{"rows":[1,2,3]}',
    payload_preview_truncated: false,
    payload_preview_limit_bytes: 4096,
  },
  dwBadStatus: { schema: 'durable-workflow.v2.mcp-tool-result', version: 1, status: 'weird' },
  contextosResult: {
    envelope_version: 'contextos.tool_result.v1',
    tool_call_id: 'c1',
    run_id: 'r1',
    trace_id: 't1',
    capability_id: 'fs.read',
    status: 'ok',
    output: { text: 'hello' },
    artifacts: [],
    citations: [],
    mutations: [],
    risk_tags: [],
    latency_ms: 5,
  },
  contextosCall: {
    envelope_version: 'contextos.tool_call.v1',
    tool_call_id: 'c1',
    run_id: 'r1',
    trace_id: 't1',
    capability_id: 'fs.write',
    args: { path: 'a.txt' },
    principal_chain: [
      { kind: 'user', id: 'u1', tenant_id: 'acme' },
      { kind: 'agent', id: 'a1' },
    ],
    approval_mode_requested: 'local_write',
    approval_mode_effective: 'local_write',
    approval_mode_highest: 'local_write',
    evidence_refs: [],
    idempotency_key: 'k1',
  },
} as const;

/** NDJSON text of the given documents, one per line (strings are written as they are). */
export function ndjson(...docs: unknown[]): string {
  return docs.map((d) => (typeof d === 'string' ? d : JSON.stringify(d))).join('\n') + '\n';
}
