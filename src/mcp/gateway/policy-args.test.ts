// Rules on a call's arguments enforced through the real gateway in front of the reference
// server-everything (#38, must hold): a URL host rule (echo's message read as a URL) and an amount
// threshold that requires approval (get-sum's a). Real SDK client over HTTP, real SQLite store; a
// paused call is a pending approval request in the store and never reaches the upstream.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { everythingSpec } from '../test-support/harness.js';
import { type CountingGateway, countingGateway } from '../test-support/counting-gateway.js';

const POLICY = `version: 1
rules:
  - name: our-hosts
    match: { tool: echo }
    when: "host(args.message) != 'example.com' && !host(args.message).endsWith('.example.com')"
    effect: deny
    reason: only example.com and its subdomains
  - name: large-sums
    match: { tool: get-sum }
    when: "args.a > 1000"
    effect: require-approval
    reason: above 1,000 needs an approver
  - { name: rest, effect: allow }
`;

let rig: CountingGateway;
let client: Client;
beforeAll(async () => {
  rig = await countingGateway(POLICY, undefined, everythingSpec());
  client = new Client({ name: 'args-policy', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(rig.endpoint.url)));
});
afterAll(async () => {
  await client?.close();
  await rig?.close();
});

type Envelope = { ok: boolean; status?: string; error?: { detail?: string } };
const call = async (name: string, args: Record<string, unknown>): Promise<Envelope> =>
  (await client.callTool({ name, arguments: args })).structuredContent as Envelope;

describe('argument rules through the gateway', () => {
  it('a URL host rule: our hosts pass, any other host (or none) is blocked', async () => {
    for (const url of ['https://example.com/a', 'https://API.Example.com:8443/x?y=1', 'http://a.b.example.com']) {
      expect((await call('echo', { message: url })).ok, url).toBe(true);
    }
    for (const url of [
      'https://example.com.evil.org/',
      'https://evil.org/?u=https://example.com',
      'https://user@evil.org',
      'not a url',
      'https://exampleXcom',
    ]) {
      expect(await call('echo', { message: url }), url).toMatchObject({
        ok: false,
        error: { detail: 'Blocked by policy: only example.com and its subdomains' },
      });
    }
  });

  it('an amount threshold: at or below 1,000 runs, above it waits for an approver', async () => {
    expect((await call('get-sum', { a: 1000, b: 1 })).ok).toBe(true);
    const paused = await call('get-sum', { a: 1000.5, b: 1 });
    expect(paused).toMatchObject({ ok: false });
    expect(JSON.stringify(paused)).toMatch(/paused|approv/i);
    const pending = (await rig.store.listApprovals({ state: 'pending' })).approvals;
    expect(pending.map((a) => a.tool)).toEqual(['get-sum']);
    expect(pending[0]!.policyDecision).toMatchObject({ effect: 'require-approval', rule: 'large-sums', policyDigest: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });
});
