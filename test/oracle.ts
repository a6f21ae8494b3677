/**
 * The conformance oracle: validators compiled in the test process from the
 * published contract files in `../shared/contracts` (beside the repository),
 * never from the project's own copies or generated code.
 *
 * @example
 * ```ts
 * import { oracleValidate } from '../../test/oracle.js';
 * expect(oracleValidate('dw', doc).valid).toBe(true);
 * ```
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';

/**
 * The repository root (this file lives in `<root>/test`).
 *
 * @example
 * ```ts
 * path.join(repoRoot, 'schemas');
 * ```
 */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The published contracts, beside the repository (also right for a fresh clone next to `shared/`),
 * or where `TOOL_ENVELOPE_CONTRACTS_DIR` says.
 *
 * @example
 * ```ts
 * readFileSync(path.join(contractsDir, CONTRACT_FILES.dw), 'utf8');
 * ```
 */
export const contractsDir = path.resolve(process.env.TOOL_ENVELOPE_CONTRACTS_DIR ?? path.join(repoRoot, '..', 'shared', 'contracts'));

/**
 * The contract files, by short name.
 *
 * @example
 * ```ts
 * CONTRACT_FILES.mcec; // 'mcec-agent-tool-result.schema.json'
 * ```
 */
export const CONTRACT_FILES = {
  mcec: 'mcec-agent-tool-result.schema.json',
  dw: 'durable-workflow-mcp-tool-results.schema.json',
  contextos: 'contextos-tool-envelope.v1.schema.json',
  principal: 'contextos-run-context.v1.principal.schema.json',
} as const;

/**
 * What the oracle can check a document as.
 *
 * @example
 * ```ts
 * const c: OracleContract = 'contextos-result';
 * ```
 */
export type OracleContract = 'mcec' | 'dw' | 'contextos' | 'contextos-call' | 'contextos-result' | 'mcec@2026-07' | 'dw@14';

/**
 * The owners' later revisions, as vendored in `schemas/revisions/` (byte-identical to
 * `../shared/contracts/revisions`, pinned by test/revisions.test.ts), by dialect.
 *
 * @example
 * ```ts
 * REVISION_FILES['dw@14']; // 'durable-workflow-mcp-tool-results.v14.schema.json'
 * ```
 */
export const REVISION_FILES = {
  'mcec@2026-07': 'mcec-agent-tool-result.2026-07.schema.json',
  'dw@14': 'durable-workflow-mcp-tool-results.v14.schema.json',
} as const;

type Validate = ((doc: unknown) => boolean) & { errors?: unknown[] | null };

let compiled: Record<OracleContract, Validate> | undefined;

function load(file: string): { $id: string } {
  return JSON.parse(readFileSync(path.join(contractsDir, file), 'utf8')) as { $id: string };
}

function compile(): Record<OracleContract, Validate> {
  const ajv = new Ajv2020.default({ strict: false, allErrors: true });
  ajv.addSchema(load(CONTRACT_FILES.principal));
  const mcec = load(CONTRACT_FILES.mcec);
  const dw = load(CONTRACT_FILES.dw);
  const contextos = load(CONTRACT_FILES.contextos);
  ajv.addSchema(mcec);
  ajv.addSchema(dw);
  ajv.addSchema(contextos);
  const get = (ref: string): Validate => {
    const v = ajv.getSchema(ref);
    if (!v) throw new Error(`oracle: cannot compile ${ref}`);
    return v as Validate;
  };
  // DW 14 keeps the founding $id: each revision gets an Ajv of its own.
  const revision = (file: string): Validate => {
    const own = new Ajv2020.default({ strict: false, allErrors: true });
    const schema = JSON.parse(readFileSync(path.join(repoRoot, 'schemas', 'revisions', file), 'utf8')) as { $id: string };
    own.addSchema(schema);
    return own.getSchema(schema.$id) as Validate;
  };
  return {
    'mcec@2026-07': revision(REVISION_FILES['mcec@2026-07']),
    'dw@14': revision(REVISION_FILES['dw@14']),
    mcec: get(mcec.$id),
    dw: get(dw.$id),
    contextos: get(contextos.$id),
    'contextos-call': get(`${contextos.$id}#/$defs/ToolCallEnvelope`),
    'contextos-result': get(`${contextos.$id}#/$defs/ToolResultEnvelope`),
  };
}

/**
 * Validates `doc` against the published schema of `contract` (compiled once, Ajv 2020, `strict: false`).
 *
 * @example
 * ```ts
 * oracleValidate('mcec', { ok: true }); // { valid: true, errors: [] }
 * ```
 */
export function oracleValidate(contract: OracleContract, doc: unknown): { valid: boolean; errors: unknown[] } {
  compiled ??= compile();
  const validate = compiled[contract];
  if (!validate) throw new Error(`oracle: unknown contract ${String(contract)}`);
  const valid = validate(doc);
  return { valid, errors: valid ? [] : [...(validate.errors ?? [])] };
}
