// The client reader on plain failures, and the gateway config's per-upstream rules.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { isToolEnvelopeError } from '../core/errors.js';
import { PLAIN_FAILURE_RULES_FORMAT, classifyPlainFailure, compileFailureRules } from '../core/plain-failure.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { oracleValidate } from '../../test/oracle.js';
import { decodeDw } from '../core/contracts/dw.js';
import { loadGatewayConfig, parseGatewayConfig } from './gateway/config.js';
import { Gateway } from './gateway/gateway.js';
import { clientFor, memorySpec, silent, tempDir } from './test-support/harness.js';
import { readCallError, readToolResult } from './reader.js';

const plain = (text: string, structuredContent?: Record<string, unknown>) => ({
  content: [{ type: 'text' as const, text }],
  isError: true,
  ...(structuredContent ? { structuredContent } : {}),
});

describe('readToolResult on what is not a tool result', () => {
  it('throws invalid-option, not a TypeError, for a non-object or a content that is not a list of objects', () => {
    const cases: [unknown, string][] = [
      [null, 'not an MCP tool result: expected an object with content or structuredContent'],
      ['text', 'not an MCP tool result: expected an object with content or structuredContent'],
      [[{ type: 'text', text: 'x' }], 'not an MCP tool result: expected an object with content or structuredContent'],
      [{ content: 'x' }, 'not an MCP tool result: content must be a list of content blocks'],
      [{ content: [null], isError: true }, 'not an MCP tool result: each content block must be an object'],
    ];
    for (const [value, message] of cases) {
      let thrown: unknown;
      try {
        readToolResult(value as CallToolResult);
      } catch (e) {
        thrown = e;
      }
      expect(isToolEnvelopeError(thrown, 'invalid-option'), String(thrown)).toBe(true);
      expect((thrown as Error).message).toBe(message);
    }
    // An object with no content at all still reads, as before: an empty success.
    expect(readToolResult({} as CallToolResult)).toMatchObject({ status: 'ok', result: { text: '' } });
  });
});

describe('readToolResult on plain failures', () => {
  it('keeps the upstream text, states the category, code and retryable of the rule, and names the rule', () => {
    const text = "ENOENT: no such file or directory, open '/srv/a.txt'";
    const outcome = readToolResult(plain(text));
    expect(outcome.status).toBe('error');
    expect(outcome.error).toEqual({
      category: 'no-target',
      code: 'not-found',
      detail: text,
      retryable: false,
      extensions: { classification: { inferred: true, rule: 'posix.enoent', ruleSet: 'shipped' } },
    });
    expect(outcome.content).toEqual([{ type: 'text', text }]);
  });

  it('leaves what no rule matches internal, marked as not inferred', () => {
    expect(readToolResult(plain('boom')).error).toMatchObject({
      category: 'internal',
      code: 'tool-error',
      retryable: false,
      extensions: { classification: { inferred: false, rule: null, ruleSet: null } },
    });
  });

  it('user rules (options.rules) are tried before the shipped ones; shippedRules: false drops those', () => {
    const rules = compileFailureRules(
      { format: PLAIN_FAILURE_RULES_FORMAT, rules: [{ id: 'acme.busy', pattern: 'ENOENT', category: 'internal', code: 'busy', retryable: true }] },
      'acme',
    );
    expect(readToolResult(plain('ENOENT: x'), { rules }).error).toMatchObject({
      category: 'internal',
      code: 'busy',
      retryable: true,
      extensions: { classification: { rule: 'acme.busy', ruleSet: 'acme' } },
    });
    expect(readToolResult(plain('EACCES: y'), { rules: [rules] }).error).toMatchObject({ category: 'elevation', code: 'permission-denied' });
    expect(readToolResult(plain('EACCES: y'), { rules, shippedRules: false }).error).toMatchObject({ category: 'internal', code: 'tool-error' });
  });

  it('structured content is kept as details and can be matched by a rule', () => {
    const rules = compileFailureRules(
      { format: PLAIN_FAILURE_RULES_FORMAT, rules: [{ id: 'sc', in: '/kind', pattern: '^quota$', category: 'internal', code: 'quota', retryable: true }] },
      'u',
    );
    const outcome = readToolResult(plain('failed', { kind: 'quota' }), { rules });
    expect(outcome.error).toMatchObject({ code: 'quota', details: { kind: 'quota' } });
  });
});

