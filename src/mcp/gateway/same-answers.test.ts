// The same answers through the gateway as directly (issue 40): the conformance server serving both
// eras on one endpoint (test/fixtures/conformance-server.mjs --http --modern, SDK v2: 2025-11-25
// sessions beside createMcpHandler's 2026-07-28 requests) in front of the gateway over Streamable
// HTTP (each upstream era: auto, modern, legacy), asked by a v1 client (2025), a v2 client in its legacy mode (2025-11-25) and one pinned to
// 2026-07-28: tools (text, image, audio, embedded resource, mixed), resources read (text, binary,
// template), prompts (plain, arguments, embedded resource, image) and completions, compared field by
// field. The gateway envelopes tool results (structuredContent is its envelope): the upstream's
// content blocks and isError must come through as they were.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client as V2Client, StreamableHTTPClientTransport as V2HttpTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveHttp, type HttpEndpoint } from '../serve/http.js';
import { repoRoot, silent } from '../test-support/harness.js';
import type { UpstreamEra } from '../upstream/upstream.js';
import { Gateway } from './gateway.js';

const SERVER = join(repoRoot, 'test/fixtures/conformance-server.mjs');
const TOOLS = ['test_simple_text', 'test_image_content', 'test_audio_content', 'test_embedded_resource', 'test_multiple_content_types'];
const READS = ['test://static-text', 'test://static-binary', 'test://template/42/data'];
const PROMPTS: [string, Record<string, string>][] = [
  ['test_simple_prompt', {}],
  ['test_prompt_with_arguments', { arg1: 'a', arg2: 'b' }],
  ['test_prompt_with_embedded_resource', { resourceUri: 'test://example' }],
  ['test_prompt_with_image', {}],
];

type Who = 'v1 (2025-11-25)' | 'v2 legacy (2025-11-25)' | 'v2 pinned to 2026-07-28';
type Answers = Record<string, unknown>;
// What the three kinds of client share (the v1 and v2 clients' method names are the same).
type AnyClient = {
  callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  readResource(p: { uri: string }): Promise<unknown>;
  getPrompt(p: { name: string; arguments: Record<string, string> }): Promise<unknown>;
  complete(p: unknown): Promise<unknown>;
  close(): Promise<void>;
};

let upstream: ChildProcess;
let url: string;
beforeAll(async () => {
  upstream = spawn(process.execPath, [SERVER, '--http', '0', '--modern'], { stdio: ['ignore', 'pipe', 'inherit'] });
  url = await new Promise<string>((resolve) => upstream.stdout!.once('data', (d: Buffer) => resolve((JSON.parse(d.toString()) as { url: string }).url)));
}, 60_000);
afterAll(() => {
  upstream?.kill();
});

async function connect(who: Who, at: string): Promise<AnyClient> {
  if (who === 'v1 (2025-11-25)') {
    const client = new V1Client({ name: 'same-answers-v1', version: '1' });
    await client.connect(new V1HttpTransport(new URL(at)));
    return client as unknown as AnyClient;
  }
  // The v2 SDK pins modern revisions only; 'legacy' is its 2025-era mode.
  const mode = who === 'v2 legacy (2025-11-25)' ? ('legacy' as const) : { pin: '2026-07-28' };
  const client = new V2Client({ name: 'same-answers-v2', version: '1' }, { versionNegotiation: { mode } });
  await client.connect(new V2HttpTransport(new URL(at)));
  return client as unknown as AnyClient;
}

/** Every answer of one client at one endpoint, by request, as compared (a tool: its content and isError). */
async function answersAt(who: Who, at: string): Promise<Answers> {
  const client = await connect(who, at);
  const answers: Answers = {};
  try {
    for (const name of TOOLS) {
      const r = (await client.callTool({ name, arguments: {} })) as { content: unknown; isError?: boolean };
      answers[`tools/call ${name}`] = { content: r.content, isError: r.isError === true };
    }
    for (const uri of READS) answers[`resources/read ${uri}`] = ((await client.readResource({ uri })) as { contents: unknown }).contents;
    for (const [name, args] of PROMPTS) {
      const r = (await client.getPrompt({ name, arguments: args })) as { description?: unknown; messages: unknown };
      answers[`prompts/get ${name}`] = { description: r.description, messages: r.messages };
    }
    const completed = (await client.complete({
      ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
      argument: { name: 'arg1', value: 'a' },
    })) as { completion: unknown };
    answers['completion/complete'] = completed.completion;
  } finally {
    await client.close();
  }
  return answers;
}

// auto: 2025 clients over a 2025 session with it, 2026-07-28 clients over the modern wire; modern and
// legacy: every client over that one era.
describe.each<UpstreamEra>(['auto', 'modern', 'legacy'])('the same answers through the gateway as directly, upstream era %s', (era) => {
  let gw: Gateway;
  let endpoint: HttpEndpoint;
  beforeAll(async () => {
    gw = await Gateway.start({ upstreams: [{ name: 'conformance', url, era }], log: silent, supervision: { healthIntervalMs: 0 } });
    endpoint = await serveHttp((session) => gw.createServer(session), { port: 0 });
  }, 60_000);
  afterAll(async () => {
    await endpoint?.close();
    await gw?.close();
  });

  it.each<Who>(['v1 (2025-11-25)', 'v2 legacy (2025-11-25)', 'v2 pinned to 2026-07-28'])(
    '%s',
    async (who) => {
      const direct = await answersAt(who, url);
      // The comparison means something: every request answered, with the blocks each tool names.
      expect(Object.keys(direct)).toHaveLength(TOOLS.length + READS.length + PROMPTS.length + 1);
      const kinds = (direct['tools/call test_multiple_content_types'] as { content: { type: string }[] }).content.map((b) => b.type);
      expect(kinds).toEqual(['text', 'image', 'resource']);
      expect((direct['tools/call test_audio_content'] as { content: { type: string }[] }).content[0]?.type).toBe('audio');
      const through = await answersAt(who, endpoint.url);
      for (const key of Object.keys(direct)) expect(through[key], key).toEqual(direct[key]);
    },
    60_000,
  );
});
