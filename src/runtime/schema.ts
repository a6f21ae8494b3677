/**
 * Tool schemas: a Standard Schema (zod, valibot, arktype, ...) or a plain JSON
 * Schema, compiled once when the tool is defined into a check function and a
 * JSON Schema to publish. Nothing is compiled on the invoke path.
 */
import { createRequire } from 'node:module';
import { ToolEnvelopeError, pointer, type JsonObject, toJsonSafe } from 'tool-envelope/core';
import { type StandardSchemaV1, isStandardSchema } from './standard-schema.js';

/** A plain JSON Schema object (draft 2020-12 by default; draft-07 when `$schema` says so). */
export type JsonSchema = { [key: string]: unknown };

/** What a tool may give as its input or output schema. */
export type ToolSchema = StandardSchemaV1 | JsonSchema;

/** One schema violation, located by a JSON pointer. */
export interface Violation {
  /** JSON pointer to the offending value (`''` is the whole value). */
  path: string;
  /** Human-readable explanation from the validator. */
  message: string;
  /** The JSON Schema keyword that failed, when the validator says. */
  keyword?: string;
}

/** The outcome of checking a value: the (possibly transformed) value, or the violations. */
export type CheckResult = { value: unknown; violations?: undefined } | { value?: undefined; violations: Violation[] };

/** A compiled check; Standard Schemas may answer asynchronously. */
export type Check = (value: unknown) => CheckResult | Promise<CheckResult>;

/** A schema compiled for a tool. */
export interface CompiledSchema {
  /** The JSON Schema to publish (e.g. as MCP `inputSchema`). */
  jsonSchema: JsonObject;
  /** The compiled check; undefined when there is nothing to check. */
  check: Check | undefined;
  /** `standard`: checks the value as the handler made it; `json`: checks its JSON form (Ajv). */
  kind: 'none' | 'standard' | 'json';
  /** Set when the JSON Schema could not be derived and a permissive one stands in. */
  note?: string;
}

type AjvValidate = ((data: unknown) => boolean) & {
  errors?: Array<{ instancePath: string; keyword: string; message?: string; params: Record<string, unknown> }> | null;
};
type AjvInstance = { compile(schema: object): AjvValidate };

const require = createRequire(import.meta.url);
let ajv2020: AjvInstance | undefined;
let ajv07: AjvInstance | undefined;

/** Ajv is loaded only when a tool uses a plain JSON Schema, so the core stays dependency-free. */
function ajvFor(schema: JsonSchema): AjvInstance {
  const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
  const draft07 = /draft-0[67]\/schema/.test(dialect);
  if (dialect !== '' && !draft07 && !/2020-12\/schema|2019-09\/schema/.test(dialect)) {
    throw new ToolEnvelopeError('invalid-tool-definition', `unsupported JSON Schema dialect ${JSON.stringify(dialect)}`);
  }
  const make = (path: string): AjvInstance => {
    const mod = require(path) as { default: new (o: object) => AjvInstance };
    const instance = new mod.default({ allErrors: true, strict: false, validateFormats: true });
    (require('ajv-formats') as { default: (a: AjvInstance) => void }).default(instance);
    return instance;
  };
  if (draft07) return (ajv07 ??= make('ajv'));
  return (ajv2020 ??= make('ajv/dist/2020'));
}

function fromAjv(validate: AjvValidate): Check {
  return (value) => {
    if (validate(value)) return { value };
    const violations: Violation[] = (validate.errors ?? []).map((e) => {
      const extra = e.params.missingProperty ?? e.params.additionalProperty ?? e.params.propertyName;
      return {
        path: typeof extra === 'string' && e.keyword !== 'propertyNames' ? e.instancePath + pointer([extra]) : e.instancePath,
        message: e.message ?? e.keyword,
        keyword: e.keyword,
      };
    });
    return { violations };
  };
}

function issuePath(path: StandardSchemaV1.Issue['path']): string {
  if (path === undefined) return '';
  return pointer(path.map((seg) => String(typeof seg === 'object' && seg !== null ? (seg as StandardSchemaV1.PathSegment).key : seg)));
}

function fromStandardResult(result: StandardSchemaV1.Result<unknown>): CheckResult {
  if (result.issues === undefined) return { value: result.value };
  return { violations: result.issues.map((i) => ({ path: issuePath(i.path), message: i.message })) };
}

function fromStandard(schema: StandardSchemaV1): Check {
  const std = schema['~standard'];
  return (value) => {
    const result = std.validate(value);
    return result instanceof Promise ? result.then(fromStandardResult) : fromStandardResult(result);
  };
}

function toJsonObject(value: unknown, what: string): JsonObject {
  try {
    const { value: safe, replaced } = toJsonSafe(value);
    // A copy, so that later changes to the caller's object cannot change the published schema.
    if (replaced.length === 0 && typeof safe === 'object' && safe !== null && !Array.isArray(safe)) return structuredClone(safe);
  } catch {
    // Reported below.
  }
  throw new ToolEnvelopeError('invalid-tool-definition', `${what} is not a JSON object`);
}

/**
 * Compiles a tool's input or output schema once, at definition time.
 *
 * @throws ToolEnvelopeError `invalid-tool-definition` for a schema that is
 *   neither a Standard Schema nor a JSON Schema object, or that Ajv rejects.
 */
export function compileSchema(schema: ToolSchema | undefined, role: 'input' | 'output', toolName: string): CompiledSchema {
  const what = `tool ${JSON.stringify(toolName)}: ${role} schema`;
  if (schema === undefined) return { jsonSchema: { type: 'object' }, check: undefined, kind: 'none' };
  if (isStandardSchema(schema)) {
    const converter = schema['~standard'].jsonSchema;
    let jsonSchema: JsonObject | undefined;
    let note: string | undefined;
    try {
      if (converter !== undefined) jsonSchema = toJsonObject(converter[role]({ target: 'draft-2020-12' }), what);
      else note = `${schema['~standard'].vendor} does not offer Standard JSON Schema; published as { type: 'object' }`;
    } catch (e) {
      note = `${schema['~standard'].vendor} could not convert the ${role} schema to JSON Schema (${e instanceof Error ? e.message : String(e)}); published as { type: 'object' }`;
    }
    return { jsonSchema: jsonSchema ?? { type: 'object' }, check: fromStandard(schema), kind: 'standard', ...(note === undefined ? {} : { note }) };
  }
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new ToolEnvelopeError('invalid-tool-definition', `${what} must be a Standard Schema or a JSON Schema object`);
  }
  const jsonSchema = toJsonObject(schema, what);
  if (role === 'input' && jsonSchema.type !== undefined && jsonSchema.type !== 'object') {
    throw new ToolEnvelopeError('invalid-tool-definition', `${what} must describe an object (type "object"), got type ${JSON.stringify(jsonSchema.type)}`);
  }
  let validate: AjvValidate;
  try {
    validate = ajvFor(jsonSchema).compile(jsonSchema);
  } catch (e) {
    if (e instanceof ToolEnvelopeError) throw e;
    throw new ToolEnvelopeError('invalid-tool-definition', `${what} is not a valid JSON Schema: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  return { jsonSchema, check: fromAjv(validate), kind: 'json' };
}
