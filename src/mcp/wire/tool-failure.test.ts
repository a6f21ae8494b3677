// The draft ToolFailure metadata (issue 40 point 5): every failure category written as it by the
// server adapter (real runtime, real SDK client) and by the gateway (real SDK v2 upstream process),
// valid under the draft's schema (schemas/mcp-drafts, Ajv 2020 as test/oracle.ts compiles the
// contracts), and read back from a plain result into the same canonical error.
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadVendored } from '../../../test/oracle.js';
import { contracts } from '../../core/contracts/registry.js';
import { ToolFailure } from '../../core/classify.js';
import { toolError, type ToolError } from '../../core/model.js';
import { ERROR_CATEGORIES, defaultRemediation, defaultRetryable } from '../../core/taxonomy.js';
import { createRuntime, defineTool } from '../../runtime/index.js';
import { Gateway } from '../gateway/gateway.js';
import { readToolResult } from '../reader.js';
import { createEnvelopeServer } from '../server-adapter.js';
import { clientFor, repoRoot, silent } from '../test-support/harness.js';
import { TOOL_FAILURE_CATEGORY_META_KEY, TOOL_FAILURE_META_KEY, toolFailureMetaOf, type ToolFailureMeta } from './tool-failure.js';

const ajv = new Ajv2020.default({ strict: false, allErrors: true });
const draft = loadVendored('mcp-drafts/tool-failure.sep-3313.schema.json');
const validate = ajv.compile(draft);
function expectValid(value: unknown): ToolFailureMeta {
  expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
  return value as ToolFailureMeta;
}

type Called = { content: { type: string; text?: string }[]; structuredContent?: unknown; isError?: boolean; _meta?: Record<string, unknown> };

/** The result a plain server would send: its text, isError and the metadata only. */
const plain = (detail: string, meta: unknown): Parameters<typeof readToolResult>[0] =>
  ({ content: [{ type: 'text', text: detail }], isError: true, _meta: meta }) as Parameters<typeof readToolResult>[0];

/** The canonical fields the draft carries (the rest of an error has no place in it). */
const canonical = (e: ToolError): Partial<ToolError> => ({
  category: e.category,
  code: e.code,
  detail: e.detail,
  retryable: e.retryable === true,
  ...(e.retryable === true && e.retryAfterMs !== undefined ? { retryAfterMs: e.retryAfterMs } : {}),
  ...(e.remediation ? { remediation: e.remediation } : {}),
});

it("the draft's own example is valid under the vendored schema, and a class outside the three is not", () => {
  expectValid({
    class: 'governance',
    code: 'auth_required',
    correlationId: 'req_8f2c1a-attempt-3',
    agentGuidance: 'Ask the user to reconnect their account, then retry the same call.',
  });
  expect(validate({ class: 'transient', code: 'x', correlationId: 'c' })).toBe(false);
  expect(validate({ class: 'reliability', code: 'x' })).toBe(false);
});

describe.each(ERROR_CATEGORIES)('category %s', (category) => {
  for (const retryAfterMs of [undefined, 2_500]) {
    it(`round-trips${retryAfterMs ? ' with retryAfterMs' : ''}: valid under the draft, read back from a plain result into the same canonical error`, () => {
      const error = toolError(category, `${category}-code`, `It failed (${category}).`, {
        remediation: defaultRemediation(category),
        ...(retryAfterMs ? { retryAfterMs } : {}),
      });
      const meta = toolFailureMetaOf(error, 'call-7', 1_000_000);
      const failure = expectValid(meta[TOOL_FAILURE_META_KEY]);
      expect(failure.class).toBe(error.retryable ? 'reliability' : category === 'elevation' ? 'governance' : 'capability');
      // The draft: retryable only for reliability, and retryNotBefore only when retryable.
      if (failure.class !== 'reliability') expect(failure.retryable).not.toBe(true);
      if (failure.retryNotBefore !== undefined) expect(failure.retryable).toBe(true);
      expect(meta[TOOL_FAILURE_CATEGORY_META_KEY]).toBe(category);
      const outcome = readToolResult(plain(error.detail!, meta), { now: () => 1_000_000 });
      expect(outcome.status).toBe('error');
      expect(outcome.toolCallId).toBe('call-7');
      expect(outcome.error).toEqual(canonical(error));
    });
  }
});

it("a plain server's ToolFailure without the category beside it is read by its class and code", () => {
  const read = (failure: Record<string, unknown>) => readToolResult(plain('No.', { [TOOL_FAILURE_META_KEY]: failure }), { now: () => 0 }).error;
  expect(read({ class: 'governance', code: 'auth_required', correlationId: 'r', agentGuidance: 'Sign in.' })).toEqual({
    category: 'elevation',
    code: 'auth_required',
    detail: 'No.',
    retryable: false,
    remediation: 'Sign in.',
  });
  expect(read({ class: 'reliability', code: 'retryable_transient_error', retryable: true, retryNotBefore: 1_500, correlationId: 'r' })).toEqual({
    category: 'timeout',
    code: 'retryable_transient_error',
    detail: 'No.',
    retryable: true,
    retryAfterMs: 1_500,
  });
  expect(read({ class: 'capability', code: 'resource_not_found', correlationId: 'r' })).toMatchObject({ category: 'no-target', retryable: false });
  expect(read({ class: 'capability', code: 'invalid_input', correlationId: 'r' })).toMatchObject({ category: 'invalid-argument' });
  // Hostile or malformed: not read (the plain-failure rules classify the text as before).
  for (const bad of [
    { class: 'oops', code: 'x', correlationId: 'r' },
    { class: 'capability', code: 'x' },
    { class: 'reliability', code: 'x', correlationId: 'r', retryNotBefore: 'soon' },
  ]) {
    expect(read(bad)).toMatchObject({ category: 'internal', code: 'tool-error', extensions: { classification: { inferred: false } } });
  }
});

