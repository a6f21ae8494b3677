// Approve from the client for modern-era (2026-07-28) clients: a paused call whose policy lets its
// verified user approve it is answered with an input round (the confirmation as an embedded
// elicitation, and a stateless requestState); the retry with the answer decides it on any replica
// sharing the store and the operator key. Two real gateways (two "replicas", each its own store
// handle on one SQLite file), real SDK v2 clients pinned to 2026-07-28 over Streamable HTTP with
// two bearer principals, the real counting upstream process; the same on a real PostgreSQL store.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ResultSchema } from '@modelcontextprotocol/core';
import { Client, StreamableHTTPClientTransport, withInputRequired } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { compilePolicy } from '../../governance/policy.js';
import { openStore } from '../../store/index.js';
import { openPostgresStore } from '../../store/postgres/index.js';
import { describePg, dropSchema, freshSchema } from '../../store/test-support/pg.js';
import { operatorKeyFromSecret } from '../../store/operator-key.js';
import type { Store } from '../../store/types.js';
import { tokenAuthenticator, tokenDigest } from '../serve/auth.js';
import { Gateway } from '../gateway/gateway.js';
import { GatewayGovernance } from '../gateway/governor.js';
import { serveHttp, type HttpEndpoint } from '../serve/http.js';
import { repoRoot, silent, tempDir } from '../test-support/harness.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');

interface Answer {
  resultType?: string;
  inputRequests?: Record<string, { method: string; params?: Record<string, unknown> }>;
  requestState?: string;
  content?: unknown;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

interface Replica {
  gw: Gateway;
  endpoint: HttpEndpoint;
  store: Store;
}

let count: string;
/** A new handle on the suite's one store: each gateway ("replica") has its own. */
let openReplicaStore: () => Promise<Store>;
const replicas: Replica[] = [];
const ran = (id: string): number =>
  existsSync(count)
    ? readFileSync(count, 'utf8')
        .split('\n')
        .filter((l) => l.includes(`"id":"${id}"`)).length
    : 0;

async function replica(confirmWindowMs?: number): Promise<Replica> {
  const store = await openReplicaStore();
  const governance = new GatewayGovernance({
    store,
    approvalPollMs: 0,
    // Every replica has the same operator key (docs/deploy.md): it signs approvals and confirmation states.
    operatorKey: operatorKeyFromSecret(Buffer.alloc(32, 9)),
    ...(confirmWindowMs !== undefined && { confirmWindowMs }),
    policy: compilePolicy({
      version: 1,
      rules: [
        { name: 'own-deletes', match: { tool: 'delete_item' }, effect: 'require-approval', selfApproval: true },
        { name: 'purges', match: { tool: 'purge_all' }, effect: 'require-approval' },
      ],
    }),
  });
  const gw = await Gateway.start({
    upstreams: [{ name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: count } }],
    dialect: 'contextos',
    governance,
    log: silent,
  });
  const auth = tokenAuthenticator({
    tokens: [
      { sha256: tokenDigest('t-alice'), principal: 'user:alice', tenant: 'acme' },
      { sha256: tokenDigest('t-bob'), principal: 'user:bob', tenant: 'acme' },
    ],
  });
  const endpoint = await serveHttp((session) => gw.createServer(session), { port: 0, auth });
  const r = { gw, endpoint, store };
  replicas.push(r);
  return r;
}

