// The gateway's call path as docs/architecture.md draws it ("The gateway's call"), held against the
// code: one HTTP tools/call from a 2025-era SDK client, a stdio upstream, audit on (a real SQLite
// file). The stack at the upstream request (async frames included) names the product files the call
// went through; the step files must be the doc's, in its order, none entered twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { openStore } from '../../store/index.js';
import type { Store } from '../../store/types.js';
import { type HttpEndpoint, serveHttp } from '../serve/http.js';
import { repoRoot, silent, tempDir } from '../test-support/harness.js';
import { Upstream } from '../upstream/upstream.js';
import { Gateway } from './gateway.js';
import { GatewayGovernance } from './governor.js';
import { ToolCalls } from './tool-calls.js';
import { Forwarder } from './forwarder.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');

/** The step files the doc lists, in order (the numbered lines of its drawing). */
function documentedSteps(): string[] {
  const doc = readFileSync(join(repoRoot, 'docs/architecture.md'), 'utf8');
  const drawing = doc.slice(doc.indexOf("### The gateway's call"));
  return [...drawing.matchAll(/^(\d) (\S+\.ts)/gm)].map((m) => `src/${m[2]}`);
}

/** The product files of a stack, outermost first, each run of frames in one file counted once. */
function filesOf(stack: string): string[] {
  const files: string[] = [];
  for (const line of stack.split('\n').reverse()) {
    const m = /\((?:file:\/\/)?([^()]*?\/src\/[^():]+\.ts):\d+:\d+\)|at (?:async )?(?:file:\/\/)?(\S*?\/src\/[^():]+\.ts):\d+:\d+$/.exec(line.trim());
    const file = m && (m[1] ?? m[2]);
    if (!file || file.includes('.test.ts') || file.includes('/test-support/')) continue;
    const rel = file.slice(file.lastIndexOf('/src/') + 1);
    if (files.at(-1) !== rel) files.push(rel);
  }
  return files;
}

describe("the gateway's call path", () => {
  let store: Store;
  let gw: Gateway;
  let endpoint: HttpEndpoint;
  const stacks: string[] = [];
  const request = Upstream.prototype.request;
  const callTool = ToolCalls.prototype.callTool;
  const entries: string[] = [];
  const executeStep = Forwarder.prototype.executeStep;
  const executions: string[] = [];
  const limit = Error.stackTraceLimit;

  beforeAll(async () => {
    const dir = tempDir();
    store = await openStore(join(dir, 'audit.db'));
    const governance = new GatewayGovernance({ store, approvalPollMs: 0, principalChain: [{ kind: 'user', id: 'alice' }] });
    gw = await Gateway.start({
      upstreams: [{ name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: join(dir, 'count.log') } }],
      governance,
      log: silent,
    });
    endpoint = await serveHttp((session) => gw.createServer(session), { port: 0 });
    Error.stackTraceLimit = 200;
    Upstream.prototype.request = function (this: Upstream, req, options) {
      if (req.method === 'tools/call') stacks.push(new Error('call path').stack ?? '');
      return request.call(this, req, options);
    };
    Forwarder.prototype.executeStep = function (this: Forwarder, step, decided) {
      executions.push(new Error('execute step').stack ?? '');
      return executeStep.call(this, step, decided);
    };
    ToolCalls.prototype.callTool = function (this: ToolCalls, req, extra, server) {
      entries.push(new Error('call entry').stack ?? '');
      return callTool.call(this, req, extra, server);
    };
  });

  afterAll(async () => {
    Upstream.prototype.request = request;
    ToolCalls.prototype.callTool = callTool;
    Forwarder.prototype.executeStep = executeStep;
    Error.stackTraceLimit = limit;
    await endpoint?.close();
    await gw?.close();
    await store?.close();
  });

  it('enters the step files docs/architecture.md lists, in its order, none twice', async () => {
    const steps = documentedSteps();
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.length).toBeLessThanOrEqual(8);
    expect(new Set(steps).size).toBe(steps.length);

    const client = new Client({ name: 'call-path', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(endpoint.url)));
    const before = stacks.length;
    const result = await client.callTool({ name: 'read_notes', arguments: {} });
    await client.close();
    expect(result.isError).not.toBe(true);
    expect(stacks.length).toBe(before + 1);

    expect(entries.length).toBeGreaterThan(0);
    // The call's path: the stack where the gateway's call path is entered, then the stack at the
    // upstream request, joined where they meet; the replaced Upstream.request is the last step.
    const entry = filesOf(entries.at(-1)!);
    const onward = filesOf(stacks.at(-1)!);
    expect(onward[0]).toBe(entry.at(-1));
    const path = [...entry, ...onward.slice(1), 'src/mcp/upstream/upstream.ts'];
    // No product file is entered twice, and the step files come in the doc's order.
    expect(new Set(path).size).toBe(path.length);
    const stepsEntered = path.filter((f) => steps.includes(f));
    // The stacks show the path from the SDK's dispatch on (the HTTP steps before it are awaited
    // through the SDK, whose frames carry no product file): from the session's server to the upstream.
    expect(stepsEntered).toEqual(steps.slice(steps.indexOf('src/mcp/gateway/session-server.ts')));
    // Only leaves stand between two steps: nothing but a step file holds two frames apart.
    expect(path.filter((f) => !steps.includes(f))).toEqual(['src/mcp/upstream/client-era.ts']);
    // The pipeline calls the execute step itself (the async frames above miss a plain function
    // between them, so the synchronous caller is read where the step is entered).
    expect(filesOf(executions.at(-1)!).at(-1)).toBe('src/governance/pipeline.ts');
  });
});
