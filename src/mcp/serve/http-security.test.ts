// The HTTP gateway as an attacker and an operator see it: real SDK clients over Streamable HTTP, a
// real upstream process (test-support/counting-server.mjs), a real SQLite store, and for OAuth a
// JWKS served by the test on 127.0.0.1 with tokens signed by `jose`.
import { Agent, createServer, request as httpRequest, type Server as NodeHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { osIdentity } from '../../governance/identity.js';
import { openStore } from '../../store/index.js';
import { operatorKeyFromSecret } from '../../store/operator-key.js';
import type { Store } from '../../store/types.js';
import { oauthAuthenticator, tokenAuthenticator, tokenDigest, type Authenticator } from './auth.js';
import { Gateway } from '../gateway/gateway.js';
import { META_KEYS } from '../wire/meta-keys.js';
import { GatewayGovernance } from '../gateway/governor.js';
import { serveHttp, type HttpEndpoint, type ServeHttpOptions } from './http.js';
import { repoRoot, silent, tempDir } from '../test-support/harness.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

interface Rig {
  gw: Gateway;
  governance: GatewayGovernance;
  store: Store;
  endpoint: HttpEndpoint;
  close(): Promise<void>;
}

async function rig(http: Omit<ServeHttpOptions, 'port'> = {}, gateway: { modes?: Record<string, 'delegated'> } = {}): Promise<Rig> {
  const dir = tempDir();
  const store = await openStore(join(dir, 'audit.db'));
  const governance = new GatewayGovernance({ store, approvalPollMs: 0, operatorKey: operatorKeyFromSecret(Buffer.alloc(32, 3)) });
  const gw = await Gateway.start({
    upstreams: [{ name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: join(dir, 'count.jsonl') } }],
    governance,
    log: silent,
    ...gateway,
  });
  const endpoint = await serveHttp((session) => gw.createServer(session), { port: 0, ...http });
  return {
    gw,
    governance,
    store,
    endpoint,
    async close() {
      await endpoint.close();
      await gw.close();
      await store.close();
    },
  };
}

async function connect(url: string, token?: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {});
  const client = new Client({ name: 'sec-test', version: '1' });
  await client.connect(transport);
  return client;
}

const envelope = (r: unknown): Record<string, unknown> => {
  const sc = (r as { structuredContent: Record<string, unknown> }).structuredContent;
  expect(oracleValidate('mcec', sc).errors).toEqual([]);
  return sc;
};

describe('HTTP gateway: Origin, Host, sessions', () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig({ maxSessions: 3, sessionIdleMs: 300 });
  });
  afterAll(() => r.close());

  it('refuses a foreign Origin before anything runs; loopback origins and requests without Origin pass', async () => {
    const evil = await fetch(r.endpoint.url, { method: 'POST', headers: { ...MCP_HEADERS, origin: 'http://evil.example' }, body: JSON.stringify(INIT) });
    expect(evil.status).toBe(403);
    expect(evil.headers.get('mcp-session-id')).toBeNull();
    expect(r.endpoint.sessions).toBe(0);
    expect(r.gw.sessionCount).toBe(0);
    const local = await fetch(r.endpoint.url, {
      method: 'POST',
      headers: { ...MCP_HEADERS, origin: `http://localhost:${r.endpoint.port}` },
      body: JSON.stringify(INIT),
    });
    expect(local.status).toBe(200);
    await local.body?.cancel();
    const plain = await connect(r.endpoint.url);
    expect(envelope(await plain.callTool({ name: 'read_notes', arguments: {} }))).toMatchObject({ ok: true });
    await plain.close();
    // Unauthenticated loopback sessions act for the operator: the OS user running the gateway.
    await r.governance.flush();
    const { records } = await r.store.listAudit({ tool: 'read_notes' });
    expect(records[0]!.principalChain).toEqual([osIdentity().principal, { kind: 'agent', id: 'sec-test' }]);
  });

  it('refused initialize requests (bad Host, bad Accept, evil Origin) leave no server behind: memory flat over 2,000 tries', async () => {
    setFlagsFromString('--expose_gc');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const gc = runInNewContext('gc') as () => void;
    const body = JSON.stringify(INIT);
    const attempt = (i: number): Promise<number> => {
      const kind = i % 3;
      const headers =
        kind === 0
          ? { ...MCP_HEADERS, host: 'evil.example' }
          : kind === 1
            ? { 'content-type': 'application/json', accept: 'text/html' }
            : { ...MCP_HEADERS, origin: 'http://evil.example' };
      // node:http rather than fetch, which does not let a caller set Host.
      return new Promise((ok, fail) => {
        const req = httpRequest(r.endpoint.url, { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) }, agent }, (res) => {
          res.resume();
          res.once('end', () => ok(res.statusCode ?? 0));
        });
        req.once('error', fail);
        req.end(body);
      });
    };
    for (let i = 0; i < 60; i++) await attempt(i);
    gc();
    const before = process.memoryUsage().heapUsed;
    const statuses = new Set<number>();
    for (let i = 0; i < 2_000; i++) statuses.add(await attempt(i));
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    expect([...statuses].every((s) => s >= 400)).toBe(true);
    expect(r.gw.sessionCount).toBe(0);
    // A leaked server per try was ~26 KiB (52 MB over 2,000); allow noise far below that.
    expect(grown).toBeLessThan(8 * 1024 * 1024);
    agent.destroy();
  }, 120_000);

  it('caps the sessions (503 beyond the cap) and closes idle ones', async () => {
    const clients = [await connect(r.endpoint.url), await connect(r.endpoint.url), await connect(r.endpoint.url)];
    const over = await fetch(r.endpoint.url, { method: 'POST', headers: MCP_HEADERS, body: JSON.stringify(INIT) });
    expect(over.status).toBe(503);
    expect(r.gw.sessionCount).toBe(3);
    await expect.poll(() => r.endpoint.sessions, { timeout: 5_000, interval: 50 }).toBe(0);
    expect(r.gw.sessionCount).toBe(0);
    for (const c of clients) await c.close().catch(() => {});
    // A fresh client gets a session again.
    const again = await connect(r.endpoint.url);
    expect(envelope(await again.callTool({ name: 'read_notes', arguments: {} }))).toMatchObject({ ok: true });
    await again.close();
  });
});

