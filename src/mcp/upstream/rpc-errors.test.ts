// A JSON-RPC error that an upstream answers a tools/call with is a tool failure when it says the
// tool failed (an input-validation error, an internal error): through the gateway it becomes a
// classified envelope in every contract. Protocol faults and unknown tools stay JSON-RPC errors.
import { join } from 'node:path';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import type { Dialect } from '../envelope.js';
import { Gateway } from '../gateway/gateway.js';
import { clientFor, repoRoot, silent } from '../test-support/harness.js';

const FIXTURE = join(repoRoot, 'test/fixtures/rpc-error-server.mjs');
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function gatewayClient(dialect: Dialect) {
  const gw = await Gateway.start({
    upstreams: [{ name: 'rpc', command: process.execPath, args: [FIXTURE] }],
    dialect,
    log: silent,
    supervision: { healthIntervalMs: 0 },
  });
  cleanups.push(() => gw.close());
  const client = await clientFor(gw.createServer());
  cleanups.push(() => client.close());
  return client;
}

const ORACLE = { mcec: 'mcec', dw: 'dw', contextos: 'contextos-result' } as const;

describe('JSON-RPC errors of a tools/call, through the gateway', () => {
  it.each(['mcec', 'dw', 'contextos'] as const)(
    '%s: an input-validation error is invalid-argument, an internal error is internal; both envelopes valid',
    async (dialect) => {
      const client = await gatewayClient(dialect);
      const bad = (await client.callTool({ name: 'needs_path', arguments: {} })) as CallToolResult;
      expect(bad.isError).toBe(true);
      expect(oracleValidate(ORACLE[dialect], bad.structuredContent).valid).toBe(true);
      const text = JSON.stringify(bad.structuredContent);
      expect(text).toContain('invalid-argument');
      expect(text).toContain('Input validation error: path: Required');

      const boom = (await client.callTool({ name: 'crashes', arguments: {} })) as CallToolResult;
      expect(boom.isError).toBe(true);
      expect(oracleValidate(ORACLE[dialect], boom.structuredContent).valid).toBe(true);
      expect(JSON.stringify(boom.structuredContent)).toContain('the index is corrupt');

      const fine = (await client.callTool({ name: 'ok', arguments: {} })) as CallToolResult;
      expect(fine.isError).toBe(false);
    },
  );

  it('the upstream answering "Tool X not found" stays a JSON-RPC error, as MCEC says of protocol faults', async () => {
    const client = await gatewayClient('mcec');
    // The gateway lists only the upstream's tools; a stale name the upstream no longer has is its fault to report.
    const err = await client.callTool({ name: 'nope', arguments: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(McpError);
  });
});
