/**
 * Checking a policy document before it is compiled: bounded (values, depth, string length), copied
 * once into plain JSON (so that getters, proxies or later changes of the caller's object cannot
 * change the policy after the check), then validated against `policy.schema.json` by the validator
 * generated at build time (scripts/generate-policy-validator.mjs). Every problem is a located issue
 * (JSON pointer, the rule broken, what was expected) in one `ToolEnvelopeError`.
 */
import type { ErrorObject } from 'ajv';
import { type Issue, pointer, ToolEnvelopeError } from 'tool-envelope/core';
import { validatePolicyDocument } from './generated/policy-validator.js';
import type { PolicyDocument } from './policy-types.js';

/**
 * The bounds of a policy document, checked before its schema: a hostile file costs bounded memory
 * and time. Text beyond `maxTextBytes` is not read.
 */
export const POLICY_LIMITS = Object.freeze({ maxTextBytes: 4 * 1024 * 1024, maxValues: 100_000, maxDepth: 32, maxStringLength: 4096, maxIssues: 100 });

type Validator = ((doc: unknown) => boolean) & { errors?: ErrorObject[] | null };
const validate = validatePolicyDocument as unknown as Validator;

/** ` (line L, column C)` of an issue located in the text (`params.at`, policy-locate.ts), else nothing. */
function lineColumn(i: Issue): string {
  const at = i.params?.at as { line?: unknown; column?: unknown } | undefined;
  return typeof at?.line === 'number' && typeof at.column === 'number' ? ` (line ${at.line}, column ${at.column})` : '';
}

/** What a value was, for a message: a short scalar quoted as JSON, or its kind. */
function got(data: unknown): string {
  if (Array.isArray(data)) return 'got a list';
  if (data !== null && typeof data === 'object') return 'got an object';
  const text = JSON.stringify(data) ?? String(data);
  return `got ${text.length > 60 ? `${text.slice(0, 60)}...` : text}`;
}

/** How many problems each policy error found; its `issues` hold at most `POLICY_LIMITS.maxIssues`. */
const problemCounts = new WeakMap<ToolEnvelopeError, number>();

/**
 * How many problems a policy error found, `issues` or not (a document may have more than
 * `POLICY_LIMITS.maxIssues`, which are all it lists); `issues.length` for any other error.
 */
export function policyProblemCount(error: ToolEnvelopeError): number {
  return problemCounts.get(error) ?? error.issues.length;
}

/** Throws the error of a policy document with these located issues (the first ten in its message) of `total` problems. */
export function failPolicy(code: 'invalid-option' | 'too-deep' | 'too-large', issues: Issue[], total = issues.length): never {
  const shown = issues.slice(0, 10).map((i) => `${i.path || '/'} ${i.message}${lineColumn(i)}`);
  if (total > shown.length) shown.push(`and ${total - shown.length} more`);
  const error = new ToolEnvelopeError(code, `invalid policy document: ${shown.join('; ')}`, { issues });
  problemCounts.set(error, Math.max(total, issues.length));
  throw error;
}

/** A plain JSON copy of `value`, within the bounds; throws a located error for what is not JSON or too big. */
function plainCopy(value: unknown): unknown {
  let values = 0;
  const at = (path: (string | number)[]): string => pointer(path);
  const copy = (v: unknown, path: (string | number)[]): unknown => {
    if (++values > POLICY_LIMITS.maxValues) {
      failPolicy('too-large', [
        { code: 'too-large', path: at(path), message: `holds more than ${POLICY_LIMITS.maxValues} values`, params: { limit: POLICY_LIMITS.maxValues } },
      ]);
    }
    if (v === null || typeof v === 'boolean') return v;
    if (typeof v === 'number') {
      if (Number.isFinite(v)) return v;
      failPolicy('invalid-option', [{ code: 'type', path: at(path), message: 'must be a finite number', params: { expected: 'number' } }]);
    }
    if (typeof v === 'string') {
      if (v.length <= POLICY_LIMITS.maxStringLength) return v;
      failPolicy('too-large', [
        {
          code: 'too-large',
          path: at(path),
          message: `is longer than ${POLICY_LIMITS.maxStringLength} characters`,
          params: { limit: POLICY_LIMITS.maxStringLength },
        },
      ]);
    }
    if (typeof v !== 'object') {
      failPolicy('invalid-option', [{ code: 'type', path: at(path), message: `must be JSON, not a ${typeof v}`, params: { expected: 'JSON value' } }]);
    }
    if (path.length >= POLICY_LIMITS.maxDepth) {
      failPolicy('too-deep', [
        { code: 'too-deep', path: at(path), message: `nests deeper than ${POLICY_LIMITS.maxDepth} levels`, params: { limit: POLICY_LIMITS.maxDepth } },
      ]);
    }
    if (Array.isArray(v)) {
      const n = v.length;
      if (n > POLICY_LIMITS.maxValues) {
        failPolicy('too-large', [
          { code: 'too-large', path: at(path), message: `holds more than ${POLICY_LIMITS.maxValues} values`, params: { limit: POLICY_LIMITS.maxValues } },
        ]);
      }
      const out: unknown[] = [];
      for (let i = 0; i < n; i++) out.push(copy(v[i], [...path, i]));
      return out;
    }
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) {
      failPolicy('invalid-option', [{ code: 'type', path: at(path), message: 'must be a plain object', params: { expected: 'object' } }]);
    }
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v)) {
      // defineProperty, not assignment: a key named __proto__ stays a key (and is then refused as unknown).
      Object.defineProperty(out, k, { value: copy((v as Record<string, unknown>)[k], [...path, k]), enumerable: true, writable: true, configurable: true });
    }
    return out;
  };
  return copy(value, []);
}

