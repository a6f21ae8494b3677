// Build step: compiles the contract schemas in schemas/ (byte-identical copies of
// the published contracts, pinned by SHA-256 in test/oracle.test.ts) into standalone Ajv validators, so that nothing compiles at import.
//
// Why not Ajv2020 as the tests' oracle does: Ajv2020 forces `unevaluated: true` and
// `dynamicRef: true`, so its code tracks evaluated properties for keywords these
// schemas never use (none has unevaluated*, $dynamicRef or $recursiveRef; checked
// below). The core Ajv class knows every keyword they do use ($defs, $ref, if/then,
// allOf/anyOf/not, const, enum, ...) with the same meaning, so it is used here with
// the 2020 meta-schema check off. The oracle-agreement property tests prove the
// generated validators equal Ajv2020 compiled from the same files.
//
// The copies fed to the generator lose their annotation keywords (description,
// title, $comment, examples, x-*), which never affect validation; the exported
// `schemas` keep them. Two rewrites of Ajv's output, each exactly equivalent:
// - `additionalProperties: false` next to more than 8 properties makes Ajv test
//   each key with `hasOwnProperty.call(schema.properties, key)`; it becomes a chain
//   of `key === "name"` comparisons over the same (static) property names.
// - In the fast (first-error) set, which only answers yes or no, no error object is
//   built: `return false` stays, the objects before it go, and the placeholder `{}`
//   errors Ajv pushes while it evaluates an `if` condition or a `not` (discarded
//   right after) are only counted. The full set keeps every error for check*().
// The full (allErrors) set is wrapped in a function the core calls on first use. Everything
// generated is one module, src/core/generated/core.ts: the validators bundled and minified by
// esbuild, then their typed exports, the schemas and the shipped plain-failure rules.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { writeGenerated } from './write-generated.mjs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import Ajv from 'ajv';
import standaloneCode from 'ajv/dist/standalone/index.js';
import { buildSync } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const read = (f) => JSON.parse(readFileSync(join(root, 'schemas', f), 'utf8'));

const mcec = read('mcec-agent-tool-result.schema.json');
const dw = read('durable-workflow-mcp-tool-results.schema.json');
const contextos = read('contextos-tool-envelope.v1.schema.json');
const principal = read('contextos-run-context.v1.principal.schema.json');
// The owners' later revisions (schemas/revisions/, byte-identical to ../shared/contracts/revisions).
// DW 14 keeps the founding $id, so the revisions are compiled by an Ajv of their own.
const mcec202607 = read('revisions/mcec-agent-tool-result.2026-07.schema.json');
const dw14 = read('revisions/durable-workflow-mcp-tool-results.v14.schema.json');

const CONTEXTOS_ID = contextos.$id;
const entries = {
  mcec: mcec.$id,
  dw: dw.$id,
  contextos: CONTEXTOS_ID,
  contextosCall: `${CONTEXTOS_ID}#/$defs/ToolCallEnvelope`,
  contextosResult: `${CONTEXTOS_ID}#/$defs/ToolResultEnvelope`,
};
const revisionEntries = { mcec202607: mcec202607.$id, dw14: dw14.$id };
const SETS = {
  founding: { schemas: [principal, mcec, dw, contextos], entries },
  revisions: { schemas: [mcec202607, dw14], entries: revisionEntries },
};

/** Keywords whose value is a map of subschemas, one subschema, or a list of subschemas. */
const SCHEMA_MAP = new Set(['properties', '$defs', 'definitions', 'patternProperties', 'dependentSchemas']);
const SCHEMA_ONE = new Set(['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames']);
const SCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const ANNOTATIONS = new Set(['description', 'title', '$comment', 'examples', 'default', 'deprecated', 'readOnly', 'writeOnly']);
/** Keywords only Ajv2020's evaluated-property tracking or dynamic scopes implement. */
const NEEDS_2020 = new Set(['unevaluatedProperties', 'unevaluatedItems', '$dynamicRef', '$dynamicAnchor', '$recursiveRef', '$recursiveAnchor']);

/** A copy of `schema` without annotation keywords (property names under `properties` are data, not keywords). */
function stripAnnotations(schema) {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (NEEDS_2020.has(key)) throw new Error(`schema uses ${key}: generate with Ajv2020`);
    if (ANNOTATIONS.has(key) || key.startsWith('x-')) continue;
    if (SCHEMA_MAP.has(key)) out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, stripAnnotations(v)]));
    else if (SCHEMA_ONE.has(key)) out[key] = stripAnnotations(value);
    else if (SCHEMA_LIST.has(key)) out[key] = value.map(stripAnnotations);
    else out[key] = value;
  }
  return out;
}

