// An upstream reached over https: the built gateway as a real process with `--url https://...`,
// the real SDK stdio client in front, a real MCP server behind a TLS endpoint whose certificate
// (a test fixture, test-support/tls/) the gateway trusts only when told to, as an operator would
// with an internal CA (NODE_EXTRA_CA_CERTS). The node:http upstream fetch keeps its connections.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oracleValidate } from '../../../test/oracle.js';
import { repoRoot } from '../test-support/harness.js';

const MAIN = join(repoRoot, 'dist/src/cli/main.js');
const MODERN = join(repoRoot, 'src/mcp/test-support/modern-server.mjs');
const TLS = join(repoRoot, 'src/mcp/test-support/tls');
const CERT = join(TLS, 'localhost.crt');

describe('an upstream over https', () => {
  let upstream: ChildProcess;
  let tls: Server;
  let httpsUrl: string;
  let handshakes = 0;
  let requests = 0;
  const clients: Client[] = [];

  beforeAll(async () => {
    if (!existsSync(MAIN)) execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
    upstream = spawn(process.execPath, [MODERN, '--http'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const plain = new URL(await new Promise<string>((resolve) => upstream.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))));
    // TLS in front of the plain server, as a terminating proxy would be: streams both ways.
    tls = createServer({ key: readFileSync(join(TLS, 'localhost.key')), cert: readFileSync(CERT) }, (req, res) => {
      requests++;
      const out = httpRequest({ host: plain.hostname, port: plain.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      out.on('error', () => res.destroy());
      req.pipe(out);
    });
    tls.on('secureConnection', () => handshakes++);
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    httpsUrl = `https://localhost:${(tls.address() as AddressInfo).port}/mcp`;
  });

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
    tls?.closeAllConnections();
    await new Promise((resolve) => tls?.close(resolve));
    upstream?.kill();
  });

  async function gateway(env: Record<string, string>): Promise<Client> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, 'gateway', '--no-store', '--url', httpsUrl],
      env: { PATH: process.env.PATH ?? '', ...env },
      stderr: 'ignore',
    });
    const client = new Client({ name: 'https-test', version: '1' });
    clients.push(client);
    await client.connect(transport);
    return client;
  }

  it('calls through it with envelopes, reusing its TLS connections', async () => {
    const client = await gateway({ NODE_EXTRA_CA_CERTS: CERT });
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain('echo');
    const before = { handshakes, requests };
    for (let i = 0; i < 6; i++) {
      const r = (await client.callTool({ name: 'echo', arguments: { text: `over tls ${i}` } })) as CallToolResult;
      expect(oracleValidate('mcec', r.structuredContent).errors).toEqual([]);
      expect(r.structuredContent).toMatchObject({ ok: true, result: { echoed: `over tls ${i}` } });
    }
    // Six calls (each a POST, some with a GET stream besides) over at most two new connections.
    expect(requests - before.requests).toBeGreaterThanOrEqual(6);
    expect(handshakes - before.handshakes).toBeLessThanOrEqual(2);
  });

  it('an upstream whose certificate is not trusted is refused at start, with the TLS reason, and never called', async () => {
    const before = requests;
    const gw = spawn(process.execPath, [MAIN, 'gateway', '--no-store', '--url', httpsUrl], {
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let err = '';
    gw.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => gw.once('exit', resolve));
    expect(code).toBe(2);
    expect(err).toMatch(/Upstream 'upstream' failed to start: .*fetch failed \(self-signed certificate \[DEPTH_ZERO_SELF_SIGNED_CERT\]\)/);
    expect(requests).toBe(before);
  });
});