describe('HTTP gateway: bearer tokens', () => {
  let r: Rig;
  const auth: Authenticator = tokenAuthenticator({
    tokens: [
      { sha256: tokenDigest('alice-token'), principal: 'user:alice', tenant: 'acme', roles: ['approver'] },
      { sha256: tokenDigest('bob-token'), principal: 'user:bob', tenant: 'acme' },
    ],
  });
  beforeAll(async () => {
    r = await rig({ auth }, { modes: { write_note: 'delegated' } });
  });
  afterAll(() => r.close());

  it('no token, an unknown token, a malformed header: 401 with WWW-Authenticate, no session', async () => {
    for (const authorization of [undefined, 'Bearer nope', 'Basic YWxpY2U6eA==']) {
      const res = await fetch(r.endpoint.url, {
        method: 'POST',
        headers: { ...MCP_HEADERS, ...(authorization && { authorization }) },
        body: JSON.stringify(INIT),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="tool-envelope"/);
      if (authorization === 'Bearer nope') expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
      await res.arrayBuffer();
    }
    expect(r.gw.sessionCount).toBe(0);
  });

  it("the call acts for the token's principal; a _meta chain only adds agents after it, never a user of its own", async () => {
    const alice = await connect(r.endpoint.url, 'alice-token');
    await alice.callTool({ name: 'read_notes', arguments: {}, _meta: { [META_KEYS.principalChain]: [{ kind: 'agent', id: 'planner' }] } });
    // The forged chain of the issue: a user the caller names itself, in front of (or instead of) the verified one.
    await expect(
      alice.callTool({
        name: 'read_notes',
        arguments: {},
        _meta: {
          [META_KEYS.principalChain]: [
            { kind: 'user', id: 'root' },
            { kind: 'agent', id: 'x' },
          ],
        },
      }),
    ).rejects.toMatchObject({ code: -32602 });
    // delegated: a self-declared user with made-up evidence does not pass; the token's own user with evidence does.
    const delegated = envelope(await alice.callTool({ name: 'write_note', arguments: { text: 'hi' }, _meta: { [META_KEYS.evidenceRefs]: ['ticket-9'] } }));
    expect(delegated).toMatchObject({ ok: true });
    await alice.close();

    const bob = await connect(r.endpoint.url, 'bob-token');
    const noEvidence = envelope(await bob.callTool({ name: 'write_note', arguments: { text: 'x' } }));
    expect(noEvidence).toMatchObject({ ok: false, error: { category: 'elevation' } });
    await bob.close();

    await r.gw.close().catch(() => {});
    const { records } = await r.store.listAudit({ tool: 'read_notes' });
    expect(records).toHaveLength(1);
    expect(records[0]!.principalChain).toEqual([
      { kind: 'user', id: 'alice', tenant_id: 'acme' },
      { kind: 'agent', id: 'planner', tenant_id: 'acme' },
    ]);
    expect((records[0]!.policyDecision as unknown as { verifiedPrincipals: number }).verifiedPrincipals).toBe(1);
  });
});

describe('HTTP gateway: bearer token sessions belong to their identity', () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig({
      auth: tokenAuthenticator({
        tokens: [
          { sha256: tokenDigest('t-a'), principal: 'user:a' },
          { sha256: tokenDigest('t-b'), principal: 'user:b' },
        ],
      }),
    });
  });
  afterAll(() => r.close());

  it('another identity presenting a session id gets 404, not the session', async () => {
    const init = await fetch(r.endpoint.url, { method: 'POST', headers: { ...MCP_HEADERS, authorization: 'Bearer t-a' }, body: JSON.stringify(INIT) });
    const sid = init.headers.get('mcp-session-id')!;
    await init.arrayBuffer();
    expect(sid).toBeTruthy();
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    const stolen = await fetch(r.endpoint.url, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: 'Bearer t-b', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify(list),
    });
    expect(stolen.status).toBe(404);
    await stolen.arrayBuffer();
  });
});