function build(allErrors, names, set = SETS.founding) {
  names ??= Object.keys(set.entries);
  const ajv = new Ajv.default({
    strict: false,
    allErrors,
    // The schemas declare the 2020-12 meta-schema, which the core class does not load; Ajv2020 checks them in the tests.
    meta: false,
    validateSchema: false,
    // Fast validators only answer yes/no; the full set keeps messages for check*().
    messages: allErrors,
    code: { source: true, esm: !allErrors, optimize: true },
  });
  for (const schema of set.schemas) ajv.addSchema(stripAnnotations(schema));
  const map = {};
  for (const name of names) map[allErrors ? `${name}Full` : `${name}Fast`] = set.entries[name];
  return standaloneCode.default(ajv, map);
}

/** The JSON literal that starts at `start` in `code` (Ajv writes schema constants as JSON). */
function jsonAt(code, start) {
  return code.slice(start, literalEnd(code, start));
}

function schemaConstant(code, name) {
  const decl = `const ${name} = `;
  const at = code.indexOf(decl);
  if (at < 0) throw new Error(`no ${name} in the generated code`);
  const text = jsonAt(code, at + decl.length);
  return { decl: `${decl}${text};`, value: JSON.parse(text) };
}

/** How often the identifier `name` occurs in `code`. */
function uses(code, name) {
  return code.match(new RegExp(`\\b${name}\\b`, 'g'))?.length ?? 0;
}

/** Replaces `func0.call(schemaN.properties, key)` (own-property test) by comparisons with the property names. */
function inlinePropertyTests(code) {
  const hasOwn = code.match(/const (func\d+) = Object\.prototype\.hasOwnProperty;/);
  if (!hasOwn) return code;
  const fn = hasOwn[1];
  const re = new RegExp(`${fn}\\.call\\((schema\\d+)\\.properties, (key\\d+)\\)`, 'g');
  code = code.replace(re, (_m, schema, key) => {
    const names = Object.keys(schemaConstant(code, schema).value.properties);
    return `(${names.map((n) => `${key} === ${JSON.stringify(n)}`).join(' || ')})`;
  });
  // Drop the schema constants (and the helper) nothing references any more.
  code = dropUnusedSchemaConstants(code);
  if (uses(code, fn) === 1) code = code.replace(hasOwn[0], '');
  return code;
}

/** In the fast set: the `{}` placeholders pushed while a condition (if, not) is evaluated are only counted. */
function countPlaceholders(code) {
  return code.replace(/const (err\d+) = \{\};if\(vErrors === null\)\{vErrors = \[\1\];\}else \{vErrors\.push\(\1\);\}errors\+\+;/g, 'errors++;');
}

