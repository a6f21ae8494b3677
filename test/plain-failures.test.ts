// The labelled plain-failure corpus, replayed live: five real reference MCP servers (filesystem,
// memory, everything, sequential-thinking, git) behind the gateway, each started once per
// contract (and per later revision), every case called through the SDK's own client. Each envelope must be valid under
// its contract's published schema, and the classification must meet the goals of issue #16:
// category agreement >= 95%, no wrong `retryable: true`; the unmatched rate is reported.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { contracts } from '../src/core/contracts/registry.js';
import { classifyPlainFailure, shippedFailureRules } from '../src/core/plain-failure.js';
import type { Dialect } from '../src/mcp/envelope.js';
import { Gateway } from '../src/mcp/gateway/gateway.js';
import { readCallError } from '../src/mcp/reader.js';
import { clientFor, silent } from '../src/mcp/test-support/harness.js';
import { oracleValidate } from './oracle.js';
// @ts-expect-error: a plain JS module shared with scripts/plain-failure-corpus.mjs
import { CASES, accuracy, prepareWorkspace, repoRoot, serverSpecs } from './plain-failures/cases.mjs';

interface Case {
  server: string;
  tool: string;
  args: Record<string, unknown> | ((ws: unknown) => Record<string, unknown>);
  label: { category: string; retryable: boolean };
}
interface Read {
  server: string;
  tool: string;
  label: Case['label'];
  category: string;
  retryable: boolean | null | undefined;
  rule: string | null;
}

const corpus = JSON.parse(readFileSync(join(repoRoot as string, 'test', 'fixtures', 'plain-failure-corpus.json'), 'utf8')) as {
  cases: { server: string; command: string; call: { name: string; arguments: unknown }; label: Case['label']; answer: { text?: string; isError?: boolean } }[];
};
const prefix = (server: string): string => `${server.replace(/-/g, '_')}__`;

describe('the recorded corpus (test/fixtures/plain-failure-corpus.json, node scripts/plain-failure-corpus.mjs)', () => {
  it('has at least 60 failures from at least 5 servers, each with the command and the call that produced it', () => {
    expect(corpus.cases.length).toBeGreaterThanOrEqual(60);
    expect(new Set(corpus.cases.map((c) => c.server)).size).toBeGreaterThanOrEqual(5);
    expect(corpus.cases.length).toBe((CASES as Case[]).length);
    for (const c of corpus.cases) {
      expect(c.command).toMatch(/^node \S+/);
      expect(c.call.name).toBeTypeOf('string');
      expect(c.answer.isError).toBe(true);
    }
  });

  it('the shipped rules classify the recorded texts within the goals', () => {
    const results: Read[] = corpus.cases.map((c) => {
      const m = classifyPlainFailure({ text: c.answer.text ?? '' }, [shippedFailureRules()]);
      return {
        server: c.server,
        tool: c.call.name,
        label: c.label,
        category: m?.category ?? 'internal',
        retryable: m?.retryable ?? false,
        rule: m?.rule ?? null,
      };
    });
    const report = accuracy(results);
    expect(report.disagreements).toEqual([]);
    expect(report.categoryAgreement).toBeGreaterThanOrEqual(0.95);
    expect(report.wrongRetryableTrue).toBe(0);
  });
});

// The three contracts and the two later revisions, each checked under its own published schema.
const DIALECTS: Dialect[] = ['mcec', 'dw', 'contextos', 'mcec@2026-07', 'dw@14'];

describe.each(DIALECTS)('the corpus through the gateway, live (%s)', (dialect) => {
  let gw: Gateway;
  let client: Client;
  let tools: Set<string>;
  const ws = prepareWorkspace();
  const results: Read[] = [];

  beforeAll(async () => {
    const specs = serverSpecs(ws) as Record<string, { name: string; command: string; args: string[]; env?: Record<string, string> }>;
    gw = await Gateway.start({
      upstreams: Object.values(specs).map((s) => ({ ...s, prefix: prefix(s.name), cwd: ws.root as string })),
      dialect,
      log: silent,
    });
    client = await clientFor(gw.createServer());
    tools = new Set((await client.listTools()).tools.map((t) => t.name));
  });

  afterAll(async () => {
    await client?.close();
    await gw?.close();
  });

  it('every case answers a failed envelope valid under the published schema, read back with its rule', async () => {
    for (const kase of CASES as Case[]) {
      const args = typeof kase.args === 'function' ? kase.args(ws) : kase.args;
      const name = prefix(kase.server) + kase.tool;
      if (!tools.has(name)) {
        // The gateway answers a tool it does not route itself, as a JSON-RPC error (protocol faults
        // are not wrapped); a client reads it with readCallError, by the same rules.
        const err = await client.callTool({ name, arguments: args }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, name).toBeDefined();
        const outcome = readCallError(err);
        const cls = outcome.error!.extensions!.classification as { rule: string | null };
        results.push({
          server: kase.server,
          tool: kase.tool,
          label: kase.label,
          category: outcome.error!.category,
          retryable: outcome.error!.retryable,
          rule: cls.rule,
        });
        continue;
      }
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      const verdict = oracleValidate(dialect === 'contextos' ? 'contextos-result' : dialect, result.structuredContent);
      expect(verdict.errors, `${name}: ${JSON.stringify(result.structuredContent).slice(0, 300)}`).toEqual([]);
      expect(result.isError, name).toBe(true);
      const outcome = contracts[dialect].decode(result.structuredContent);
      const error = outcome.error!;
      // The upstream's own text stays, in the contract's detail field.
      const upstreamText = result.content
        .filter((b) => b.type === 'text')
        .map((b) => (b as { text: string }).text)
        .join('\n');
      expect(error.detail, name).toBe(upstreamText);
      let rule: string | null = null;
      const closed = dialect === 'mcec' || dialect === 'mcec@2026-07';
      if (!closed) rule = ((error.extensions?.classification as { rule: string | null }) ?? { rule: 'absent' }).rule;
      else {
        // MCEC is closed: the rule and retryable are not on its wire; the category and code are.
        rule = classifyPlainFailure({ text: upstreamText }, [shippedFailureRules()])?.rule ?? null;
      }
      const retryable = closed ? undefined : error.retryable;
      results.push({ server: kase.server, tool: kase.tool, label: kase.label, category: error.category, retryable, rule });
    }
    const report = accuracy(results);
    console.log(`plain-failure corpus via the gateway (${dialect}): ${JSON.stringify(report)}`);
    expect(report.cases).toBe((CASES as Case[]).length);
    expect(report.servers).toBeGreaterThanOrEqual(5);
    expect(report.categoryAgreement).toBeGreaterThanOrEqual(0.95);
    expect(report.wrongRetryableTrue).toBe(0);
    if (!dialect.startsWith('mcec')) expect(results.every((r) => typeof r.retryable === 'boolean')).toBe(true);
    expect(report.unmatchedRate).toBeLessThan(0.1);
  });
});
