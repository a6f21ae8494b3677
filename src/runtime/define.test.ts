import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolEnvelopeError } from '../core/errors.js';
import { defineTool } from './define.js';
import { invokeTool } from './invoke.js';
import { ToolRegistry } from './registry.js';
import { createRuntime } from './runtime.js';
import type { StandardSchemaV1 } from './standard-schema.js';

const noop = async () => null;

function definitionError(fn: () => unknown): ToolEnvelopeError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ToolEnvelopeError);
    expect((e as ToolEnvelopeError).code).toBe('invalid-tool-definition');
    return e as ToolEnvelopeError;
  }
  throw new Error('expected defineTool to throw');
}

describe('defineTool', () => {
  it('rejects bad names, modes, timeouts, tags, schemas and handlers', () => {
    definitionError(() => defineTool({ name: '', description: '', handler: noop }));
    definitionError(() => defineTool({ name: 'has space', description: '', handler: noop }));
    definitionError(() => defineTool({ name: 'x'.repeat(129), description: '', handler: noop }));
    definitionError(() => defineTool({ name: 'a', description: '', approvalMode: 'admin' as 'read_only', handler: noop }));
    definitionError(() => defineTool({ name: 'a', description: '', timeoutMs: -1, handler: noop }));
    definitionError(() => defineTool({ name: 'a', description: '', riskTags: [1 as unknown as string], handler: noop }));
    definitionError(() => defineTool({ name: 'a', description: '', handler: 'nope' as unknown as typeof noop }));
    definitionError(() => defineTool({ name: 'a', description: '', input: { type: 'string' }, handler: noop }));
    definitionError(() => defineTool({ name: 'a', description: '', input: { type: 'object', properties: { x: { type: 'nope' } } }, handler: noop }));
    definitionError(() => defineTool({ name: 'a', description: '', input: { $schema: 'http://json-schema.org/draft-04/schema#' }, handler: noop }));
    definitionError(() => defineTool({ name: 'a', description: '', input: [] as unknown as { type: 'object' }, handler: noop }));
  });

  it('derives the approval ceiling from annotations, failing closed to destructive', () => {
    expect(defineTool({ name: 'a', description: '', handler: noop }).approvalMode).toBe('destructive');
    expect(defineTool({ name: 'a', description: '', annotations: { readOnlyHint: true }, handler: noop }).approvalMode).toBe('read_only');
    expect(defineTool({ name: 'a', description: '', annotations: { readOnlyHint: true, openWorldHint: true }, handler: noop }).approvalMode).toBe('network');
    expect(defineTool({ name: 'a', description: '', annotations: { destructiveHint: false }, handler: noop }).approvalMode).toBe('local_write');
    expect(defineTool({ name: 'a', description: '', approvalMode: 'network', handler: noop }).annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: false,
      openWorldHint: true,
    });
  });

  it('publishes zod schemas as JSON Schema via ~standard.jsonSchema', () => {
    const def = defineTool({
      name: 'search',
      description: 'Searches.',
      input: z.object({ q: z.string(), limit: z.number().int().max(100).optional() }),
      output: z.object({ hits: z.array(z.string()) }),
      handler: async ({ q }) => ({ hits: [q] }),
    });
    expect(def.inputSchema).toMatchObject({ type: 'object', properties: { q: { type: 'string' } }, required: ['q'] });
    expect(def.outputSchema).toMatchObject({ type: 'object', properties: { hits: { type: 'array' } } });
    expect(def.schemaNotes).toEqual([]);
  });

  it('falls back to { type: "object" } with a note for a Standard Schema without JSON Schema', async () => {
    const bare: StandardSchemaV1<unknown, { n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'hand-made',
        validate: (v) =>
          typeof (v as { n?: unknown }).n === 'number' ? { value: v as { n: number } } : { issues: [{ message: 'n must be a number', path: [{ key: 'n' }] }] },
      },
    };
    const def = defineTool({ name: 'hand', description: '', input: bare, handler: async ({ n }) => ({ n }) });
    expect(def.inputSchema).toEqual({ type: 'object' });
    expect(def.schemaNotes[0]).toContain('hand-made does not offer Standard JSON Schema');
    const bad = await invokeTool(def, { n: 'x' });
    expect(bad.error?.details).toEqual({ violations: [{ path: '/n', message: 'n must be a number' }] });
  });

  it('validates with an async Standard Schema', async () => {
    const slow: StandardSchemaV1<unknown, { n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'async',
        validate: async (v) => ((v as { n?: unknown }).n === 1 ? { value: { n: 1 } } : { issues: [{ message: 'only 1' }] }),
      },
    };
    const def = defineTool({ name: 'slow', description: '', input: slow, handler: async ({ n }) => ({ n }) });
    expect(await invokeTool(def, { n: 1 })).toMatchObject({ status: 'ok', result: { n: 1 } });
    expect((await invokeTool(def, { n: 2 })).error).toMatchObject({ category: 'invalid-argument', details: { violations: [{ path: '', message: 'only 1' }] } });
  });

  it('validates plain JSON Schema (2020-12 and draft-07) with per-field violations', async () => {
    const input = {
      type: 'object',
      properties: { path: { type: 'string', minLength: 1 }, mode: { enum: ['r', 'w'] }, at: { type: 'string', format: 'date-time' } },
      required: ['path'],
      additionalProperties: false,
    };
    const def = defineTool({ name: 'fs.open', description: '', input, handler: async (args) => args });
    const o = await invokeTool(def, { mode: 'x', extra: 1, at: 'yesterday' });
    expect(o.error).toMatchObject({ category: 'invalid-argument', code: 'invalid-arguments', retryable: false });
    const violations = (o.error!.details as { violations: Array<{ path: string; keyword: string }> }).violations;
    expect(violations.map((v) => `${v.path} ${v.keyword}`).sort()).toEqual(['/at format', '/extra additionalProperties', '/mode enum', '/path required']);
    expect((await invokeTool(def, { path: 'a', at: '2024-01-01T00:00:00Z' })).status).toBe('ok');

    const d7 = defineTool({
      name: 'd7',
      description: '',
      input: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
      handler: async (a) => a,
    });
    expect((await invokeTool(d7, { n: 1.5 })).error?.details).toMatchObject({ violations: [{ path: '/n', keyword: 'type' }] });
  });

  it('rejects arguments that are not an object', async () => {
    const def = defineTool({ name: 'a', description: '', handler: async (a) => a });
    for (const args of [null, 'x', 3, [1]]) {
      expect((await invokeTool(def, args)).error).toMatchObject({ category: 'invalid-argument', code: 'invalid-arguments' });
    }
    expect(await invokeTool(def, undefined)).toMatchObject({ status: 'ok', result: {} });
  });

  it('keeps a hostile __proto__ key as plain data', async () => {
    const def = defineTool({ name: 'a', description: '', input: { type: 'object' }, handler: async (a) => a });
    const args = JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}') as Record<string, unknown>;
    const o = await invokeTool(def, args);
    expect(o.status).toBe('ok');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(o.result as object)).toEqual(['__proto__', 'constructor']);
  });

  it('checks results against an output schema: internal output-schema-violation', async () => {
    const zodOut = defineTool({ name: 'z', description: '', output: z.object({ n: z.number() }), handler: async () => ({ n: 'one' }) });
    const o = await invokeTool(zodOut, {});
    expect(o.error).toMatchObject({ category: 'internal', code: 'output-schema-violation', retryable: false });
    expect(o.error!.details).toMatchObject({ violations: [{ path: '/n' }] });
    const jsonOut = defineTool({
      name: 'j',
      description: '',
      output: { type: 'object', properties: { at: { type: 'string', format: 'date-time' } }, required: ['at'] },
      // The JSON Schema checks the JSON form: the Date becomes an ISO string first.
      handler: async () => ({ at: new Date(0) }),
    });
    expect(await invokeTool(jsonOut, {})).toMatchObject({ status: 'ok', result: { at: '1970-01-01T00:00:00.000Z' } });
    const transforms = defineTool({
      name: 't',
      description: '',
      output: z.object({ n: z.string().transform((s) => s.length) }),
      handler: async () => ({ n: 'abc' }),
    });
    expect(await invokeTool(transforms, {})).toMatchObject({ status: 'ok', result: { n: 3 } });
  });
});

