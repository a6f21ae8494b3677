// A modern upstream's own input rounds through the gateway: SDK v2 clients pinned to 2026-07-28 over
// Streamable HTTP, two bearer principals, two gateways ("replicas", each its own handle on one real
// SQLite file, and again on one PostgreSQL schema; one operator key) in front of one upstream
// service, the conformance fixture server (a v2 SDK server speaking 2026-07-28 over Streamable
// HTTP) that asks for elicitation, sampling and roots in one round and in several. The upstream's keys and contents reach the client unchanged, its
// state comes back to it unwrapped (it verifies its own HMAC), any replica takes a retry (nothing
// waits between rounds), another caller's, a forged, a modified, a used state and one presented for
// another tool or other arguments are refused, and the governance sees one logical call.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ResultSchema } from '@modelcontextprotocol/core';
import { Client, StreamableHTTPClientTransport, withInputRequired } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { openStore } from '../../store/index.js';
import { openPostgresStore } from '../../store/postgres/index.js';
import { describePg, dropSchema, freshSchema } from '../../store/test-support/pg.js';
import { operatorKeyFromSecret } from '../../store/operator-key.js';
import type { Store } from '../../store/types.js';
import { tokenAuthenticator, tokenDigest } from '../serve/auth.js';
import { Gateway } from '../gateway/gateway.js';
import { GatewayGovernance } from '../gateway/governor.js';
import { serveHttp, type HttpEndpoint } from '../serve/http.js';
import { RelayStates } from './relay.js';
import { repoRoot, silent, tempDir } from '../test-support/harness.js';

const UPSTREAM = join(repoRoot, 'test/fixtures/conformance-server.mjs');
/** One upstream service behind both replicas (its own state key is per process, as a real one's would be per deployment). */
let upstreamUrl: string;
let upstream: ChildProcess;

interface Answer {
  resultType?: string;
  inputRequests?: Record<string, { method: string; params?: Record<string, unknown> }>;
  requestState?: string;
  content?: { type: string; text?: string }[];
  structuredContent?: Record<string, unknown>;
  messages?: unknown[];
}

interface Replica {
  gw: Gateway;
  governance: GatewayGovernance;
  endpoint: HttpEndpoint;
  store: Store;
}

const replicas: Replica[] = [];
const clients: Client[] = [];
/** A new handle on the suite's one store: each gateway ("replica") has its own. */
let openReplicaStore: () => Promise<Store>;
let a: Replica;
let b: Replica;

async function replica(): Promise<Replica> {
  const store = await openReplicaStore();
  const governance = new GatewayGovernance({ store, approvalPollMs: 0, operatorKey: operatorKeyFromSecret(Buffer.alloc(32, 7)) });
  const gw = await Gateway.start({
    upstreams: [{ name: 'upstream', url: upstreamUrl }],
    dialect: 'dw',
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
  const r = { gw, governance, endpoint, store };
  replicas.push(r);
  return r;
}

async function connect(token: string, at: Replica, capabilities: Record<string, unknown> = { elicitation: {}, sampling: {}, roots: {} }): Promise<Client> {
  const client = new Client(
    { name: `relay-${token}`, version: '1' },
    { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(at.endpoint.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  clients.push(client);
  return client;
}

function send(client: Client, method: string, params: Record<string, unknown>): Promise<Answer> {
  return client.request({ method, params } as never, withInputRequired(ResultSchema), { allowInputRequired: true }) as Promise<Answer>;
}
const call = (client: Client, name: string, retry: Record<string, unknown> = {}, args: Record<string, unknown> = {}): Promise<Answer> =>
  send(client, 'tools/call', { name, arguments: args, ...retry });

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });
const sampled = (text: string) => ({ role: 'assistant', content: { type: 'text', text }, model: 'test-model', stopReason: 'endTurn' });
const roots = { roots: [{ uri: 'file:///work', name: 'work' }] };
const refusal = /Unknown, used or expired requestState/;

/** The audit records of one tool, oldest first, as both replicas' store holds them. */
async function records(tool: string): Promise<{ status: string; toolCallId: string }[]> {
  await Promise.all(replicas.map((r) => r.governance.pipeline.flush()));
  const { records: list } = await a.store.listAudit({ tool }, { limit: 100 });
  return list.map((r) => ({ status: r.status, toolCallId: r.toolCallId })).reverse();
}

beforeAll(async () => {
  upstream = spawn(process.execPath, [UPSTREAM, '--http', '0', '--modern'], { stdio: ['ignore', 'pipe', 'inherit'] });
  upstreamUrl = await new Promise<string>((resolve, reject) => {
    let out = '';
    upstream.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const url = /"url":"([^"]+)"/.exec(out)?.[1];
      if (url) resolve(url);
    });
    upstream.once('exit', (code) => reject(new Error(`the upstream exited (${code}): ${out}`)));
  });
}, 60_000);
afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  upstream?.kill();
});

