/** The `_meta` keys of the gateway's wire, shared by every MCP face (gateway, server adapter, CLI). */

/** `_meta` keys the gateway reads from a `tools/call` request. */
export const META_KEYS = {
  /** Idempotency key of a call (preferred spelling). */
  idempotencyKey: 'tool-envelope/idempotency-key',
  /** Idempotency key, short spelling. */
  idempotencyKeyShort: 'idempotencyKey',
  /** W3C trace context. */
  traceparent: 'traceparent',
  /** ContextOS run id the call belongs to. */
  runId: 'tool-envelope/run-id',
  /** The approval mode a tool resolved to, published on each tool in `tools/list`. */
  approvalMode: 'tool-envelope/approval-mode',
  /** The upstream's own output schema, kept when the envelope schema replaces it. */
  upstreamOutputSchema: 'tool-envelope/upstream-output-schema',
  /** The upstream a tool comes from. */
  upstream: 'tool-envelope/upstream',
  /** On `tools/call`: the approval mode the call asks for (default: the tool's mode, its ceiling). */
  requestedMode: 'tool-envelope/approval-mode',
  /** On `tools/call`: the ContextOS principal chain, from the originating principal to the acting agent. */
  principalChain: 'tool-envelope/principal-chain',
  /** On `tools/call`: ContextOS evidence refs (a list of strings). */
  evidenceRefs: 'tool-envelope/evidence-refs',
} as const;
