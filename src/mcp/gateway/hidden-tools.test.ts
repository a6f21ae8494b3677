// Denied tools hidden (#38 point 4): a real gateway over HTTP in front of counting-server.mjs, real SDK
// clients with bearer tokens from a tokens file, a real SQLite store. A `hide: true` deny rule leaves the
// tool out of the denied caller's tools/list and answers its call byte for byte as for a tool no
// upstream has; a caller the policy allows still sees and runs it; a rule that depends on the call's
// arguments hides nothing.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenAuthenticator, tokenDigest } from '../serve/auth.js';
import { type CountingGateway, countingGateway } from '../test-support/counting-gateway.js';

const POLICY = `
version: 1
rules:
  - name: admins-delete
    match: { tool: delete_item }
    when: "'admin' in identity.roles"
    effect: allow
  - name: no-deletes
    match: { tool: delete_item }
    effect: deny
    hide: true
  - name: plain-notes
    match: { tool: write_note }
    when: "args.text != 'secret'"
    effect: allow
  - name: no-secret-notes
    match: { tool: write_note }
    effect: deny
    hide: true
`;

let rig: CountingGateway;

beforeAll(async () => {
  rig = await countingGateway(
    POLICY,
    tokenAuthenticator({
      tokens: [
        { sha256: tokenDigest('t-admin'), principal: 'user:ada', roles: ['admin'] },
        { sha256: tokenDigest('t-plain'), principal: 'user:paul' },
      ],
    }),
  );
});
afterAll(() => rig.close());

async function client(token: string): Promise<Client> {
  const c = new Client({ name: 'hide-test', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(rig.endpoint.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return c;
}

/** The JSON-RPC answer to one `tools/call`, as the bytes the gateway sent (a 2025 session over plain HTTP). */
async function rawCall(token: string, name: string): Promise<string> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const post = (body: unknown): Promise<Response> => fetch(rig.endpoint.url, { method: 'POST', headers, body: JSON.stringify(body) });
  const init = await post({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  await init.text();
  const session = init.headers.get('mcp-session-id');
  if (session) headers['mcp-session-id'] = session;
  headers['mcp-protocol-version'] = '2025-06-18';
  await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).text();
  const text = await (await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: { id: 'x1' } } })).text();
  // An SSE answer carries the message on its data line: the message's bytes are compared, not the framing.
  const data = text.split('\n').find((l) => l.startsWith('data: '));
  return data === undefined ? text : data.slice('data: '.length);
}

describe('hide: true on a deny rule, through the gateway', () => {
  it("leaves the tool out of the denied caller's tools/list only", async () => {
    const plain = await client('t-plain');
    const admin = await client('t-admin');
    try {
      const plainNames = (await plain.listTools()).tools.map((t) => t.name);
      const adminNames = (await admin.listTools()).tools.map((t) => t.name);
      expect(plainNames).not.toContain('delete_item');
      expect(adminNames).toContain('delete_item');
      // A deny that depends on the call's arguments is not outright: the tool stays listed to everyone.
      expect(plainNames).toContain('write_note');
      expect(plainNames).toContain('read_notes');
      expect(adminNames.filter((n) => n !== 'delete_item').sort()).toEqual([...plainNames].sort());
    } finally {
      await plain.close();
      await admin.close();
    }
  });

  it('answers a call to the hidden tool exactly as a call to a tool no upstream has, counts it as one, and never runs it', async () => {
    const before = rig.unknownTools();
    const hidden = await rawCall('t-plain', 'delete_item');
    expect(rig.unknownTools()).toBe(before + 1);
    const missing = await rawCall('t-plain', 'delete_itez');
    expect(rig.unknownTools()).toBe(before + 2);
    expect(JSON.parse(hidden)).toMatchObject({ jsonrpc: '2.0', id: 2, error: { code: -32602 } });
    // Byte for byte, but for the name asked for.
    expect(hidden).toBe(missing.replaceAll('delete_itez', 'delete_item'));
    expect(rig.ran('delete_item')).toBe(0);
  });

  it('runs the tool for the caller the policy allows, and refuses an argument-dependent deny with an envelope', async () => {
    const admin = await client('t-admin');
    const plain = await client('t-plain');
    try {
      const ok = await admin.callTool({ name: 'delete_item', arguments: { id: 'x2' } });
      expect((ok.structuredContent as { ok?: boolean }).ok).toBe(true);
      expect(rig.ran('delete_item')).toBe(1);
      const secret = await plain.callTool({ name: 'write_note', arguments: { text: 'secret' } });
      expect(secret.structuredContent).toMatchObject({ ok: false, error: { detail: 'Blocked by policy: no-secret-notes: deny' } });
    } finally {
      await admin.close();
      await plain.close();
    }
  });
});