async function connect(token: string, at: Replica, capabilities: Record<string, unknown> = { elicitation: {} }): Promise<Client> {
  const client = new Client(
    { name: `confirm-${token}`, version: '1' },
    { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(at.endpoint.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

function call(client: Client, args: Record<string, unknown>, retry: Record<string, unknown> = {}, tool = 'delete_item'): Promise<Answer> {
  return client.request({ method: 'tools/call', params: { name: tool, arguments: args, ...retry } }, withInputRequired(ResultSchema), {
    allowInputRequired: true,
  }) as Promise<Answer>;
}

const status = (a: Answer): string => {
  expect(oracleValidate('contextos-result', a.structuredContent).errors).toEqual([]);
  return a.structuredContent?.status as string;
};
const reply = (action: 'accept' | 'decline' | 'cancel', approve = true) => ({
  confirm: action === 'accept' ? { action, content: { approve } } : { action },
});
const refusal = /Unknown or used requestState/;

function suite(label: string, storeOpener: (dir: string) => { open: () => Promise<Store>; cleanup?: () => Promise<void> }): void {
  let a: Replica;
  let b: Replica;
  let cleanup: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const dir = tempDir();
    count = join(dir, 'count.jsonl');
    const opener = storeOpener(dir);
    openReplicaStore = opener.open;
    cleanup = opener.cleanup;
    a = await replica();
    b = await replica();
  }, 60_000);
  afterAll(async () => {
    for (const r of replicas.splice(0)) {
      await r.endpoint.close();
      await r.gw.close();
      await r.store.close();
    }
    await cleanup?.();
  });

  describe(`approve from a modern-era client (input round), ${label}`, () => {
    it('the confirmation is an input round; the accepting answer, at another replica, runs the call once; a replay is refused', async () => {
      const alice = await connect('t-alice', a);
      const aliceAtB = await connect('t-alice', b);
      try {
        const first = await call(alice, { id: 'm1' });
        expect(first.resultType).toBe('input_required');
        expect(first.requestState).toMatch(/^tec_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
        const ask = first.inputRequests?.confirm;
        expect(ask?.method).toBe('elicitation/create');
        expect(ask?.params?.message).toContain('delete_item');
        expect(ask?.params?.message).toContain('"m1"');
        expect(ran('m1')).toBe(0);
        const approvalId = /Approval (apr_[0-9a-f-]+)/.exec(String(ask?.params?.message))?.[1];
        expect((await a.store.getApproval(approvalId!))?.state).toBe('pending');

        // The answer reaches the other replica: it holds nothing of the first request but the store.
        const done = await call(aliceAtB, { id: 'm1' }, { inputResponses: reply('accept'), requestState: first.requestState });
        expect(done.resultType ?? 'complete').toBe('complete');
        expect(status(done)).toBe('completed');
        expect(done.content).toEqual([{ type: 'text', text: 'deleted m1' }]);
        expect(ran('m1')).toBe(1);
        expect(await a.store.getApproval(approvalId!)).toMatchObject({ state: 'completed', decidedBy: 'user:alice', decisionSignature: expect.any(String) });

        // The same answer again, at either replica: refused, and the tool does not run again.
        await expect(call(aliceAtB, { id: 'm1' }, { inputResponses: reply('accept'), requestState: first.requestState })).rejects.toThrow(refusal);
        await expect(call(alice, { id: 'm1' }, { inputResponses: reply('accept'), requestState: first.requestState })).rejects.toThrow(refusal);
        expect(ran('m1')).toBe(1);
      } finally {
        await alice.close();
        await aliceAtB.close();
      }
    }, 60_000);

    it("another caller's, a modified, a forged state, other arguments or another tool are refused alike; the owner's answer still works", async () => {
      const alice = await connect('t-alice', a);
      const bob = await connect('t-bob', b);
      try {
        const first = await call(alice, { id: 'm2' });
        const state = first.requestState!;
        expect(first.resultType).toBe('input_required');
        const accept = reply('accept');
        await expect(call(bob, { id: 'm2' }, { inputResponses: accept, requestState: state })).rejects.toThrow(refusal);
        // One character of the facts changed (the MAC no longer matches), and a state never issued.
        const dot = state.indexOf('.');
        const flipped = `${state.slice(0, dot - 1)}${state[dot - 1] === 'A' ? 'B' : 'A'}${state.slice(dot)}`;
        await expect(call(alice, { id: 'm2' }, { inputResponses: accept, requestState: flipped })).rejects.toThrow(refusal);
        await expect(call(alice, { id: 'm2' }, { inputResponses: accept, requestState: `tec_${'A'.repeat(40)}.${'B'.repeat(43)}` })).rejects.toThrow(refusal);
        await expect(call(alice, { id: 'm2' }, { inputResponses: accept, requestState: 'tec_nonsense' })).rejects.toThrow(refusal);
        // The same state for other arguments, or for another tool.
        await expect(call(alice, { id: 'other' }, { inputResponses: accept, requestState: state })).rejects.toThrow(refusal);
        expect(ran('other')).toBe(0);
        await expect(call(alice, {}, { inputResponses: accept, requestState: state }, 'purge_all')).rejects.toThrow(refusal);
        expect(ran('m2')).toBe(0);

        const done = await call(alice, { id: 'm2' }, { inputResponses: accept, requestState: state });
        expect(status(done)).toBe('completed');
        expect(ran('m2')).toBe(1);
      } finally {
        await alice.close();
        await bob.close();
      }
    }, 60_000);

    it("decline rejects, cancel and an answer of 'approve: false' give the policy's envelopes; nothing runs", async () => {
      const alice = await connect('t-alice', b);
      try {
        const d = await call(alice, { id: 'm3' });
        const declined = await call(alice, { id: 'm3' }, { inputResponses: reply('decline'), requestState: d.requestState });
        expect(status(declined)).toBe('rejected');
        const no = await call(alice, { id: 'm3b' });
        expect(status(await call(alice, { id: 'm3b' }, { inputResponses: reply('accept', false), requestState: no.requestState }))).toBe('rejected');

        const c = await call(alice, { id: 'm4' });
        const cancelled = await call(alice, { id: 'm4' }, { inputResponses: reply('cancel'), requestState: c.requestState });
        expect(status(cancelled)).toBe('paused');
        const approvalId = (cancelled.structuredContent?.metadata as Record<string, unknown> | undefined)?.approvalId as string;
        // Cancel leaves the request with the other approvers; its state is used up all the same.
        expect((await b.store.getApproval(approvalId))?.state).toBe('pending');
        await expect(call(alice, { id: 'm4' }, { inputResponses: reply('accept'), requestState: c.requestState })).rejects.toThrow(refusal);
        expect((await b.store.getApproval(approvalId))?.state).toBe('pending');
        // A retry without an answer is a cancel too.
        const n = await call(alice, { id: 'm5' });
        expect(status(await call(alice, { id: 'm5' }, { requestState: n.requestState }))).toBe('paused');
        for (const id of ['m3', 'm3b', 'm4', 'm5']) expect(ran(id)).toBe(0);
      } finally {
        await alice.close();
      }
    }, 60_000);

    it('two answers with one state at once, at two replicas: one runs the call, the other is refused', async () => {
      const alice = await connect('t-alice', a);
      const aliceAtB = await connect('t-alice', b);
      try {
        const first = await call(alice, { id: 'm9' });
        const retry = { inputResponses: reply('accept'), requestState: first.requestState };
        const both = await Promise.allSettled([call(alice, { id: 'm9' }, retry), call(aliceAtB, { id: 'm9' }, retry)]);
        const done = both.filter((r): r is PromiseFulfilledResult<Answer> => r.status === 'fulfilled');
        expect(done).toHaveLength(1);
        expect(status(done[0]!.value)).toBe('completed');
        expect(String((both.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason)).toMatch(refusal);
        expect(ran('m9')).toBe(1);
      } finally {
        await alice.close();
        await aliceAtB.close();
      }
    }, 60_000);

    it('an answer after the confirmation window gives the paused envelope and runs nothing', async () => {
      const quick = await replica(300);
      const alice = await connect('t-alice', quick);
      try {
        const first = await call(alice, { id: 'm6' });
        expect(first.resultType).toBe('input_required');
        await new Promise((r) => setTimeout(r, 600));
        const late = await call(alice, { id: 'm6' }, { inputResponses: reply('accept'), requestState: first.requestState });
        expect(status(late)).toBe('paused');
        expect(ran('m6')).toBe(0);
      } finally {
        await alice.close();
      }
    }, 60_000);

    it('a client without elicitation gets paused; a policy without selfApproval never asks; an SDK client in auto mode is asked by its handler', async () => {
      const plain = await connect('t-alice', a, {});
      try {
        expect(status(await call(plain, { id: 'm7' }))).toBe('paused');
        const asking = await connect('t-alice', a);
        const purge = await call(asking, {}, {}, 'purge_all');
        expect(purge.resultType ?? 'complete').toBe('complete');
        expect(status(purge)).toBe('paused');
        await asking.close();
      } finally {
        await plain.close();
      }
      const auto = new Client(
        { name: 'confirm-auto', version: '1' },
        { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      const asked: string[] = [];
      auto.setRequestHandler('elicitation/create', async (req) => {
        asked.push(String(req.params.message));
        return { action: 'accept', content: { approve: true } };
      });
      await auto.connect(new StreamableHTTPClientTransport(new URL(b.endpoint.url), { requestInit: { headers: { authorization: 'Bearer t-alice' } } }));
      try {
        const r = await auto.callTool({ name: 'delete_item', arguments: { id: 'm8' } });
        expect(asked).toHaveLength(1);
        expect((r.structuredContent as Record<string, unknown>).status).toBe('completed');
        expect(ran('m8')).toBe(1);
        expect(ran('m7')).toBe(0);
      } finally {
        await auto.close();
      }
    }, 60_000);
  });
}

suite('two gateways on one SQLite file', (dir) => ({ open: () => openStore(join(dir, 'audit.db')) }));
describePg('on PostgreSQL', (url) => {
  const schema = freshSchema();
  suite('two gateways on one PostgreSQL schema', () => ({
    open: () => openPostgresStore({ connectionString: url, schema }),
    cleanup: () => dropSchema(url, schema),
  }));
});

describe('a confirmation state at a gateway without governance', () => {
  it('is refused, and the tool does not run', async () => {
    const dir = tempDir();
    count = join(dir, 'count.jsonl');
    const gw = await Gateway.start({ upstreams: [{ name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: count } }], log: silent });
    const endpoint = await serveHttp((session) => gw.createServer(session), { port: 0 });
    const client = new Client({ name: 'ungoverned', version: '1' }, { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(endpoint.url)));
    try {
      const state = `tec_${'A'.repeat(40)}.${'B'.repeat(43)}`;
      await expect(call(client, { id: 'u1' }, { inputResponses: reply('accept'), requestState: state })).rejects.toThrow(refusal);
      expect(ran('u1')).toBe(0);
    } finally {
      await client.close();
      await endpoint.close();
      await gw.close();
    }
  }, 60_000);
});
