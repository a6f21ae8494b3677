// One caller's traffic never reaches another, and one caller cannot break the upstream for everyone:
// two real SDK clients on one gateway in front of the real server-everything process.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { join } from 'node:path';
import type { Identity } from '../../governance/identity.js';
import { Gateway } from '../gateway/gateway.js';
import { clientFor, everythingSpec, repoRoot, silent } from '../test-support/harness.js';
import type { UpstreamSpec } from './upstream.js';

function envelope(r: unknown): Record<string, unknown> {
  const sc = (r as CallToolResult).structuredContent as Record<string, unknown>;
  expect(oracleValidate('mcec', sc).errors).toEqual([]);
  return sc;
}

function answering(client: Client, name: string, asked: string[]): void {
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    asked.push(name);
    return { model: 'test-model', role: 'assistant', content: { type: 'text', text: `answer of ${name}` } };
  });
}

describe('isolation between sessions', () => {
  let gw: Gateway;
  beforeEach(async () => {
    gw = await Gateway.start({ upstreams: [everythingSpec()], log: silent });
  });
  afterEach(async () => {
    await gw.close();
  });

  it("an upstream's sampling request goes to the session whose call caused it, never to another (two clients)", async () => {
    const asked: string[] = [];
    const a = await clientFor(gw.createServer(), { sampling: {} });
    answering(a, 'A', asked);
    const b = await clientFor(gw.createServer(), { sampling: {} });
    answering(b, 'B', asked);

    const rb = await b.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'for B', maxTokens: 5 } });
    expect(envelope(rb)).toMatchObject({ ok: true });
    expect(JSON.stringify((rb as CallToolResult).content)).toContain('answer of B');
    const ra = await a.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'for A', maxTokens: 5 } });
    expect(JSON.stringify((ra as CallToolResult).content)).toContain('answer of A');
    expect(asked).toEqual(['B', 'A']);

    // Once A has left, B's sampling still reaches B (it used to go to A, then hang to upstream-timeout).
    await a.close();
    const again = await b.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'again', maxTokens: 5 } });
    expect(JSON.stringify((again as CallToolResult).content)).toContain('answer of B');
    expect(asked).toEqual(['B', 'A', 'B']);
    await b.close();
  });

  it('a client that cannot sample gets a failure for its own call; the capable client is never asked in its place', async () => {
    const asked: string[] = [];
    const capable = await clientFor(gw.createServer(), { sampling: {} });
    answering(capable, 'capable', asked);
    const plain = await clientFor(gw.createServer(), {});
    const r = await plain.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'x', maxTokens: 5 } }).then(
      (v) => envelope(v),
      (e: unknown) => ({ rpcError: (e as { code?: number }).code }),
    );
    expect(r).not.toMatchObject({ ok: true });
    expect(asked).toEqual([]);
    await capable.close();
    await plain.close();
  });

  it("a request too large for the upstream is refused with an envelope before it is sent; another session's call in flight succeeds", async () => {
    const a = await clientFor(gw.createServer());
    const b = await clientFor(gw.createServer());
    const slow = b.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 } });
    await new Promise((r) => setTimeout(r, 100));
    const big = envelope(await a.callTool({ name: 'echo', arguments: { message: 'x'.repeat(12 * 1024 * 1024) } }));
    expect(big).toMatchObject({ ok: false, error: { category: 'invalid-argument', code: 'request-too-large' } });
    expect(envelope(await slow)).toMatchObject({ ok: true });
    // The upstream is the same process as before: it never saw the oversized frame.
    expect(gw.upstreams[0]!.generation).toBe(1);
    expect(envelope(await a.callTool({ name: 'echo', arguments: { message: 'small' } }))).toMatchObject({ ok: true });
    await a.close();
    await b.close();
  }, 60_000);
});

describe('upstream instances per tenant and per session', () => {
  const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');
  const spec = (isolation: 'tenant' | 'session'): UpstreamSpec => ({ name: 'counting', command: process.execPath, args: [COUNTING], isolation });
  const remember = async (c: Client, value: string): Promise<{ pid: number; memory: string[] }> => {
    const env = envelope(await c.callTool({ name: 'remember', arguments: { value } }));
    expect(env).toMatchObject({ ok: true });
    return env.result as { pid: number; memory: string[] };
  };

  it("per tenant: each tenant's state lives in its own process; sessions of one tenant share it", async () => {
    const gw = await Gateway.start({ upstreams: [spec('tenant')], log: silent });
    const as = (id: string, tenant: string): Identity => ({ principal: { kind: 'user', id, tenant_id: tenant }, roles: [], via: 'token' });
    try {
      const a1 = await clientFor(gw.createServer({ identity: as('alice', 'acme') }));
      const a2 = await clientFor(gw.createServer({ identity: as('ann', 'acme') }));
      const g = await clientFor(gw.createServer({ identity: as('gus', 'globex') }));
      const first = await remember(a1, 'acme-secret');
      const other = await remember(g, 'globex-note');
      const same = await remember(a2, 'acme-2');
      expect(other.memory).toEqual(['globex-note']);
      expect(other.pid).not.toBe(first.pid);
      expect(same.pid).toBe(first.pid);
      expect(same.memory).toEqual(['acme-secret', 'acme-2']);
      for (const c of [a1, a2, g]) await c.close();
    } finally {
      await gw.close();
    }
  });

  it('per session: each session gets its own instance, stopped when the session ends', async () => {
    const gw = await Gateway.start({ upstreams: [spec('session')], log: silent });
    try {
      const a = await clientFor(gw.createServer());
      const b = await clientFor(gw.createServer());
      const ra = await remember(a, 'a');
      const rb = await remember(b, 'b');
      expect(ra.pid).not.toBe(rb.pid);
      expect(rb.memory).toEqual(['b']);
      await a.close();
      // The instance of A's session exits with it.
      await expect
        .poll(
          () => {
            try {
              process.kill(ra.pid, 0);
              return true;
            } catch {
              return false;
            }
          },
          { timeout: 5_000 },
        )
        .toBe(false);
      expect((await remember(b, 'b2')).memory).toEqual(['b', 'b2']);
      await b.close();
    } finally {
      await gw.close();
    }
  });
});