function suite(label: string, storeOpener: () => { open: () => Promise<Store>; cleanup?: () => Promise<void> }): void {
  describe(`an upstream's own input rounds, relayed as they are, ${label}`, () => {
    let cleanup: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      const opener = storeOpener();
      openReplicaStore = opener.open;
      cleanup = opener.cleanup;
      a = await replica();
      b = await replica();
    }, 60_000);
    afterAll(async () => {
      await Promise.allSettled(clients.splice(0).map((c) => c.close()));
      for (const r of replicas.splice(0)) {
        await r.endpoint.close();
        await r.gw.close();
        await r.store.close();
      }
      await cleanup?.();
    });

    it('elicitation, sampling and roots in one round: the keys and requests unchanged, the retry (at the other replica) finishes one logical call', async () => {
      const alice = await connect('t-alice', a);
      const aliceAtB = await connect('t-alice', b);
      const first = await call(alice, 'test_input_required_result_multiple_inputs');
      expect(first.resultType).toBe('input_required');
      expect(Object.keys(first.inputRequests ?? {}).sort()).toEqual(['client_roots', 'greeting', 'user_name']);
      expect(first.inputRequests?.user_name).toMatchObject({ method: 'elicitation/create', params: { message: 'What is your name?' } });
      expect(first.inputRequests?.greeting).toMatchObject({
        method: 'sampling/createMessage',
        params: { messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 },
      });
      expect(first.inputRequests?.client_roots?.method).toBe('roots/list');
      // The upstream's own (signed) state travels inside the gateway's, bound to the caller.
      expect(first.requestState).toMatch(/^ter_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
      // A round is not an outcome: nothing but the open started record so far (the store reads an open one as interrupted).
      expect(await records('test_input_required_result_multiple_inputs')).toEqual([{ status: 'interrupted', toolCallId: expect.any(String) }]);

      const inputResponses = { user_name: accept({ name: 'Ada' }), greeting: sampled('Hello!'), client_roots: roots };
      // Replica b has never seen this call: the state and the store are all it needs.
      const done = await call(aliceAtB, 'test_input_required_result_multiple_inputs', { inputResponses, requestState: first.requestState });
      expect(done.resultType ?? 'complete').toBe('complete');
      expect(done.content).toEqual([{ type: 'text', text: 'All inputs received: name=Ada, greeting=Hello!, roots=1' }]);
      expect(oracleValidate('dw', done.structuredContent).errors).toEqual([]);
      expect(done.structuredContent).toMatchObject({ status: 'ok' });
      // One record for the one logical call: its started record completed by the final round.
      const log = await records('test_input_required_result_multiple_inputs');
      expect(log).toEqual([{ status: 'ok', toolCallId: log[0]!.toolCallId }]);
      // A used state answers once.
      await expect(call(aliceAtB, 'test_input_required_result_multiple_inputs', { inputResponses, requestState: first.requestState })).rejects.toThrow(refusal);
    }, 60_000);

    it('several rounds: each carries the upstream’s evolving state and keys; the final one is enveloped once', async () => {
      const alice = await connect('t-alice', a);
      const aliceAtB = await connect('t-alice', b);
      const one = await call(alice, 'test_input_required_result_multi_round');
      expect(Object.keys(one.inputRequests ?? {})).toEqual(['step1']);
      const two = await call(aliceAtB, 'test_input_required_result_multi_round', {
        inputResponses: { step1: accept({ name: 'Ada' }) },
        requestState: one.requestState,
      });
      expect(two.resultType).toBe('input_required');
      expect(Object.keys(two.inputRequests ?? {})).toEqual(['step2']);
      expect(two.requestState).not.toBe(one.requestState);
      const done = await call(alice, 'test_input_required_result_multi_round', {
        inputResponses: { step2: accept({ color: 'teal' }) },
        requestState: two.requestState,
      });
      expect(done.content).toEqual([{ type: 'text', text: 'Multi-round complete: name=Ada, color=teal' }]);
      expect(oracleValidate('dw', done.structuredContent).errors).toEqual([]);
      expect((await records('test_input_required_result_multi_round')).map((r) => r.status)).toEqual(['ok']);
    }, 60_000);

    it("another caller's, a forged, a modified state, and one for another tool or other arguments are refused; the owner's still works", async () => {
      const alice = await connect('t-alice', a);
      const bob = await connect('t-bob', a);
      const first = await call(alice, 'test_input_required_result_request_state');
      const state = first.requestState!;
      const inputResponses = { confirm: accept({ ok: true }) };
      await expect(call(bob, 'test_input_required_result_request_state', { inputResponses, requestState: state })).rejects.toThrow(refusal);
      const [payload, tag] = state.slice(4).split('.') as [string, string];
      const forged = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown[];
      forged[1] = 'tools/call';
      forged[6] = 'not-the-upstreams-state';
      const modified = `ter_${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${tag}`;
      await expect(call(alice, 'test_input_required_result_request_state', { inputResponses, requestState: modified })).rejects.toThrow(refusal);
      await expect(call(alice, 'test_input_required_result_request_state', { inputResponses, requestState: `${state}-TAMPERED` })).rejects.toThrow(refusal);
      await expect(call(alice, 'test_input_required_result_elicitation', { inputResponses, requestState: state })).rejects.toThrow(refusal);
      await expect(call(alice, 'test_input_required_result_request_state', { inputResponses, requestState: state }, { extra: 1 })).rejects.toThrow(refusal);
      // None of these used the state up: its owner finishes the call, and the upstream read its own state.
      const done = await call(alice, 'test_input_required_result_request_state', { inputResponses, requestState: state });
      expect(done.content).toEqual([{ type: 'text', text: 'state-ok: confirmed=true' }]);
    }, 60_000);

    it("the upstream is asked on the client's declared capabilities, not the gateway's", async () => {
      const samplingOnly = await connect('t-alice', a, { sampling: {} });
      const first = await call(samplingOnly, 'test_input_required_result_capabilities');
      expect(Object.keys(first.inputRequests ?? {})).toEqual(['sample_input']);
    }, 60_000);

    it('prompts/get relays its round too; its state is bound to the prompt and the caller', async () => {
      const alice = await connect('t-alice', a);
      const bob = await connect('t-bob', b);
      const first = await send(alice, 'prompts/get', { name: 'test_input_required_result_prompt' });
      expect(Object.keys(first.inputRequests ?? {})).toEqual(['user_context']);
      const retry = {
        name: 'test_input_required_result_prompt',
        inputResponses: { user_context: accept({ context: 'ctx' }) },
        requestState: first.requestState,
      };
      await expect(send(bob, 'prompts/get', retry)).rejects.toThrow(refusal);
      const done = await send(alice, 'prompts/get', retry);
      expect(done.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Use this context: ctx' } }]);
    }, 60_000);

    it('a keyed call that goes into rounds: a repeat of its key is in flight until the final round, then replays the final outcome', async () => {
      const alice = await connect('t-alice', a);
      const keyed = { _meta: { 'tool-envelope/idempotency-key': 'relay-k1' } };
      const first = await call(alice, 'test_input_required_result_elicitation', keyed);
      expect(Object.keys(first.inputRequests ?? {})).toEqual(['user_name']);
      const again = await call(alice, 'test_input_required_result_elicitation', keyed);
      expect(again.structuredContent).toMatchObject({ status: 'error', error: { code: 'idempotency-key-in-flight' } });
      const done = await call(alice, 'test_input_required_result_elicitation', {
        ...keyed,
        inputResponses: { user_name: accept({ name: 'Ada' }) },
        requestState: first.requestState,
      });
      expect(done.content).toEqual([{ type: 'text', text: 'Hello, Ada!' }]);
      const replayed = await call(alice, 'test_input_required_result_elicitation', keyed);
      expect(oracleValidate('dw', replayed.structuredContent).errors).toEqual([]);
      expect(replayed.structuredContent).toMatchObject({ status: 'ok', result: { text: 'Hello, Ada!' } });
    }, 60_000);
  });
}

