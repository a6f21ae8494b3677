// Paths served beside MCP on the endpoint's listener (the console, metrics, health): routed before the
// MCP path, under the same Host allow-list, with the endpoint's authentication at hand. A real SDK
// server answers MCP on the same listener to show the two do not interfere.
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { McpServer } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { tokenAuthenticator, tokenDigest } from './auth.js';
import { serveHttp, type HttpEndpoint, type HttpRoute } from './http.js';

const open: HttpEndpoint[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close()));
});

const health: HttpRoute = { path: '/healthz', handle: (_req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n') };
const whoami: HttpRoute = {
  path: '/console/',
  prefix: true,
  async handle(_req, res, context) {
    const who = await context.authenticate();
    const name = who && 'principal' in who ? who.principal.id : 'nobody';
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`${context.pathname} ${name}\n`);
  },
};

function mcpServer() {
  const server = new McpServer({ name: 'beside', version: '1.0.0' });
  server.registerTool('ping', { description: 'answers pong' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
  return server.server;
}

describe('routes beside MCP', () => {
  it('serves each route by exact path or prefix, and MCP and the 404 as before', async () => {
    const endpoint = await serveHttp(() => mcpServer(), { port: 0, routes: [health, whoami] });
    open.push(endpoint);
    const base = endpoint.url.replace(/\/mcp$/, '');
    expect(await (await fetch(`${base}/healthz`)).text()).toBe('ok\n');
    expect(await (await fetch(`${base}/console/inbox?x=1`)).text()).toBe('/console/inbox nobody\n');
    // Exact routes match exactly.
    expect((await fetch(`${base}/healthz/more`)).status).toBe(404);
    const client = new Client({ name: 't', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(endpoint.url)));
    const result = await client.callTool({ name: 'ping', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'pong' }]);
    await client.close();
  });

  it('applies the Host allow-list to routes as to MCP', async () => {
    const endpoint = await serveHttp(() => mcpServer(), { port: 0, routes: [health] });
    open.push(endpoint);
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: endpoint.port, path: '/healthz', headers: { host: 'evil.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });

  it("hands a route the endpoint's authentication: a valid token proves its identity, a wrong one fails", async () => {
    const auth = tokenAuthenticator({ tokens: [{ sha256: tokenDigest('s3cret-token-value'), principal: 'user:alice' }] });
    const endpoint = await serveHttp(() => mcpServer(), { port: 0, auth, routes: [whoami] });
    open.push(endpoint);
    const base = endpoint.url.replace(/\/mcp$/, '');
    const good = await fetch(`${base}/console/x`, { headers: { authorization: 'Bearer s3cret-token-value' } });
    expect(await good.text()).toBe('/console/x alice\n');
    const bad = await fetch(`${base}/console/x`, { headers: { authorization: 'Bearer wrong' } });
    expect(await bad.text()).toBe('/console/x nobody\n');
  });
});
