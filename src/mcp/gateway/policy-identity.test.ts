// Policy `when` conditions see, through the real gateway, the verified identity's roles and claims (from
// the tokens file and from an OAuth JWT) and the upstream tool's annotations (#38 point 1): a real gateway
// over HTTP in front of counting-server.mjs, real SDK clients with bearer tokens, a real SQLite store, and
// for OAuth a JWKS served by the test with tokens signed by `jose`.
import { createServer, type Server as NodeHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePolicy } from '../../governance/policy-load.js';
import { openStore } from '../../store/index.js';
import { operatorKeyFromSecret } from '../../store/operator-key.js';
import type { Store } from '../../store/types.js';
import { type Authenticator, oauthAuthenticator, tokenAuthenticator, tokenDigest } from '../serve/auth.js';
import { type HttpEndpoint, serveHttp } from '../serve/http.js';
import { repoRoot, silent, tempDir } from '../test-support/harness.js';
import { Gateway } from './gateway.js';
import { GatewayGovernance } from './governor.js';

const COUNTING = join(repoRoot, 'src/mcp/test-support/counting-server.mjs');
const POLICY = `
version: 1
default: deny
rules:
  - name: writers
    match: { tool: write_note }
    when: "'writer' in identity.roles"
    effect: allow
  - name: research-dept
    match: { tool: read_notes }
    when: "has(identity.claims.dept) && identity.claims.dept == 'research'"
    effect: allow
  - name: destructive-by-annotation
    match: { tool: delete_item }
    when: "has(tool.annotations.destructiveHint) && tool.annotations.destructiveHint == true"
    effect: deny
    reason: the upstream marks it destructive
  - name: other-deletes
    match: { tool: delete_item }
    effect: allow
`;

interface Rig {
  endpoint: HttpEndpoint;
  close(): Promise<void>;
}

async function rig(auth: Authenticator): Promise<Rig> {
  const dir = tempDir();
  const store: Store = await openStore(join(dir, 'audit.db'));
  const governance = new GatewayGovernance({
    store,
    policy: parsePolicy(POLICY, 'yaml'),
    approvalPollMs: 0,
    operatorKey: operatorKeyFromSecret(Buffer.alloc(32, 5)),
  });
  const gw = await Gateway.start({
    upstreams: [{ name: 'counting', command: process.execPath, args: [COUNTING], env: { COUNT_FILE: join(dir, 'count.jsonl') } }],
    governance,
    log: silent,
  });
  const endpoint = await serveHttp((session) => gw.createServer(session), { port: 0, auth });
  return {
    endpoint,
    async close() {
      await endpoint.close();
      await gw.close();
      await store.close();
    },
  };
}

async function callAs(url: string, token: string, name: string, args: Record<string, unknown>): Promise<{ status: string; detail?: string }> {
  const client = new Client({ name: 'policy-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  try {
    const result = await client.callTool({ name, arguments: args });
    const envelope = result.structuredContent as { ok?: boolean; error?: { detail?: string } };
    return envelope.ok === true ? { status: 'ok' } : { status: 'refused', detail: envelope.error?.detail ?? '' };
  } finally {
    await client.close();
  }
}

describe('policy conditions through the gateway: the tokens file', () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig(
      tokenAuthenticator({
        tokens: [
          { sha256: tokenDigest('t-writer'), principal: 'user:wanda', roles: ['writer'] },
          { sha256: tokenDigest('t-research'), principal: 'user:rita', claims: { dept: 'research' } },
          { sha256: tokenDigest('t-plain'), principal: 'user:paul', claims: { dept: 'sales' } },
        ],
      }),
    );
  });
  afterAll(() => r.close());

  it("grants by role and by claim, and denies by the upstream tool's annotations", async () => {
    expect(await callAs(r.endpoint.url, 't-writer', 'write_note', { text: 'a' })).toMatchObject({ status: 'ok' });
    expect(await callAs(r.endpoint.url, 't-plain', 'write_note', { text: 'a' })).toMatchObject({ status: 'refused' });
    expect(await callAs(r.endpoint.url, 't-research', 'read_notes', {})).toMatchObject({ status: 'ok' });
    expect(await callAs(r.endpoint.url, 't-plain', 'read_notes', {})).toMatchObject({ status: 'refused' });
    expect(await callAs(r.endpoint.url, 't-writer', 'delete_item', { id: 'x' })).toEqual({
      status: 'refused',
      detail: 'Blocked by policy: the upstream marks it destructive',
    });
  });
});

describe('policy conditions through the gateway: an OAuth JWT', () => {
  let r: Rig;
  let jwksServer: NodeHttpServer;
  let issuer: string;
  let key: CryptoKey;
  const resource = 'http://127.0.0.1/policy-identity';
  const token = (claims: Record<string, unknown>): Promise<string> =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience(resource)
      .setSubject('carol')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(key);

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    key = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    jwksServer = createServer((req, res) => {
      if (req.url === '/jwks') res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
      else if (req.url === '/.well-known/oauth-authorization-server')
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
      else res.writeHead(404).end();
    });
    await new Promise<void>((ok) => jwksServer.listen(0, '127.0.0.1', ok));
    issuer = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}`;
    r = await rig(oauthAuthenticator({ issuer, audience: resource }));
  });
  afterAll(async () => {
    await r.close();
    await new Promise<void>((ok) => jwksServer.close(() => ok()));
  });

  it('grants by a claim of the verified JWT and by its roles, and not without them', async () => {
    expect(await callAs(r.endpoint.url, await token({ dept: 'research' }), 'read_notes', {})).toMatchObject({ status: 'ok' });
    expect(await callAs(r.endpoint.url, await token({ dept: 'sales' }), 'read_notes', {})).toMatchObject({ status: 'refused' });
    expect(await callAs(r.endpoint.url, await token({ roles: ['writer'] }), 'write_note', { text: 'b' })).toMatchObject({ status: 'ok' });
    expect(await callAs(r.endpoint.url, await token({}), 'write_note', { text: 'b' })).toMatchObject({ status: 'refused' });
  });
});
