/**
 * The gateway's tasks in tests: a gateway with governance on a SQLite file served over HTTP with
 * bearer tokens, and its clients: a v2 client pinned to 2026-07-28 with a raw task dispatch on its
 * transport (the v2 client rejects a task answer to tools/call, so task traffic goes raw beside it).
 */
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JsonObject } from '../../core/index.js';
import { openStore } from '../../store/index.js';
import type { Store } from '../../store/types.js';
import { tokenAuthenticator, tokenDigest } from '../serve/auth.js';
import { Gateway } from '../gateway/gateway.js';
import type { GatewayOptions } from '../gateway/options.js';
import { GatewayGovernance } from '../gateway/governor.js';
import { type HttpEndpoint, serveHttp } from '../serve/http.js';
import { type TaskDispatch, tapTaskDispatch } from '../tasks/index.js';
import type { UpstreamSpec } from '../upstream/upstream.js';
import { silent, tempDir } from './harness.js';

/** The tasks extension's id. */
export const TASKS = 'io.modelcontextprotocol/tasks';
/** Params `_meta` that declares the extension (the per-request client capabilities). */
export const declared = { _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS]: {} } } } };

/** A pinned v2 client with a bearer token and the raw dispatch on its transport; `closers` gets its close. */
export async function connectTasks(url: string, token: string, closers: (() => Promise<unknown>)[]): Promise<{ client: Client; dispatch: TaskDispatch }> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const client = new Client({ name: `tasks-${token}`, version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(transport);
  closers.push(() => client.close());
  const dispatch = tapTaskDispatch(transport, {
    envelope: () => ({
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: `tasks-${token}`, version: '1.0.0' },
      'io.modelcontextprotocol/clientCapabilities': {},
    }),
  });
  return { client, dispatch };
}

/** One raw request with a 10 s timeout. */
export const rawCall = (d: TaskDispatch, method: string, params: JsonObject) => d.request(method, params, { timeoutMs: 10_000 });

/** Bearer tokens of the task tests: alice and bob of tenant acme, carol of tenant globex. */
export const taskAuth = tokenAuthenticator({
  tokens: [
    { sha256: tokenDigest('alice-token'), principal: 'user:alice', tenant: 'acme' },
    { sha256: tokenDigest('bob-token'), principal: 'user:bob', tenant: 'acme' },
    { sha256: tokenDigest('carol-token'), principal: 'user:carol', tenant: 'globex' },
  ],
});

/**
 * A gateway with governance on a fresh SQLite file, its task handles in the same store, served over
 * Streamable HTTP with {@link taskAuth}.
 */
export interface TaskRig {
  gw: Gateway;
  governance: GatewayGovernance;
  store: Store;
  endpoint: HttpEndpoint;
  dbPath: string;
}

/**
 * Starts a {@link TaskRig} in front of one upstream (on `given`, a store opened by the caller, or a
 * fresh SQLite file).
 */
export async function taskRig(upstream: UpstreamSpec, extra: Partial<GatewayOptions> = {}, given?: Store): Promise<TaskRig> {
  const dbPath = join(tempDir(), 'audit.db');
  const store = given ?? (await openStore(dbPath));
  const governance = new GatewayGovernance({ store, approvalPollMs: 0 });
  const gw = await Gateway.start({ upstreams: [upstream], governance, taskHandles: store.taskHandles, log: silent, ...extra });
  const endpoint = await serveHttp((session) => gw.createServer(session), { port: 0, auth: taskAuth });
  return { gw, governance, store, endpoint, dbPath };
}

/** Stops a {@link TaskRig}: its endpoint, gateway and store. */
export async function closeTaskRig(r: TaskRig): Promise<void> {
  await r.endpoint.close();
  await r.gw.close();
  await r.store.close();
}

/**
 * A 2025-11-25 session (a v1 client: initialize, `Mcp-Session-Id`) with a bearer token, as a raw
 * task dispatch on its transport (tasks declared per request in `_meta`); `closers` gets its close.
 */
export async function v1TaskSession(url: string, token: string, closers: (() => Promise<unknown>)[]): Promise<TaskDispatch> {
  const transport = new V1HttpTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const v1 = new V1Client({ name: 'tasks-v1', version: '1.0.0' });
  await v1.connect(transport);
  closers.push(() => v1.close());
  return tapTaskDispatch(transport as never, { envelope: () => ({}) });
}
