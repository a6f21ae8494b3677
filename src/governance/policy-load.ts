/**
 * Policy documents in: `compilePolicy` (an object), `parsePolicy` (JSON or YAML text) and
 * `loadPolicyFile` (a file, read within bounds), each checked against `policy.schema.json` before
 * it is compiled (`policy-check.ts`), and the built-in defaults (`defaultPolicy`,
 * `createDefaultPolicy`). A document that cannot be read never half-applies.
 */
import { createRequire } from 'node:module';
import { type Issue, ToolEnvelopeError } from 'tool-envelope/core';
import { readBoundedText } from '../store/bounded-read.js';
import { checkPolicyDocument, failPolicy, POLICY_LIMITS, policyProblemCount } from './policy-check.js';
import { locateIssues } from './policy-locate.js';
import { compileRules } from './policy-rules.js';
import { yamlNestingBeyond } from './yaml-depth.js';
import type { BuiltinPolicyOptions, CompiledPolicy } from './policy-types.js';

function describeError(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}

/**
 * Compiles a policy document into a policy. Throws `ToolEnvelopeError` with located issues (JSON
 * pointer, rule, what was expected): `invalid-option` for a bad document (unknown keys, unknown
 * modes, bad effects, wrong types), `too-large` / `too-deep` beyond `POLICY_LIMITS`. Globs are
 * compiled here, once per policy.
 *
 * @example
 * ```ts
 * const policy = compilePolicy({
 *   version: 1,
 *   rules: [
 *     { name: 'no-prod-deletes', match: { tool: 'db.*', mode: 'destructive', tenant: 'prod' }, effect: 'deny' },
 *     { name: 'http', match: { mode: 'network' }, effect: 'allow', egress: { allow: ['api.example.com'], argPaths: ['url'] } },
 *   ],
 *   redact: { 'crm.update': ['/args/customer/ssn'] },
 * });
 * ```
 */
export function compilePolicy(document: unknown): CompiledPolicy {
  // The checked copy, frozen: what the policy holds cannot change after it was checked.
  return compileRules(deepFreeze(checkPolicyDocument(document)));
}

/**
 * The ContextOS default treatment by mode: `read_only` allow with audit; `local_write` allow (the
 * runtime requires the idempotency key); `network` allow (give an egress allow-list and rate budget
 * with {@link createDefaultPolicy}); `delegated` only with a user at the head of the principal chain
 * and per-call evidence refs; `destructive` waits for an approval gate.
 */
export const defaultPolicy: CompiledPolicy = compilePolicy({ version: 1 });

/** The built-in defaults with an egress allow-list and a rate budget for `network` calls. */
export function createDefaultPolicy(options: BuiltinPolicyOptions = {}): CompiledPolicy {
  return compilePolicy({ version: 1, builtin: options });
}

/**
 * Loads a policy document from a `.json`, `.yaml` or `.yml` file and compiles it. Throws
 * `invalid-json` for unreadable syntax (JSON or YAML: the message says `invalid JSON` or `invalid YAML`), `invalid-option` for a bad document or a file that cannot
 * be read, `too-large` for a file over `POLICY_LIMITS.maxTextBytes` (the rest is not read).
 *
 * @example
 * ```ts
 * const policy = await loadPolicyFile('./policy.yaml');
 * const governed = createGovernedRuntime({ runtime: createRuntime(), store, policy });
 * ```
 */
export async function loadPolicyFile(file: string): Promise<CompiledPolicy> {
  return parsePolicy(await readPolicyText(file), policyFormat(file), file);
}

/** A policy file's text, read within `POLICY_LIMITS.maxTextBytes` (errors as {@link loadPolicyFile} throws them). */
export async function readPolicyText(file: string): Promise<string> {
  try {
    return await readBoundedText(file, POLICY_LIMITS.maxTextBytes, 'policy file');
  } catch (e) {
    if (e instanceof ToolEnvelopeError) throw e;
    throw new ToolEnvelopeError('invalid-option', `cannot read policy file ${file}: ${describeError(e)}`, { cause: e });
  }
}

/** How a policy file is parsed: YAML by its name (`.yaml`, `.yml`), else JSON. */
export function policyFormat(file: string): 'json' | 'yaml' {
  return /\.ya?ml$/i.test(file) ? 'yaml' : 'json';
}

