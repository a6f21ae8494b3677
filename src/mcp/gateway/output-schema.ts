/**
 * The `outputSchema` the gateway publishes on each tool. MCP clients put every tool's
 * `outputSchema` into the model's context, so the default is a compact one: the fields an agent
 * branches on (MCEC `ok`, the DW markers and `status`, the ContextOS `envelope_version` and
 * `status`) and where the full contract is. Each constraint it states is also one of the full
 * contract's, so every valid envelope is valid under it (the tests check this against generated
 * valid documents and the gateway's real outputs). `full` publishes the whole contract schema.
 */
import type { Tool } from '@modelcontextprotocol/server';
import { envelopeOutputSchema, type Dialect } from '../envelope.js';

/** Which `outputSchema` tools publish: `compact` (default) or `full` (the whole contract). */
export type OutputSchemaStyle = 'compact' | 'full';

type OutputSchema = NonNullable<Tool['outputSchema']>;

const FOUNDING_COMPACT = {
  mcec: {
    type: 'object',
    description: 'MCEC agent tool result: https://github.com/tig/mcec/blob/develop/docs/design/agent-tool-result.schema.json',
    required: ['ok'],
    properties: { ok: { type: 'boolean' } },
  },
  dw: {
    type: 'object',
    description: 'Durable Workflow MCP tool result (durable-workflow.v2.mcp-tool-results)',
    required: ['schema', 'version', 'status'],
    properties: { schema: { const: 'durable-workflow.v2.mcp-tool-result' }, status: { enum: ['ok', 'error'] } },
  },
  contextos: {
    type: 'object',
    description: 'ContextOS ToolEnvelope v1 result: https://contextosai.com/schemas/tool-envelope.v1.schema.json',
    required: ['envelope_version', 'status'],
    properties: {
      envelope_version: { const: 'contextos.tool_result.v1' },
      status: { enum: ['ok', 'error', 'paused', 'completed', 'failed', 'rejected', 'blocked'] },
    },
  },
} satisfies Record<string, OutputSchema>;

// The later revisions keep the fields the compact schemas state (MCEC `ok`; the DW markers and `status`).
const COMPACT: Record<Dialect, OutputSchema> = {
  ...FOUNDING_COMPACT,
  'mcec@2026-07': {
    ...FOUNDING_COMPACT.mcec,
    description: 'MCEC agent tool result, revision 2026-07: https://github.com/tig/mcec/blob/develop/agent-tool-result.schema.json',
  },
  'dw@14': { ...FOUNDING_COMPACT.dw, description: 'Durable Workflow MCP tool result, catalog version 14 (durable-workflow.v2.mcp-tool-results)' },
};

/** The `outputSchema` of a gateway tool for `dialect` in the given style. */
export function toolOutputSchema(dialect: Dialect, style: OutputSchemaStyle = 'compact'): OutputSchema {
  return style === 'full' ? envelopeOutputSchema(dialect) : COMPACT[dialect];
}