const TYPE_NAMES: Record<string, string> = { object: 'an object', array: 'a list', string: 'a string', integer: 'an integer', boolean: 'true or false' };
const POINTER_PATTERN = '^/(args|result)/';

function expectedType(type: unknown): string {
  return (Array.isArray(type) ? type : [type]).map((t) => TYPE_NAMES[String(t)] ?? String(t)).join(' or ');
}

/** One Ajv error as an issue: where, the rule broken, what was expected. `undefined` for wrappers (`if`). */
function issueOf(e: ErrorObject): Issue | undefined {
  const path = e.instancePath;
  const p = e.params as Record<string, unknown>;
  const parent = (e.parentSchema ?? {}) as { type?: unknown; minimum?: unknown; properties?: Record<string, unknown> };
  const positive = parent.type === 'integer' && parent.minimum === 1;
  switch (e.keyword) {
    case 'if':
      return undefined;
    case 'additionalProperties': {
      const key = String(p.additionalProperty);
      const expected = Object.keys(parent.properties ?? {});
      return {
        code: e.keyword,
        path: path + pointer([key]),
        message: `unknown property ${JSON.stringify(key)} (expected ${expected.length > 0 ? `one of ${expected.join(', ')}` : 'none'})`,
        params: { expected },
      };
    }
    case 'required':
      return { code: e.keyword, path: path + pointer([String(p.missingProperty)]), message: 'is required', params: { expected: 'present' } };
    case 'type':
      return positive
        ? { code: e.keyword, path, message: 'must be a positive integer', params: { expected: 'integer >= 1' } }
        : { code: e.keyword, path, message: `must be ${expectedType(p.type)}`, params: { expected: p.type } };
    case 'minimum':
      return {
        code: e.keyword,
        path,
        message: positive ? 'must be a positive integer' : `must be >= ${String(p.limit)}`,
        params: { expected: `>= ${String(p.limit)}` },
      };
    case 'enum': {
      const allowed = (p.allowedValues as unknown[]).map(String);
      return { code: e.keyword, path, message: `must be one of ${allowed.join(', ')}, ${got(e.data)}`, params: { expected: allowed } };
    }
    case 'const':
      return { code: e.keyword, path, message: `must be ${JSON.stringify(p.allowedValue)}, ${got(e.data)}`, params: { expected: p.allowedValue } };
    case 'minItems':
      return { code: e.keyword, path, message: 'must not be an empty list', params: { expected: `at least ${String(p.limit)} items` } };
    case 'maxItems':
    case 'maxProperties':
      return { code: e.keyword, path, message: `must have at most ${String(p.limit)} entries`, params: { expected: `at most ${String(p.limit)} entries` } };
    case 'pattern':
      return p.pattern === POINTER_PATTERN
        ? { code: e.keyword, path, message: 'must be a JSON pointer under /args/ or /result/', params: { expected: POINTER_PATTERN } }
        : { code: e.keyword, path, message: `must match ${String(p.pattern)}`, params: { expected: p.pattern } };
    default:
      return { code: e.keyword, path, message: e.message ?? `breaks ${e.keyword}`, params: { ...p } };
  }
}

/**
 * Checks a policy document (any value: parsed JSON or YAML, or an object built in code) and returns
 * its plain JSON copy, which is what gets compiled. Throws `ToolEnvelopeError` with located issues:
 * `invalid-option` for a document that breaks the schema (unknown keys, wrong types, unknown modes
 * or effects), `too-large` or `too-deep` beyond {@link POLICY_LIMITS}.
 */
export function checkPolicyDocument(document: unknown): PolicyDocument {
  let doc: unknown;
  try {
    doc = plainCopy(document);
  } catch (e) {
    if (e instanceof ToolEnvelopeError) throw e;
    // A getter or proxy trap that throws (or a stack that ran out) makes the document unreadable, not the caller's problem to debug.
    failPolicy('invalid-option', [{ code: 'unreadable', path: '', message: `cannot be read: ${(e as Error)?.message ?? String(e)}` }]);
  }
  if (validate(doc)) return doc as PolicyDocument;
  const errors = validate.errors ?? [];
  const issues: Issue[] = [];
  let total = 0;
  for (const e of errors) {
    const issue = issueOf(e);
    if (issue === undefined) continue;
    total++;
    if (issues.length < POLICY_LIMITS.maxIssues) issues.push(issue);
  }
  return failPolicy('invalid-option', issues, total);
}