const outDir = join(root, 'src', 'core', 'generated');
const check = (code) => {
  if (/require\(/.test(code) || /\bimport\b/.test(code)) {
    throw new Error('generated validators import a runtime helper; the core must stay dependency-free');
  }
  return code;
};

/**
 * In the fast set: the error objects Ajv builds before `return false` (or pushes
 * while it evaluates anyOf branches) are dropped. The fast validators only answer
 * yes or no; `check*()` gets the violations from the full set. Half the fast code
 * is these objects, and every byte of it is parsed when the core is imported.
 */
function dropErrorObjects(code) {
  let out = '';
  let at = 0;
  const re = /(validate\d+\.errors = \[)|(const err\d+ = )\{/g;
  for (let m; (m = re.exec(code)); ) {
    if (m.index < at) continue;
    if (m[1]) {
      // validateN.errors = [{...}];return false;  ->  return false;
      const end = literalEnd(code, m.index + m[0].length);
      const tail = '];return false;';
      if (!code.startsWith(tail, end)) throw new Error(`unexpected fast-validator code at ${m.index}`);
      out += code.slice(at, m.index) + 'return false;';
      at = end + tail.length;
    } else {
      // const errN = {...};if(vErrors === null){vErrors = [errN];}else {vErrors.push(errN);}errors++;  ->  errors++;
      const name = m[2].slice('const '.length, -' = '.length);
      const end = literalEnd(code, m.index + m[2].length);
      const tail = `;if(vErrors === null){vErrors = [${name}];}else {vErrors.push(${name});}errors++;`;
      if (!code.startsWith(tail, end)) throw new Error(`unexpected fast-validator code at ${m.index}`);
      out += code.slice(at, m.index) + 'errors++;';
      at = end + tail.length;
    }
    re.lastIndex = at;
  }
  // A failed call of another validator adds its (now absent) errors: only count one.
  out = (out + code.slice(at)).replace(
    /vErrors = vErrors === null \? (validate\d+)\.errors : vErrors\.concat\(\1\.errors\);errors = vErrors\.length;/g,
    'errors++;',
  );
  // With no error objects, nothing reads the location arguments: drop them (their
  // destructuring default costs an allocation per call).
  out = out
    .replaceAll('(data, {instancePath="", parentData, parentDataProperty, rootData=data}={})', '(data)')
    .replace(/(validate\d+\([^,()]+), \{instancePath[^{}]*\}\)/g, '$1)');
  if (/\b(instancePath|parentData|parentDataProperty|rootData)\b/.test(out)) throw new Error('fast validators still use location arguments');
  return dropUnusedSchemaConstants(out);
}

/** Drops the schema constants nothing references any more. */
function dropUnusedSchemaConstants(code) {
  for (const [, name] of code.matchAll(/const (schema\d+) = /g)) {
    const { decl } = schemaConstant(code, name);
    if (uses(code, name) === 1) code = code.replace(decl, '');
  }
  return code;
}

/** Where the object or array literal at `start` ends: JSON, or JS such as `{instancePath,params:{...}}`. */
function literalEnd(code, start) {
  let depth = 0;
  let inString = false;
  for (let i = start; i < code.length; i++) {
    const c = code[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      if (--depth === 0) return i + 1;
    }
  }
  throw new Error('unterminated literal');
}

// The fast (first-error) set: one standalone module per group, each with its own validateN names;
// they are bundled into the one generated module below, which renames what collides.
const fastGroups = {
  mcec: ['mcec'],
  dw: ['dw'],
  contextos: ['contextos', 'contextosCall', 'contextosResult'],
  'mcec-2026-07': ['mcec202607', SETS.revisions],
  'dw-14': ['dw14', SETS.revisions],
};
const pieces = {};
for (const [group, list] of Object.entries(fastGroups)) {
  const set = typeof list[list.length - 1] === 'object' ? list.pop() : SETS.founding;
  pieces[`fast-${group}`] = check(dropErrorObjects(countPlaceholders(inlinePropertyTests(build(false, list, set)))));
}

/**
 * In the full set: at most `limits.maxErrors` error objects are kept, while `errors` goes on
 * counting (each validator leaves the count in `validateN.total`), so a document with a million
 * violations is checked in bounded memory and the caller still learns how many there were. The
 * invariant `vErrors.length === min(errors, limits.maxErrors)` holds through every rewrite; with
 * the default limit (Infinity) the code behaves exactly as Ajv's.
 */
function capErrors(code) {
  const rewrite = (from, to, expected) => {
    const n = code.match(from)?.length ?? 0;
    if (expected !== undefined && n !== expected) throw new Error(`capErrors: ${n} matches of ${from}, expected ${expected}`);
    if (n === 0) throw new Error(`capErrors: no match of ${from}`);
    code = code.replace(from, to);
  };
  rewrite(
    /if\(vErrors === null\)\{vErrors = \[(err\d+)\];\}else \{vErrors\.push\(\1\);\}errors\+\+;/g,
    'if(vErrors === null){vErrors = [$1];}else if(vErrors.length < limits.maxErrors){vErrors.push($1);}errors++;',
  );
  rewrite(/if\((_errs\d+)\)\{vErrors\.length = \1;\}/g, 'if($1){if(vErrors.length > $1){vErrors.length = $1;}}');
  rewrite(
    /vErrors = vErrors === null \? (validate\d+)\.errors : vErrors\.concat\(\1\.errors\);errors = vErrors\.length;/g,
    'vErrors = vErrors === null ? $1.errors : vErrors.concat($1.errors);errors += $1.total;if(vErrors.length > limits.maxErrors){vErrors.length = limits.maxErrors;}',
  );
  rewrite(/(validate\d+)\.errors = vErrors;return errors === 0;/g, '$1.errors = vErrors;$1.total = errors;return errors === 0;');
  if (
    /vErrors\.push\((?!err\d+\);\}errors\+\+;)/.test(code.replace(/else if\(vErrors\.length < limits\.maxErrors\)\{vErrors\.push\(err\d+\);\}errors\+\+;/g, ''))
  ) {
    throw new Error('capErrors: an uncapped push is left');
  }
  return code;
}

// The full sets as CommonJS-style `exports.x = ...` inside a function: parsed lazily, run on first use.
const fullSets = [
  ['createFullValidators', SETS.founding],
  ['createRevisionFullValidators', SETS.revisions],
];
for (const [fn, set] of fullSets) {
  const fullCode = check(capErrors(inlinePropertyTests(build(true, undefined, set)))).replace(/^"use strict";/, '');
  pieces[fn] = `export function ${fn}(limits) {\nconst exports = {};\n${fullCode}\nreturn exports;\n}\n`;
}

const schemas = { mcec, dw, contextos, contextosPrincipal: principal };
const fastNames = Object.values(fastGroups).flatMap((list) => list.map((n) => `${n}Fast`));

// One generated module for the whole core: the validators' code bundled and minified by esbuild
// (an ordinary bundle: it renames the validateN names that collide between the standalone sets and
// drops what nothing reads), then the typed exports, the schemas and the shipped rule set. Every
// module costs a Node process a file read, a compile and a link when the core is imported, so the
// generated code is one module, not one per contract (bench/core.bench.mjs, cold start row).
const tmp = mkdtempSync(join(tmpdir(), 'tool-envelope-gen-'));
let bundled;
try {
  for (const [name, code] of Object.entries(pieces)) writeFileSync(join(tmp, `${name}.mjs`), code);
  writeFileSync(
    join(tmp, 'entry.mjs'),
    Object.keys(pieces)
      .map((n) => `export * from './${n}.mjs';\n`)
      .join(''),
  );
  const out = buildSync({
    entryPoints: [join(tmp, 'entry.mjs')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  bundled = out.outputFiles[0].text;
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
// The bundle ends with one `export{local as name,...};`: the names are re-exported below with their types.
const exportClause = /export\{([^}]*)\};\s*$/.exec(bundled);
if (!exportClause) throw new Error('unexpected esbuild output: no export clause at the end');
const locals = new Map(
  exportClause[1].split(',').map((entry) => {
    const [local, exported = local] = entry.trim().split(/\s+as\s+/);
    return [exported, local];
  }),
);
const localOf = (name) => {
  const local = locals.get(name);
  if (local === undefined) throw new Error(`the bundle does not export ${name}`);
  return local;
};
let ts =
  '// @ts-nocheck\n// Generated by scripts/generate-validators.mjs from schemas/*.json and rules/plain-failures.json. Do not edit.\n' +
  "import type { AjvValidator } from '../contracts/types.js';\n" +
  'type DeepReadonly<T> = T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;\n' +
  bundled.slice(0, exportClause.index) +
  '\n';
for (const name of fastNames) ts += `/** The first-error (yes/no) validator ${name}. */\nexport const ${name}: AjvValidator = ${localOf(name)};\n`;
for (const [fn, set] of fullSets) {
  const names = Object.keys(set.entries).map((n) => `'${n}Full'`);
  ts +=
    '/** The allErrors validators, built when called (the core calls it once, on the first check); `limits.maxErrors` caps the errors each keeps. */\n' +
    `export const ${fn}: (limits: { maxErrors: number }) => Record<${names.join(' | ')}, AjvValidator> = ${localOf(fn)};\n`;
}
// Each schema is a JSON.parse of a string, not an object literal: V8 scans a string several times
// faster than it parses the same object as code (the core's cold start). The type is the literal's,
// read-only all the way down, as `as const` would give.
for (const [name, schema] of Object.entries(schemas)) {
  const text = JSON.stringify(schema);
  ts += `export const ${name}Schema: DeepReadonly<${text}> = JSON.parse(${JSON.stringify(text)});\n`;
}
// The revisions' schemas are parsed on first use.
for (const [name, schema] of Object.entries({ mcec202607, dw14 })) {
  const text = JSON.stringify(schema);
  ts += `/** The ${name} revision schema, parsed anew on each call (callers keep it). */\nexport function ${name}Schema(): DeepReadonly<${text}> {\n  return JSON.parse(${JSON.stringify(text)});\n}\n`;
}
// The shipped plain-failure rules (rules/plain-failures.json), as data the core can import without a
// file system; src/core/plain-failure.ts validates and compiles them on first use.
const ruleText = JSON.stringify(JSON.parse(readFileSync(join(root, 'rules', 'plain-failures.json'), 'utf8')));
ts += `/** The shipped rule file, parsed anew on each call (the core calls it once). */\nexport function plainFailureRuleSet(): unknown {\n  return JSON.parse(${JSON.stringify(ruleText)});\n}\n`;
// The generated folder holds this one module (files of an older layout go).
mkdirSync(outDir, { recursive: true });
for (const f of readdirSync(outDir)) if (f !== 'core.ts') rmSync(join(outDir, f), { recursive: true, force: true });
writeGenerated(join(outDir, 'core.ts'), ts);
console.log(
  'generated',
  fastNames.length + fullSets.reduce((n, [, set]) => n + Object.keys(set.entries).length, 0),
  'validators,',
  (Buffer.byteLength(ts) / 1024).toFixed(0),
  'KiB',
);