suite('two gateways on one SQLite file', () => {
  const file = join(tempDir(), 'audit.db');
  return { open: () => openStore(file) };
});

describePg('on PostgreSQL', (url) => {
  const schema = freshSchema();
  suite('two gateways on one PostgreSQL schema', () => ({
    open: () => openPostgresStore({ connectionString: url, schema }),
    cleanup: () => dropSchema(url, schema),
  }));
});

describe('relayed states on their own', () => {
  it("a state carries the upstream's state back; it expires with its window, and is another caller's or another key's to no one", async () => {
    let now = 0;
    const states = new RelayStates(undefined, 1_000, () => now);
    const bind = { method: 'tools/call', target: 'tool', args: { a: 1 } };
    const state = await states.wrap('alice', bind, 'the-upstreams-own', undefined);
    now = 1_000;
    expect(await states.unwrap(state, 'alice', bind)).toEqual({ upstreamState: 'the-upstreams-own', call: undefined });
    now = 1_001;
    await expect(states.unwrap(state, 'alice', bind)).rejects.toThrow(refusal);
    now = 500;
    await expect(states.unwrap(state, 'bob', bind)).rejects.toThrow(refusal);
    await expect(states.unwrap(state, 'alice', { ...bind, args: { a: 2 } })).rejects.toThrow(refusal);
    await expect(states.unwrap(state, 'alice', { ...bind, method: 'prompts/get' })).rejects.toThrow(refusal);
    // Without governance each process has its own key.
    await expect(new RelayStates(undefined, 1_000, () => now).unwrap(state, 'alice', bind)).rejects.toThrow(refusal);
  });
});
