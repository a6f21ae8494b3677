// Multi-round-trip input through the gateway for modern-era (2026-07-28) clients over Streamable
// HTTP: the upstream's elicitation comes back as an `input_required` result with a `requestState`;
// the caller's retry finishes the same (single) call; another caller's state, a forged one and one
// of another process get one and the same refusal. In front of the SDK v2 test server
// (test-support/modern-server.mjs, its `confirm_delete` tool asks for a confirmation) the upstream's
// own round is relayed with its own key and a wrapped state (rounds/relay.ts; more in
// rounds/relay.test.ts); in front of a 2025-era upstream (server-everything) its elicitation request
// becomes the gateway's own round (rounds/input.ts).
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ResultSchema } from '@modelcontextprotocol/core';
import { Client, StreamableHTTPClientTransport, withInputRequired } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { tokenAuthenticator, tokenDigest } from '../serve/auth.js';
import { Gateway } from '../gateway/gateway.js';
import { serveHttp, type HttpEndpoint } from '../serve/http.js';
import { everythingSpec, repoRoot, silent } from '../test-support/harness.js';

const MODERN = join(repoRoot, 'src/mcp/test-support/modern-server.mjs');

interface Answer {
  resultType?: string;
  inputRequests?: Record<string, { method: string; params?: Record<string, unknown> }>;
  requestState?: string;
  content?: unknown;
  structuredContent?: unknown;
}

let gw: Gateway;
let endpoint: HttpEndpoint;
const records: string[] = [];
// A second gateway process's worth of state (its own memory), with a short deadline.
let gw2: Gateway;
let endpoint2: HttpEndpoint;
const records2: unknown[] = [];
const tokens = () =>
  tokenAuthenticator({
    tokens: [
      { sha256: tokenDigest('t-alice'), principal: 'user:alice', tenant: 'acme' },
      { sha256: tokenDigest('t-bob'), principal: 'user:bob', tenant: 'acme' },
    ],
  });

