/**
 * `tool-envelope schema`: prints a contract's JSON Schema. The ContextOS call
 * and result halves are printed as standalone schemas (their own `$id`, the
 * `$defs` they reference inlined) that compile without any other file.
 */
import { contextosPrincipalSchema, contextosSchema, dwSchema, mcecSchema, mcec202607Schema, dw14Schema } from 'tool-envelope/core';
import { usageError } from './args.js';
import { EXIT, type CliIo } from './io.js';

/** The names `tool-envelope schema` accepts. */
export const SCHEMA_NAMES = ['mcec', 'dw', 'contextos', 'contextos-call', 'contextos-result', 'contextos-principal', 'mcec@2026-07', 'dw@14'] as const;

/** A name accepted by {@link schemaFor}. */
export type SchemaName = (typeof SCHEMA_NAMES)[number];

/**
 * `$id`s of the standalone ContextOS halves. A `$id` may not carry a fragment,
 * so the envelope's id + `#/$defs/...` cannot serve.
 */
export const CONTEXTOS_HALF_IDS = {
  call: 'https://contextosai.com/schemas/tool-envelope.v1.call.schema.json',
  result: 'https://contextosai.com/schemas/tool-envelope.v1.result.schema.json',
} as const;

/**
 * The JSON Schema printed for `name`: the published schema for a contract,
 * or a standalone schema for a ContextOS half.
 */
export function schemaFor(name: SchemaName): Record<string, unknown> {
  switch (name) {
    case 'mcec':
      return mcecSchema;
    case 'dw':
      return dwSchema;
    case 'contextos':
      return contextosSchema;
    case 'contextos-principal':
      return contextosPrincipalSchema;
    case 'mcec@2026-07':
      return mcec202607Schema();
    case 'dw@14':
      return dw14Schema();
    case 'contextos-call': {
      const defs = contextosSchema.$defs;
      return {
        $schema: contextosSchema.$schema,
        $id: CONTEXTOS_HALF_IDS.call,
        title: `${contextosSchema.title} — tool call envelope`,
        description: `The ToolCallEnvelope of ${contextosSchema.$id}, standalone: ApprovalMode and Principal (${contextosPrincipalSchema.$id}) inlined.`,
        ...defs.ToolCallEnvelope,
        // The envelope's $refs are '#/$defs/ApprovalMode' and '#/$defs/Principal': keep those names, resolve them here.
        $defs: { ApprovalMode: defs.ApprovalMode, Principal: contextosPrincipalSchema.$defs.Principal },
      };
    }
    case 'contextos-result':
      return {
        $schema: contextosSchema.$schema,
        $id: CONTEXTOS_HALF_IDS.result,
        title: `${contextosSchema.title} — tool result envelope`,
        description: `The ToolResultEnvelope of ${contextosSchema.$id}, standalone.`,
        ...contextosSchema.$defs.ToolResultEnvelope,
      };
  }
}

/** `--help` text. */
export const help = `Usage: tool-envelope schema NAME

Prints a JSON Schema (draft 2020-12), pretty-printed, on stdout.

Names:
  mcec                 MCEC agent tool result
  dw                   Durable Workflow MCP tool result
  contextos            ContextOS ToolEnvelope v1 (call or result; $refs contextos-principal)
  contextos-call       the ContextOS call envelope alone, standalone ($id ${CONTEXTOS_HALF_IDS.call})
  contextos-result     the ContextOS result envelope alone, standalone ($id ${CONTEXTOS_HALF_IDS.result})
  contextos-principal  the ContextOS Principal the call envelope references
  mcec@2026-07         MCEC agent tool result, revision 2026-07 (schemas/revisions/)
  dw@14                Durable Workflow MCP tool result, catalog 14 (schemas/revisions/)

Examples:
  tool-envelope schema dw > dw.schema.json
  tool-envelope schema contextos-call | jq .required

Exit codes: 0 printed, 2 unknown or missing NAME.
`;

/** Runs the verb; returns the exit code. */
export async function run(args: string[], io: CliIo): Promise<number> {
  const names = args.filter((a) => a !== '--');
  const flag = names.find((a) => a.startsWith('-'));
  if (flag !== undefined) return usageError('schema', io, `unknown option '${flag}'`);
  if (names.length !== 1) return usageError('schema', io, `give exactly one NAME: ${SCHEMA_NAMES.join(', ')}`);
  const name = names[0]!;
  if (!(SCHEMA_NAMES as readonly string[]).includes(name)) {
    return usageError('schema', io, `unknown schema '${name}'; one of ${SCHEMA_NAMES.join(', ')}`);
  }
  io.stdout.write(JSON.stringify(schemaFor(name as SchemaName), null, 2) + '\n');
  return EXIT.OK;
}