it("an upstream's own ToolFailure is relayed unchanged (the draft: intermediaries preserve it)", () => {
  const theirs = { class: 'governance', code: 'policy_blocked', correlationId: 'upstream-42' };
  const meta = toolFailureMetaOf(toolError('internal', 'tool-error', 'x'), 'gw-1', 0, { [TOOL_FAILURE_META_KEY]: theirs, other: 1 });
  expect(meta).toEqual({ [TOOL_FAILURE_META_KEY]: theirs, other: 1 });
});

describe('the server adapter with toolFailureMeta (real runtime, real SDK client)', () => {
  const runtime = createRuntime({
    tools: ERROR_CATEGORIES.map((category) =>
      defineTool({
        name: `fail_${category.replace(/-/g, '_')}`,
        description: `Fails with ${category}.`,
        approvalMode: 'read_only',
        handler: async () => {
          throw new ToolFailure({ category, code: `${category}-code`, detail: `It failed (${category}).`, remediation: defaultRemediation(category) });
        },
      }),
    ),
  });

  it('every category: the failed result carries the draft metadata, valid, a correlationId per call; off by default', async () => {
    const on = await clientFor(createEnvelopeServer(runtime, { toolFailureMeta: true }));
    const off = await clientFor(createEnvelopeServer(runtime));
    const ids = new Set<string>();
    try {
      for (const category of ERROR_CATEGORIES) {
        const name = `fail_${category.replace(/-/g, '_')}`;
        const r = (await on.callTool({ name, arguments: {} })) as Called;
        expect(r.isError).toBe(true);
        const failure = expectValid(r._meta?.[TOOL_FAILURE_META_KEY]);
        const envelope = contracts.mcec.decode(r.structuredContent);
        // The runtime's call id (MCEC has no field for it): one per call.
        expect(failure.correlationId).toMatch(/^[0-9a-f-]{16,}$/);
        expect(ids.has(failure.correlationId)).toBe(false);
        ids.add(failure.correlationId);
        expect(failure.code).toBe(`${category}-code`);
        const back = readToolResult(plain(envelope.error!.detail!, r._meta));
        expect(back.error).toMatchObject({ category, code: `${category}-code`, detail: envelope.error!.detail, remediation: defaultRemediation(category) });
        expect(back.error!.retryable).toBe(defaultRetryable(category));
        expect(((await off.callTool({ name, arguments: {} })) as Called)._meta?.[TOOL_FAILURE_META_KEY]).toBeUndefined();
      }
    } finally {
      await on.close();
      await off.close();
    }
  });
});

describe('the gateway with toolFailureMeta, in front of a real SDK v2 upstream', () => {
  let gw: Gateway;
  let off: Gateway;
  const spec = { name: 'modern', command: process.execPath, args: [join(repoRoot, 'src/mcp/test-support/modern-server.mjs')] };
  beforeAll(async () => {
    gw = await Gateway.start({ upstreams: [spec], toolFailureMeta: true, maxResultBytes: 256 * 1024, log: silent, supervision: { healthIntervalMs: 0 } });
    off = await Gateway.start({ upstreams: [spec], log: silent, supervision: { healthIntervalMs: 0 } });
  });
  afterAll(async () => {
    await gw?.close();
    await off?.close();
  });

  it("the upstream's failure and a gateway-made one (result-too-large) carry it, read back into the envelope's error", async () => {
    const client = await clientFor(gw.createServer());
    const plainClient = await clientFor(off.createServer());
    try {
      for (const [name, args, category] of [
        ['fail', {}, 'no-target'],
        ['big', { bytes: 512 * 1024 }, 'internal'],
      ] as const) {
        const r = (await client.callTool({ name, arguments: args })) as Called;
        const envelope = contracts.mcec.decode(r.structuredContent);
        expect(envelope.error?.category).toBe(category);
        const failure = expectValid(r._meta?.[TOOL_FAILURE_META_KEY]);
        // The gateway's call id, the one its audit record and traces carry.
        expect(failure.correlationId).toMatch(/^[0-9a-f-]{16,}$/);
        expect(readToolResult(plain(envelope.error!.detail!, r._meta)).error).toMatchObject({
          category,
          code: envelope.error!.code,
          detail: envelope.error!.detail,
          retryable: envelope.error!.retryable === true,
        });
        expect(((await plainClient.callTool({ name, arguments: args })) as Called)._meta?.[TOOL_FAILURE_META_KEY]).toBeUndefined();
      }
      const ok = (await client.callTool({ name: 'echo', arguments: { text: 'fine' } })) as Called;
      expect(ok.isError).toBe(false);
      expect(ok._meta?.[TOOL_FAILURE_META_KEY]).toBeUndefined();
    } finally {
      await client.close();
      await plainClient.close();
    }
  });
});