async function connect(token: string, url = endpoint.url): Promise<Client> {
  const client = new Client(
    { name: `mrtr-${token}`, version: '1' },
    { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

function call(client: Client, params: Record<string, unknown>): Promise<Answer> {
  return client.request(
    { method: 'tools/call', params: { name: 'confirm_delete', arguments: { item: 'old.log' }, ...params } },
    withInputRequired(ResultSchema),
    {
      allowInputRequired: true,
    },
  ) as Promise<Answer>;
}

beforeAll(async () => {
  gw = await Gateway.start({
    upstreams: [{ name: 'modern', command: process.execPath, args: [MODERN] }],
    dialect: 'dw',
    log: silent,
    recorder: { record: (c) => void records.push(c.tool) },
  });
  endpoint = await serveHttp((session) => gw.createServer(session), { port: 0, auth: tokens() });
  gw2 = await Gateway.start({
    upstreams: [{ name: 'modern', command: process.execPath, args: [MODERN] }],
    dialect: 'dw',
    deadlineMs: 1_000,
    log: silent,
    recorder: { record: (_c, _o, envelope) => void records2.push(envelope.status) },
  });
  endpoint2 = await serveHttp((session) => gw2.createServer(session), { port: 0, auth: tokens() });
}, 60_000);
afterAll(async () => {
  await endpoint?.close();
  await gw?.close();
  await endpoint2?.close();
  await gw2?.close();
});

describe('modern-era input rounds over HTTP', () => {
  it("the upstream's elicitation is an input_required result; the retry finishes the one call; another caller's, a forged and an unknown state are refused alike", async () => {
    const alice = await connect('t-alice');
    const bob = await connect('t-bob');
    try {
      records.length = 0;
      const first = await call(alice, {});
      expect(first.resultType).toBe('input_required');
      expect(first.requestState).toMatch(/^ter_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
      const entries = Object.entries(first.inputRequests ?? {});
      expect(entries).toHaveLength(1);
      const [key, request] = entries[0]!;
      // The upstream's own key, not one the gateway made up.
      expect(key).toBe('confirm');
      expect(request.method).toBe('elicitation/create');
      expect(request.params?.message).toBe('Delete old.log?');
      const inputResponses = { [key]: { action: 'accept', content: { confirm: true } } };

      // Bob holds Alice's state: refused, and Alice's call is not disturbed by it.
      const refusal = /Unknown, used or expired requestState/;
      await expect(call(bob, { inputResponses, requestState: first.requestState })).rejects.toThrow(refusal);
      // A forged state (shaped like one, never issued) gets the same answer; a malformed one or a
      // handle of the gateway's own rounds is unknown as well.
      const forged = `ter_${randomBytes(40).toString('base64url')}.${randomBytes(32).toString('base64url')}`;
      await expect(call(alice, { inputResponses, requestState: forged })).rejects.toThrow(refusal);
      await expect(call(alice, { inputResponses, requestState: 'not-a-state' })).rejects.toThrow(/Unknown or expired requestState/);
      await expect(call(alice, { inputResponses, requestState: `tei_${randomBytes(32).toString('base64url')}` })).rejects.toThrow(
        /Unknown or expired requestState/,
      );
      // The state is bound to its tool as well.
      await expect(
        alice.request(
          { method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, inputResponses, requestState: first.requestState } },
          withInputRequired(ResultSchema),
          { allowInputRequired: true },
        ),
      ).rejects.toThrow(refusal);

      const done = await call(alice, { inputResponses, requestState: first.requestState });
      expect(done.resultType ?? 'complete').toBe('complete');
      expect(done.content).toEqual([{ type: 'text', text: 'deleted old.log' }]);
      expect(oracleValidate('dw', done.structuredContent).errors).toEqual([]);
      expect(done.structuredContent).toMatchObject({ status: 'ok', result: { item: 'old.log', deleted: true } });
      // One call, one record, though the client sent the call twice: the round is not an outcome.
      expect(records).toEqual(['confirm_delete']);
    } finally {
      await alice.close();
      await bob.close();
    }
  }, 30_000);

  it('a client in auto mode gets its elicitation handler asked and the final result', async () => {
    const client = new Client({ name: 'mrtr-auto', version: '1' }, { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { confirm: false } }));
    await client.connect(new StreamableHTTPClientTransport(new URL(endpoint.url), { requestInit: { headers: { authorization: 'Bearer t-bob' } } }));
    try {
      const r = await client.callTool({ name: 'confirm_delete', arguments: { item: 'keep.me' } });
      expect(r.content).toEqual([{ type: 'text', text: 'kept keep.me' }]);
      expect(r.structuredContent).toMatchObject({ status: 'ok', result: { item: 'keep.me', deleted: false } });
    } finally {
      await client.close();
    }
  }, 30_000);

  it('a state is refused by a gateway process without the same key; nothing waits in the gateway between rounds', async () => {
    const alice = await connect('t-alice');
    const alice2 = await connect('t-alice', endpoint2.url);
    try {
      const refusal = /Unknown, used or expired requestState/;
      const first = await call(alice, {});
      const [key] = Object.keys(first.inputRequests ?? {});
      const inputResponses = { [key!]: { action: 'accept', content: { confirm: true } } };
      // The same caller, the same tool, the state of a process without governance (its key is its own): unknown there.
      await expect(call(alice2, { inputResponses, requestState: first.requestState })).rejects.toThrow(refusal);

      records2.length = 0;
      const pending = await call(alice2, {});
      expect(pending.resultType).toBe('input_required');
      // Past gw2's 1 s call deadline: no upstream call was left in flight to fail, so nothing is recorded,
      // and the round is still answerable.
      await new Promise((r) => setTimeout(r, 2_000));
      expect(records2).toEqual([]);
      const late = await call(alice2, { inputResponses, requestState: pending.requestState });
      expect(late.content).toEqual([{ type: 'text', text: 'deleted old.log' }]);
      expect(records2).toEqual(['ok']);
      // The first gateway's call is still there for its owner.
      const done = await call(alice, { inputResponses, requestState: first.requestState });
      expect(done.content).toEqual([{ type: 'text', text: 'deleted old.log' }]);
    } finally {
      await alice.close();
      await alice2.close();
    }
  }, 30_000);

  it("a 2025-era upstream's elicitation/create request (server-everything) becomes an input round as well", async () => {
    const old = await Gateway.start({ upstreams: [everythingSpec()], log: silent });
    const oldEndpoint = await serveHttp((session) => old.createServer(session), { port: 0, auth: tokens() });
    const alice = await connect('t-alice', oldEndpoint.url);
    try {
      const ask = (params: Record<string, unknown>): Promise<Answer> =>
        alice.request({ method: 'tools/call', params: { name: 'trigger-elicitation-request', arguments: {}, ...params } }, withInputRequired(ResultSchema), {
          allowInputRequired: true,
        }) as Promise<Answer>;
      const first = await ask({});
      expect(first.resultType).toBe('input_required');
      const [key, request] = Object.entries(first.inputRequests ?? {})[0]!;
      expect(request.method).toBe('elicitation/create');
      const done = await ask({ inputResponses: { [key]: { action: 'accept', content: { confirm: true } } }, requestState: first.requestState });
      expect(oracleValidate('mcec', done.structuredContent).errors).toEqual([]);
      expect(JSON.stringify(done.content)).toContain('accept');
    } finally {
      await alice.close();
      await oldEndpoint.close();
      await old.close();
    }
  }, 30_000);
});