/**
 * Parses and compiles policy text (JSON or YAML), at most `POLICY_LIMITS.maxTextBytes` long.
 *
 * @example
 * ```ts
 * const policy = parsePolicy('version: 1\nrules:\n  - match: { tool: "fs.*" }\n    effect: allow\n', 'yaml');
 * ```
 */
export function parsePolicy(text: string, format: 'json' | 'yaml', source = 'policy'): CompiledPolicy {
  if (typeof text !== 'string') throw new ToolEnvelopeError('invalid-option', `${source}: policy text must be a string`);
  // Counted in characters (UTF-16 units), which costs nothing; a file is bounded in bytes when it is read.
  if (text.length > POLICY_LIMITS.maxTextBytes) {
    throw new ToolEnvelopeError('too-large', `${source}: policy text is longer than ${POLICY_LIMITS.maxTextBytes} characters`, {
      issues: [
        { code: 'too-large', path: '', message: `is longer than ${POLICY_LIMITS.maxTextBytes} characters`, params: { limit: POLICY_LIMITS.maxTextBytes } },
      ],
    });
  }
  let doc: unknown;
  if (format === 'yaml') {
    // YAML 1.2 core schema: no custom tags, so a file cannot construct arbitrary objects; an
    // unknown tag is refused rather than read as a plain string.
    // Loaded on first use so that importing the runtime does not load a YAML parser.
    const { parseDocument } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
    // Measured before the document is built, which recurses: past a few hundred levels its stack
    // runs out. Within the bound the copy's own check (checkPolicyDocument) locates it exactly.
    const deep = yamlNestingBeyond(text, POLICY_LIMITS.maxDepth * 4, POLICY_LIMITS.maxDepth);
    if (deep !== undefined) {
      const { maxDepth } = POLICY_LIMITS;
      failPolicy('too-deep', [
        {
          code: 'too-deep',
          path: deep.path,
          message: `nests deeper than ${maxDepth} levels`,
          params: { limit: maxDepth, at: { line: deep.line, column: deep.column } },
        },
      ]);
    }
    let parsed: ReturnType<typeof parseDocument>;
    try {
      parsed = parseDocument(text, { schema: 'core', logLevel: 'silent' });
    } catch (e) {
      // Nesting deep enough to exhaust the parser's stack, say.
      throw new ToolEnvelopeError('invalid-json', `${source}: invalid YAML: ${describeError(e)}`, { cause: e });
    }
    if (parsed.errors.length > 0) {
      throw new ToolEnvelopeError('invalid-json', `${source}: invalid YAML: ${parsed.errors.map((e) => e.message).join('; ')}`);
    }
    if (parsed.warnings.length > 0) {
      throw new ToolEnvelopeError('invalid-option', `${source}: ${parsed.warnings.map((w) => w.message).join('; ')}`);
    }
    try {
      doc = parsed.toJS({ maxAliasCount: 100 });
    } catch (e) {
      throw new ToolEnvelopeError('invalid-json', `${source}: invalid YAML: ${describeError(e)}`, { cause: e });
    }
  } else {
    try {
      doc = JSON.parse(text);
    } catch (e) {
      throw new ToolEnvelopeError('invalid-json', `${source}: invalid JSON: ${describeError(e)}`, { cause: e });
    }
  }
  try {
    return compileRules(deepFreeze(checkPolicyDocument(doc)));
  } catch (e) {
    // Located in the text: the line and column of each problem's node (a condition's problem is
    // already located in its expression).
    // Only a document's problems are located: a missing package (a `when` without @bufbuild/cel) is not one.
    if (!(e instanceof ToolEnvelopeError) || e.issues.length === 0 || (e.code !== 'invalid-option' && e.code !== 'too-deep')) throw e;
    if (e.issues.every((i) => i.params?.line !== undefined)) throw e;
    const located = locateIssues(text, e.issues).map((i, n) => (e.issues[n]?.params?.line !== undefined ? (e.issues[n] as Issue) : i));
    failPolicy(e.code as 'invalid-option' | 'too-deep', located, policyProblemCount(e));
  }
}