describe('readCallError', () => {
  it('classifies the JSON-RPC error a tools/call was answered with', () => {
    expect(readCallError(new McpError(-32602, 'Unknown tool: nope')).error).toMatchObject({
      category: 'no-target',
      code: 'tool-not-found',
      details: { rpcCode: -32602 },
    });
    expect(readCallError(new McpError(-32602, 'Invalid arguments: x must be a string')).error).toMatchObject({
      category: 'invalid-argument',
      code: 'invalid-params',
      retryable: false,
    });
    expect(readCallError(Object.assign(new Error('Tool nope not found'), { code: -32602 })).error).toMatchObject({
      category: 'no-target',
      detail: 'MCP error -32602: Tool nope not found',
    });
    expect(readCallError(new McpError(-32603, 'boom')).error).toMatchObject({ category: 'internal', code: 'rpc-error', details: { rpcCode: -32603 } });
  });
});

describe('gateway config: per-upstream failureRules', () => {
  const dir = mkdtempSync(join(tmpdir(), 'te-rules-'));
  const upstream = (failureRules: unknown) => ({ upstreams: [{ name: 'files', command: 'node', args: ['s.js'], failureRules }] });

  it('takes an inline rule file or the path of one (JSON or YAML), compiled at start', async () => {
    const inline = parseGatewayConfig(
      upstream({ format: PLAIN_FAILURE_RULES_FORMAT, rules: [{ id: 'x', pattern: '^Quota', category: 'internal', code: 'quota', retryable: true }] }),
      dir,
    );
    expect(classifyPlainFailure({ text: 'Quota hit' }, [inline.upstreams[0]!.failureRules!])).toMatchObject({ rule: 'x', ruleSet: 'upstream:files' });
    writeFileSync(
      join(dir, 'rules.yaml'),
      `format: ${PLAIN_FAILURE_RULES_FORMAT}\nrules:\n  - { id: y, pattern: '^Locked', category: internal, code: locked }\n`,
    );
    writeFileSync(join(dir, 'gw.json'), JSON.stringify(upstream('rules.yaml')));
    const fromFile = await loadGatewayConfig(join(dir, 'gw.json'));
    expect(classifyPlainFailure({ text: 'Locked row' }, [fromFile.upstreams[0]!.failureRules!])?.rule).toBe('y');
  });

  it('a bad pattern is a clear config error at start, naming the upstream and the rule', () => {
    let caught: unknown;
    try {
      parseGatewayConfig(
        upstream({ format: PLAIN_FAILURE_RULES_FORMAT, rules: [{ id: 'bad', pattern: '([a-', category: 'internal', code: 'x' }] }),
        dir,
        'gw.yaml',
      );
    } catch (err) {
      caught = err;
    }
    expect(isToolEnvelopeError(caught, 'invalid-option')).toBe(true);
    expect((caught as Error).message).toMatch(
      /^gw\.yaml\.upstreams\[0\]\.failureRules: upstream:files: invalid plain-failure rules \(1 problem; first: \/rules\/0\/pattern is not a valid regular expression/,
    );
    expect((caught as { issues: { path: string }[] }).issues.map((i) => i.path)).toEqual(['/rules/0/pattern']);
    expect(() => parseGatewayConfig(upstream('missing.json'), dir)).toThrow(/cannot read the rule file/);
    expect(() => parseGatewayConfig(upstream(3), dir)).toThrow(/must be a rule file/);
  });
});

describe("the gateway applies an upstream's own rules before the shipped ones (real server-memory)", () => {
  it('the user rule wins, and the envelope names it', async () => {
    const cfg = parseGatewayConfig(
      {
        upstreams: [
          {
            ...memorySpec(tempDir(), { prefix: 'mem_' }),
            failureRules: {
              format: PLAIN_FAILURE_RULES_FORMAT,
              rules: [{ id: 'mem.missing', pattern: '^Entity with name', category: 'stale-element', code: 'entity-gone', retryable: true }],
            },
          },
        ],
      },
      '/',
    );
    const gw = await Gateway.start({ upstreams: cfg.upstreams, dialect: 'dw', log: silent });
    const client = await clientFor(gw.createServer());
    try {
      const r = (await client.callTool({
        name: 'mem_add_observations',
        arguments: { observations: [{ entityName: 'nobody', contents: ['x'] }] },
      })) as CallToolResult;
      expect(oracleValidate('dw', r.structuredContent).errors).toEqual([]);
      const error = decodeDw(r.structuredContent).error!;
      expect(error).toMatchObject({ category: 'stale-element', code: 'entity-gone', retryable: true, detail: 'Entity with name nobody not found' });
      expect(error.extensions?.classification).toEqual({ inferred: true, rule: 'mem.missing', ruleSet: 'upstream:memory' });
      // What the user rules do not cover still gets the shipped ones.
      const bad = (await client.callTool({ name: 'mem_open_nodes', arguments: { names: 'a' } })) as CallToolResult;
      expect(decodeDw(bad.structuredContent).error).toMatchObject({ category: 'invalid-argument', code: 'invalid-params' });
    } finally {
      await client.close();
      await gw.close();
    }
  });
});
