// Policy `when` conditions see, through the real gateway, the verified identity's roles and claims (from
// the tokens file and from an OAuth JWT) and the upstream tool's annotations (#38 point 1): a real gateway
// over HTTP in front of counting-server.mjs, real SDK clients with bearer tokens, a real SQLite store, and
// for OAuth a JWKS served by the test with tokens signed by `jose`.
import { createServer, type Server as NodeHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oauthAuthenticator, tokenAuthenticator, tokenDigest } from '../serve/auth.js';
import { type CountingGateway, countingGateway } from '../test-support/counting-gateway.js';

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
  let r: CountingGateway;
  beforeAll(async () => {
    r = await countingGateway(
      POLICY,
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
  let r: CountingGateway;
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
    r = await countingGateway(POLICY, oauthAuthenticator({ issuer, audience: resource }));
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
