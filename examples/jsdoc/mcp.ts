// The @example of each public entry point of tool-envelope/mcp (see core.ts).
import type { Client } from '@modelcontextprotocol/client';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { isOk, success } from 'tool-envelope/core';
import { loadPolicyFile } from '../../src/governance/index.js';
import {
  createEnvelopeServer,
  Gateway,
  GatewayGovernance,
  loadGatewayConfig,
  outcomeToCallToolResult,
  readToolResult,
  serveHttp,
  StdioServerLineTransport,
  StoreRecorder,
  Upstream,
  type UpstreamSpec,
} from '../../src/mcp/index.js';
import { createRuntime, type ToolDefinition } from '../../src/runtime/index.js';
import { openStore } from '../../src/store/index.js';

export async function example_Gateway() {
  //#region Gateway
  const gw = await Gateway.start({ upstreams: [{ name: 'memory', command: 'node', args: ['memory.js'] }] });
  serveStdio(() => gw.createServer());
  //#endregion
}

export async function example_GatewayGovernance(upstreams: UpstreamSpec[]) {
  //#region GatewayGovernance
  const store = await openStore('./tool-envelope.db');
  const governance = new GatewayGovernance({ store, policy: await loadPolicyFile('policy.yaml') });
  const gw = await Gateway.start({ upstreams, governance });
  //#endregion
  return gw;
}

export async function example_StoreRecorder(upstreams: UpstreamSpec[]) {
  //#region StoreRecorder
  const store = await openStore('./tool-envelope.db');
  const gw = await Gateway.start({ upstreams, recorder: new StoreRecorder(store) });
  //#endregion
  return gw;
}

export async function example_loadGatewayConfig() {
  //#region loadGatewayConfig
  const config = await loadGatewayConfig('./gateway.yaml');
  //#endregion
  return config;
}

export async function example_serveHttp(gateway: Gateway) {
  //#region serveHttp
  const endpoint = await serveHttp(({ identity }) => gateway.createServer({ identity }), { port: 3333 });
  //#endregion
  return endpoint;
}

export async function example_StdioServerLineTransport(gateway: Gateway) {
  //#region StdioServerLineTransport
  const server = gateway.createServer();
  await server.connect(new StdioServerLineTransport());
  //#endregion
}

export async function example_Upstream() {
  //#region Upstream
  const up = new Upstream({ name: 'everything', command: 'node', args: ['server.js'] });
  await up.start();
  const tools = await up.request({ method: 'tools/list' }, { timeoutMs: 5_000 });
  await up.close();
  //#endregion
  return tools;
}

export async function example_readToolResult(client: Client) {
  //#region readToolResult
  const outcome = readToolResult(await client.callTool({ name: 'echo', arguments: { message: 'hi' } }));
  if (isOk(outcome)) console.log(outcome.result);
  else console.log(outcome.error?.category);
  //#endregion
}

export function example_outcomeToCallToolResult() {
  //#region outcomeToCallToolResult
  const { result } = outcomeToCallToolResult(success({ n: 1 }), { dialect: 'mcec' });
  result.structuredContent; // { ok: true, result: { n: 1 } }
  //#endregion
}

export function example_createEnvelopeServer(readText: ToolDefinition) {
  //#region createEnvelopeServer
  const runtime = createRuntime({ tools: [readText] });
  serveStdio(() => createEnvelopeServer(runtime, { dialect: 'mcec' }));
  //#endregion
}