describe('ToolRegistry', () => {
  it('lists tools with schemas, modes, tags and annotations; names are unique', () => {
    const a = defineTool({
      name: 'a',
      title: 'A',
      description: 'first',
      approvalMode: 'read_only',
      riskTags: ['pii'],
      timeoutMs: 500,
      input: z.object({ x: z.string() }),
      handler: noop,
    });
    const b = defineTool({ name: 'b', description: 'second', approvalMode: 'destructive', output: { type: 'object' }, handler: noop });
    const registry = new ToolRegistry([a, b]);
    expect(registry.list()).toEqual([
      {
        name: 'a',
        title: 'A',
        description: 'first',
        inputSchema: a.inputSchema,
        approvalMode: 'read_only',
        riskTags: ['pii'],
        annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
        timeoutMs: 500,
      },
      {
        name: 'b',
        description: 'second',
        inputSchema: { type: 'object' },
        outputSchema: { type: 'object' },
        approvalMode: 'destructive',
        riskTags: [],
        annotations: { readOnlyHint: false, destructiveHint: true },
      },
    ]);
    const listing = registry.list()[0]!;
    listing.riskTags.push('changed');
    (listing.inputSchema as { type: string }).type = 'changed';
    expect(registry.list()[0]!.riskTags).toEqual(['pii']);
    expect(registry.list()[0]!.inputSchema.type).toBe('object');
    expect(() => registry.register(a)).toThrow(ToolEnvelopeError);
    expect(registry.unregister('a')).toBe(true);
    expect(registry.has('a')).toBe(false);
  });

  it('a runtime rejects an unknown tool with unknown-tool (a protocol error, not an outcome)', async () => {
    const runtime = createRuntime();
    await expect(runtime.invoke('missing', {})).rejects.toMatchObject({ code: 'unknown-tool' });
  });
});