describe('HTTP gateway: OAuth 2.1 resource server (JWKS served by the test)', () => {
  let r: Rig;
  let jwksServer: NodeHttpServer;
  let issuer: string;
  let privateKey: CryptoKey;
  let otherKey: CryptoKey;
  let jwksHits = 0;
  let resource: string;

  const token = (claims: Record<string, unknown>, opts: { key?: CryptoKey; exp?: number | string; iss?: string; aud?: string } = {}): Promise<string> =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(opts.iss ?? issuer)
      .setAudience(opts.aud ?? resource)
      .setSubject('carol')
      .setIssuedAt()
      .setExpirationTime(opts.exp ?? '5m')
      .sign(opts.key ?? privateKey);

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    privateKey = pair.privateKey;
    otherKey = (await generateKeyPair('ES256')).privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    jwksServer = createServer((req, res) => {
      if (req.url === '/jwks') {
        jwksHits++;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
      } else if (req.url === '/.well-known/oauth-authorization-server') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
      } else res.writeHead(404).end();
    });
    await new Promise<void>((ok) => jwksServer.listen(0, '127.0.0.1', ok));
    issuer = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}`;
    // The audience is the gateway's resource URL, fixed before it listens.
    resource = 'http://127.0.0.1/mcp-test-resource';
    r = await rig({ auth: oauthAuthenticator({ issuer, audience: resource }), resourceUrl: resource });
  });
  afterAll(async () => {
    await r.close();
    await new Promise<void>((ok) => jwksServer.close(() => ok()));
  });

  it('publishes protected-resource metadata and answers 401 with a resource_metadata challenge', async () => {
    const meta = await fetch(new URL('/.well-known/oauth-protected-resource/mcp-test-resource', r.endpoint.url));
    expect(meta.status).toBe(200);
    expect(await meta.json()).toMatchObject({ resource, authorization_servers: [issuer], bearer_methods_supported: ['header'] });
    const none = await fetch(r.endpoint.url, { method: 'POST', headers: MCP_HEADERS, body: JSON.stringify(INIT) });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(
      /resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp-test-resource"/,
    );
    await none.arrayBuffer();
  });

  it('refuses expired, wrong-audience, wrong-issuer, foreign-key, unsigned and missing tokens', async () => {
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(
      JSON.stringify({ iss: issuer, aud: resource, sub: 'carol', exp: Math.floor(Date.now() / 1000) + 300 }),
    ).toString('base64url')}.`;
    const cases: [string, string | undefined][] = [
      ['expired', await token({}, { exp: Math.floor(Date.now() / 1000) - 3600 })],
      ['wrong audience', await token({}, { aud: 'http://127.0.0.1/another-resource' })],
      ['wrong issuer', await token({}, { iss: 'http://127.0.0.1:1/evil' })],
      ['foreign key', await token({}, { key: otherKey })],
      ['unsigned', unsigned],
      ['missing', undefined],
    ];
    for (const [name, t] of cases) {
      const res = await fetch(r.endpoint.url, {
        method: 'POST',
        headers: { ...MCP_HEADERS, ...(t && { authorization: `Bearer ${t}` }) },
        body: JSON.stringify(INIT),
      });
      expect(res.status, name).toBe(401);
      expect(res.headers.get('www-authenticate'), name).toMatch(/^Bearer /);
      if (t) expect(res.headers.get('www-authenticate'), name).toContain('error="invalid_token"');
      await res.arrayBuffer();
    }
    expect(r.gw.sessionCount).toBe(0);
  });

  it("a valid token's subject is the principal in the audit record; the JWKS is fetched once and cached", async () => {
    const t = await token({ tenant_id: 'globex', scope: 'mcp approver' });
    const client = await connect(r.endpoint.url, t);
    expect(envelope(await client.callTool({ name: 'read_notes', arguments: {} }))).toMatchObject({ ok: true });
    expect(envelope(await client.callTool({ name: 'read_notes', arguments: {} }))).toMatchObject({ ok: true });
    await client.close();
    expect(jwksHits).toBe(1);
    await r.gw.close();
    const { records } = await r.store.listAudit({ tool: 'read_notes' });
    expect(records.length).toBe(2);
    for (const rec of records) expect(rec.principalChain[0]).toEqual({ kind: 'user', id: 'carol', tenant_id: 'globex' });
  });
});
