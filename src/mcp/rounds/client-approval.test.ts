// Approve from the client: a destructive call through a client that supports elicitation (as Claude
// Desktop does) is confirmed there and runs once, when the policy lets the call's verified user
// approve it. Real SDK client, the real counting upstream process, a real SQLite store.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { compilePolicy } from '../../governance/policy.js';
import { openStore } from '../../store/index.js';
import { operatorKeyFromSecret } from '../../store/operator-key.js';
import type { Store } from '../../store/types.js';
import { Gateway } from '../gateway/gateway.js';
import { GatewayGovernance } from '../gateway/governor.js';
import { clientFor, repoRoot, silent, tempDir } from '../test-support/harness.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');

describe('approve from the client (elicitation)', () => {
  let gw: Gateway;
  let store: Store;
  let count: string;
  const ran = (): number =>
    existsSync(count)
      ? readFileSync(count, 'utf8')
          .split('\n')
          .filter((l) => l.includes('delete_item')).length
      : 0;
  const status = (r: unknown): string => {
    const sc = (r as CallToolResult).structuredContent as Record<string, unknown>;
    expect(oracleValidate('contextos-result', sc).errors).toEqual([]);
    return sc.status as string;
  };

  beforeAll(async () => {
    const dir = tempDir();
    count = join(dir, 'count.jsonl');
    store = await openStore(join(dir, 'audit.db'));
    const governance = new GatewayGovernance({
      store,
      approvalPollMs: 0,
      operatorKey: operatorKeyFromSecret(Buffer.alloc(32, 5)),
      principalChain: [{ kind: 'user', id: 'dana' }],
      policy: compilePolicy({
        version: 1,
        rules: [
          { name: 'own-deletes', match: { tool: 'delete_item' }, effect: 'require-approval', selfApproval: true },
          { name: 'purges', match: { tool: 'purge_all' }, effect: 'require-approval' },
        ],
      }),
    });
    gw = await Gateway.start({
      upstreams: [{ name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: count } }],
      dialect: 'contextos',
      governance,
      log: silent,
    });
  });
  afterAll(async () => {
    await gw.close();
    await store.close();
  });

  const withAnswer = async (action: 'accept' | 'decline', asked: string[]): Promise<Client> => {
    const c = await clientFor(gw.createServer(), { elicitation: {} });
    c.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return action === 'accept' ? { action, content: { approve: true } } : { action };
    });
    return c;
  };

  it('accept: the call runs once and the client gets completed, approved by its verified user', async () => {
    const asked: string[] = [];
    const c = await withAnswer('accept', asked);
    const r = await c.callTool({ name: 'delete_item', arguments: { id: 'x1' } });
    expect(status(r)).toBe('completed');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('delete_item');
    expect(asked[0]).toContain('"x1"');
    expect(ran()).toBe(1);
    const { approvals } = await store.listApprovals({ state: 'completed' });
    expect(approvals[0]).toMatchObject({ decidedBy: 'user:dana', decisionSignature: expect.any(String) });
    await c.close();
  });

  it('decline: rejected, nothing runs; a client without elicitation gets paused; a policy without selfApproval never asks', async () => {
    const asked: string[] = [];
    const d = await withAnswer('decline', asked);
    expect(status(await d.callTool({ name: 'delete_item', arguments: { id: 'x2' } }))).toBe('rejected');
    expect(status(await d.callTool({ name: 'purge_all', arguments: {} }))).toBe('paused');
    expect(asked).toHaveLength(1);
    await d.close();
    const plain = await clientFor(gw.createServer());
    expect(status(await plain.callTool({ name: 'delete_item', arguments: { id: 'x3' } }))).toBe('paused');
    await plain.close();
    expect(ran()).toBe(1);
  });
});
