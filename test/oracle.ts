/**
 * The conformance oracle: validators compiled in the test process with Ajv 2020 from the vendored
 * contract files in `schemas/` (byte-identical copies of the published ones, pinned by SHA-256 in
 * test/oracle.test.ts), never from the project's generated code. A clone therefore tests with
 * nothing beside it; when the published folder is there (`../shared/contracts`, or
 * `TOOL_ENVELOPE_CONTRACTS_DIR`), test/oracle.test.ts also checks the copies equal it.
 *
 * Adding a vendored file (say `schemas/revisions/x.schema.json`) takes its SHA-256 pin in
 * `VENDORED_SHA256` below; the identity test then compares it with the same relative path in the
 * published folder, and {@link loadVendored} reads it for any oracle built on top.
 *
 * @example
 * ```ts
 * import { oracleValidate } from '../../test/oracle.js';
 * expect(oracleValidate('dw', doc).valid).toBe(true);
 * ```
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
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
 * The vendored contracts the oracle compiles from (`<root>/schemas`).
 *
 * @example
 * ```ts
 * readFileSync(path.join(vendoredDir, CONTRACT_FILES.dw), 'utf8');
 * ```
 */
export const vendoredDir = path.join(repoRoot, 'schemas');

/**
 * Where the published contracts are when present: `TOOL_ENVELOPE_CONTRACTS_DIR`, else `../shared/contracts`
 * beside the repository. Only the byte-identity test reads it; nothing needs it to exist.
 *
 * @example
 * ```ts
 * if (publishedDir) readFileSync(path.join(publishedDir, CONTRACT_FILES.mcec));
 * ```
 */
export const publishedDir: string | undefined = ((): string | undefined => {
  const dir = path.resolve(process.env.TOOL_ENVELOPE_CONTRACTS_DIR ?? path.join(repoRoot, '..', 'shared', 'contracts'));
  return existsSync(dir) ? dir : undefined;
})();

/**
 * The founding contract files, by short name (paths relative to `schemas/`).
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
 * The SHA-256 of every vendored file under `schemas/` (relative path with `/`), as published.
 * The oracle test fails on any file missing here or differing from its pin.
 *
 * @example
 * ```ts
 * VENDORED_SHA256['mcec-agent-tool-result.schema.json']; // 'e376f5...'
 * ```
 */
export const VENDORED_SHA256: Readonly<Record<string, string>> = {
  'contextos-run-context.v1.principal.schema.json': 'e6d8269d8499bfc8a99042e8235455e8bf7bec1a846e2fee8a8ef1c1b982cced',
  'contextos-tool-envelope.v1.schema.json': '76673247f3038e13a49689fd68e9b5370ba61e97ed723894e980bffc80cad120',
  'durable-workflow-mcp-tool-results.schema.json': '70c4c85b3a52a65d542647a37efa9fda534068018235e1dfe9c36d317dabde27',
  'mcec-agent-tool-result.schema.json': 'e376f5092c18578ada64323b2797fdf8cdc6c5c9c6e170be14737400bfc2f01f',
  // Not one of the published contracts: the MCP draft's ToolFailure written as JSON Schema (see its $comment).
  'mcp-drafts/tool-failure.sep-3313.schema.json': '0e436165a50d97d36e631417ea66286cf0904b532e66e9541c9e356338e3252d',
  'revisions/durable-workflow-mcp-tool-results.v14.schema.json': '7968dafa939e4ceec0def9252ce4acf262eab9fbd71d1e13befd29c9061ca46e',
  'revisions/mcec-agent-tool-result.2026-07.schema.json': '957b987ac17b8529b45ee175df9c4149bcdbbf7ca72dfbb65e97efac91ccf1ee',
};

/**
 * Every `.json` file under `schemas/`, recursively, as sorted relative paths with `/`.
 *
 * @example
 * ```ts
 * vendoredFiles(); // ['contextos-run-context.v1.principal.schema.json', ...]
 * ```
 */
export function vendoredFiles(): string[] {
  return allVendoredFiles().filter((f) => !f.startsWith(MCP_DRAFTS));
}

/** Where the MCP drafts are vendored (pinned like the contracts, but no published copy to compare with). */
export const MCP_DRAFTS = 'mcp-drafts/';

/**
 * Every `.json` file under `schemas/`, the MCP drafts included.
 *
 * @example
 * ```ts
 * allVendoredFiles().includes('mcp-drafts/tool-failure.sep-3313.schema.json'); // true
 * ```
 */
export function allVendoredFiles(): string[] {
  return readdirSync(vendoredDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.split(path.sep).join('/'))
    .sort();
}

/**
 * Parses one vendored schema file (path relative to `schemas/`).
 *
 * @example
 * ```ts
 * loadVendored(CONTRACT_FILES.dw).$id;
 * ```
 */
export function loadVendored(file: string): { $id: string } & Record<string, unknown> {
  return JSON.parse(readFileSync(path.join(vendoredDir, file), 'utf8')) as { $id: string } & Record<string, unknown>;
}

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

function compile(): Record<OracleContract, Validate> {
  const ajv = new Ajv2020.default({ strict: false, allErrors: true });
  ajv.addSchema(loadVendored(CONTRACT_FILES.principal));
  const mcec = loadVendored(CONTRACT_FILES.mcec);
  const dw = loadVendored(CONTRACT_FILES.dw);
  const contextos = loadVendored(CONTRACT_FILES.contextos);
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
 * Validates `doc` against the vendored published schema of `contract` (compiled once, Ajv 2020, `strict: false`).
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
