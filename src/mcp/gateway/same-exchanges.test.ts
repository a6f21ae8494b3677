// The same exchanges through the gateway as directly (issue 40), beside same-answers.test.ts: what
// happens around an answer. The conformance server serving both eras on one endpoint
// (test/fixtures/conformance-server.mjs --http --modern, SDK v2), and its variant whose 2026-07-28
// answers leave out resultType (--omit-result-type), in front of the gateway over Streamable HTTP
// (each upstream era), asked by a v1 client, a v2 client in its legacy mode and one pinned to
// 2026-07-28: log lines during a tool call, logging/setLevel and what comes after it, progress with
// the client's own token, sampling and elicitation (form) answered by the client's handlers (as
// requests of their own and as input_required rounds), and a subscription whose update reaches the
// client (resources/subscribe, or subscriptions/listen on the modern wire). Each step's answer, the
// notifications it brought and the requests the client was asked are compared with the direct ones.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client as V2Client, StreamableHTTPClientTransport as V2HttpTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveHttp, type HttpEndpoint } from '../serve/http.js';
import { repoRoot, silent } from '../test-support/harness.js';
import type { UpstreamEra } from '../upstream/upstream.js';
import { Gateway } from './gateway.js';

const SERVER = join(repoRoot, 'test/fixtures/conformance-server.mjs');
const WATCHED = 'test://watched-resource';
const SAMPLED = { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'test-model', stopReason: 'endTurn' };
const ELICITED = { action: 'accept', content: { response: 'yes', name: 'Ada' } };

type Who = 'v1 (2025-11-25)' | 'v2 legacy (2025-11-25)' | 'v2 pinned to 2026-07-28';
// The 2026-07-28 client first: its calls go over the gateway's modern connection to the upstream,
// which the 2025 clients' (over the 2025 session, era auto) leave idle; a keep-alive socket idle past
// the upstream's 5 s is closed under the gateway's next request ('fetch failed'), a fault of its own.
const WHO: Who[] = ['v2 pinned to 2026-07-28', 'v1 (2025-11-25)', 'v2 legacy (2025-11-25)'];

/** What one step brought: its answer (or error), the notifications and the requests the client got meanwhile. */
interface Step {
  answer: unknown;
  notifications: unknown[];
  asked: unknown[];
}

/** One client, whichever SDK, with everything the server sends it written down. */
interface Probe {
  notifications: unknown[];
  asked: unknown[];
  call(name: string, args: Record<string, unknown>, onprogress?: (p: unknown) => void): Promise<unknown>;
  setLevel(level: string): Promise<unknown>;
  /** Subscribes to `uri` (resources/subscribe, or a listen stream on the modern wire); resolves to a stop. */
  subscribe(uri: string): Promise<() => Promise<unknown>>;
  close(): Promise<void>;
}

function serverProcess(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [SERVER, '--http', '0', '--modern', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve) => child.stdout!.once('data', (d: Buffer) => resolve({ child, url: (JSON.parse(d.toString()) as { url: string }).url })));
}

/** A notification as compared: a listen stream's id left out (whoever serves the stream mints it). */
function noted(n: { method: string; params?: Record<string, unknown> }): unknown {
  const { _meta, ...params } = n.params ?? {};
  const { 'io.modelcontextprotocol/subscriptionId': _id, ...meta } = (_meta ?? {}) as Record<string, unknown>;
  return { method: n.method, params: Object.keys(meta).length > 0 ? { ...params, _meta: meta } : params };
}

async function probe(who: Who, at: string): Promise<Probe> {
  const notifications: unknown[] = [];
  const asked: unknown[] = [];
  const capabilities = { sampling: {}, elicitation: { form: {} } };
  const sampled = (params: unknown) => (asked.push({ method: 'sampling/createMessage', params }), SAMPLED);
  const elicited = (params: unknown) => (asked.push({ method: 'elicitation/create', params }), ELICITED);
  if (who === 'v1 (2025-11-25)') {
    const client = new V1Client({ name: 'same-exchanges-v1', version: '1' }, { capabilities });
    client.setRequestHandler(CreateMessageRequestSchema, async (r) => sampled(r.params) as never);
    client.setRequestHandler(ElicitRequestSchema, async (r) => elicited(r.params) as never);
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => void notifications.push(noted(n)));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => void notifications.push(noted(n)));
    await client.connect(new V1HttpTransport(new URL(at)));
    return {
      notifications,
      asked,
      call: async (name, args, onprogress) => toolAnswer(await client.callTool({ name, arguments: args }, undefined, onprogress ? { onprogress } : {})),
      setLevel: (level) => client.setLoggingLevel(level as never),
      subscribe: async (uri) => {
        await client.subscribeResource({ uri });
        return () => client.unsubscribeResource({ uri });
      },
      close: () => client.close(),
    };
  }
  const mode = who === 'v2 legacy (2025-11-25)' ? ('legacy' as const) : { pin: '2026-07-28' };
  const client = new V2Client({ name: 'same-exchanges-v2', version: '1' }, { capabilities, versionNegotiation: { mode } });
  client.setRequestHandler('sampling/createMessage', async (r) => sampled(r.params) as never);
  client.setRequestHandler('elicitation/create', async (r) => elicited(r.params) as never);
  client.setNotificationHandler('notifications/message', async (n) => void notifications.push(noted(n)));
  client.setNotificationHandler('notifications/resources/updated', async (n) => void notifications.push(noted(n)));
  await client.connect(new V2HttpTransport(new URL(at)));
  return {
    notifications,
    asked,
    call: async (name, args, onprogress) => toolAnswer(await client.callTool({ name, arguments: args }, onprogress ? { onprogress } : {})),
    setLevel: (level) => client.setLoggingLevel(level as never),
    // subscriptions/listen is the 2026-07-28 era's only; a 2025 session subscribes.
    subscribe: async (uri) => {
      if (who === 'v2 legacy (2025-11-25)') {
        await client.subscribeResource({ uri });
        return () => client.unsubscribeResource({ uri });
      }
      const sub = await client.listen({ resourceSubscriptions: [uri] });
      return () => sub.close();
    },
    close: () => client.close(),
  };
}

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}

/**
 * A tool's answer as compared: its content and isError (the gateway envelopes tool results, so
 * structuredContent is its own, as in same-answers.test.ts).
 */
const toolAnswer = (r: unknown): unknown => {
  const { content, isError } = r as { content: unknown; isError?: boolean };
  return { content, isError: isError === true };
};

/** The answer, or the error's message (an error is an answer too, and must be the same one). */
const settled = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    (r) => r,
    (e: unknown) => ({ error: e instanceof Error ? e.message : String(e) }),
  );

/**
 * Lines the conformance server logs on the session rather than in a request (its logger is named):
 * when they arrive beside the answers is a race directly too, so they are compared apart.
 */
const unsolicited = (n: unknown): boolean => (n as { params?: { logger?: unknown } }).params?.logger === 'conformance-server';

/** A request the client was asked, its progress token left out: whoever sends the request mints it. */
function askedAs(r: unknown): unknown {
  const { method, params } = r as { method: string; params: { _meta?: Record<string, unknown> } };
  const { _meta, ...rest } = params;
  const { progressToken: _t, ...meta } = _meta ?? {};
  return { method, params: Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest };
}

/** Every step of one client at one endpoint, by name, and the session's own log lines (`lines` of them awaited). */
async function exchangesAt(who: Who, at: string, lines = 3): Promise<{ steps: Record<string, Step>; unsolicited: unknown[] }> {
  const c = await probe(who, at);
  const steps: Record<string, Step> = {};
  // What came before the answer, as a client relies on it (log lines and progress of the request
  // arrive before its answer), and then whatever `awaited` waits for.
  const step = async (name: string, run: () => Promise<unknown>, awaited?: string): Promise<void> => {
    const [n, a] = [c.notifications.length, c.asked.length];
    const answer = await settled(run());
    const notifications = c.notifications.slice(n).filter((x) => !unsolicited(x));
    if (awaited) {
      const arrived = () => c.notifications.slice(n).filter((x) => (x as { method: string }).method === awaited);
      await until(() => arrived().length > 0);
      for (const x of arrived()) if (!notifications.includes(x)) notifications.push(x);
    }
    steps[name] = { answer, notifications, asked: c.asked.slice(a).map(askedAs) };
  };
  try {
    await step('tools/call test_tool_with_logging', () => c.call('test_tool_with_logging', {}));
    const progress: unknown[] = [];
    // The tool answers the progress token it was sent: the gateway's own toward the upstream (it is
    // the upstream's client, its tokens unique among all its sessions), so that text is left out;
    // that onprogress hears the notifications at all shows they came back with the client's token.
    await step('tools/call test_tool_with_progress', async () => {
      const { isError } = (await c.call('test_tool_with_progress', {}, (p) => progress.push(p))) as { isError: boolean };
      return { isError, progress };
    });
    await step('tools/call test_sampling', () => c.call('test_sampling', { prompt: 'What is the capital of France?' }));
    await step('tools/call test_elicitation', () => c.call('test_elicitation', { message: 'Say something' }));
    await step('tools/call test_input_required_result_sampling', () => c.call('test_input_required_result_sampling', {}));
    await step('tools/call test_input_required_result_elicitation', () => c.call('test_input_required_result_elicitation', {}));
    await step('logging/setLevel warning', () => c.setLevel('warning'));
    await step('tools/call test_tool_with_logging after setLevel', () => c.call('test_tool_with_logging', {}));
    let stop: () => Promise<unknown> = async () => undefined;
    await step('subscribe', async () => {
      stop = await c.subscribe(WATCHED);
      return 'subscribed';
    });
    await step('touch', () => c.call('touch_watched_resource', {}), 'notifications/resources/updated');
    await step('unsubscribe', () => stop());
    // The session's own lines (the server's answers to setLevel, subscribe, unsubscribe), once all came.
    if (who !== 'v2 pinned to 2026-07-28') await until(() => c.notifications.filter(unsolicited).length >= lines, 5_000);
  } finally {
    await c.close();
  }
  return { steps, unsolicited: c.notifications.filter(unsolicited) };
}

/** The log lines of the step below `warning`, which the gateway drops once it applies that level itself. */
const atWarningOrAbove = (step: Step): Step => ({
  ...step,
  notifications: step.notifications.filter((n) => {
    const { method, params } = n as { method: string; params?: { level?: string } };
    return method !== 'notifications/message' || !['debug', 'info', 'notice'].includes(params?.level ?? '');
  }),
});

describe.each<[string, string[]]>([
  ['the conformance server', []],
  ['its variant without resultType', ['--omit-result-type']],
])('the same exchanges through the gateway as directly: %s', (_label, args) => {
  let server: { child: ChildProcess; url: string };
  let plain: { child: ChildProcess; url: string };
  beforeAll(async () => {
    [server, plain] = await Promise.all([serverProcess(args), serverProcess([])]);
  }, 60_000);
  afterAll(() => {
    server?.child.kill();
    plain?.child.kill();
  });

  describe.each<UpstreamEra>(['auto', 'modern', 'legacy'])('upstream era %s', (era) => {
    let gw: Gateway;
    let endpoint: HttpEndpoint;
    beforeAll(async () => {
      gw = await Gateway.start({ upstreams: [{ name: 'conformance', url: server.url, era }], log: silent, supervision: { healthIntervalMs: 0 } });
      endpoint = await serveHttp((session) => gw.createServer(session), { port: 0, listen: gw.subscriptions });
    }, 60_000);
    afterAll(async () => {
      await endpoint?.close();
      await gw?.close();
    });

    it.each<Who>(WHO)(
      '%s',
      async (who) => {
        // Directly, the variant's modern answers fail the client (it requires resultType): the
        // answers to match are the plain server's, which differ from the variant in nothing else.
        const direct = await exchangesAt(who, plain.url);
        const pinned = who === 'v2 pinned to 2026-07-28';
        // The upstream's own lines answering setLevel (not told it on the modern wire) and
        // subscribe (the gateway holds one subscription per URI for all its clients, on the
        // upstream's main connection: a listen stream unless that speaks 2025) are not there.
        const lines = direct.unsolicited.filter((n) => {
          const data = String((n as { params: { data?: unknown } }).params.data);
          if (era === 'modern' && data.startsWith('Log level set')) return false;
          return era === 'legacy' || !/^(Uns|S)ubscribed/.test(data);
        });
        const through = await exchangesAt(who, endpoint.url, lines.length);
        // The comparison means something: the log lines, progress, questions and update all came.
        expect(direct.steps['tools/call test_tool_with_logging']!.notifications).toHaveLength(3);
        expect((direct.steps['tools/call test_tool_with_progress']!.answer as { progress: unknown[] }).progress).toHaveLength(3);
        expect(direct.steps['tools/call test_sampling']!.asked).toHaveLength(pinned ? 0 : 1);
        expect(direct.steps['tools/call test_input_required_result_elicitation']!.asked).toHaveLength(1);
        expect(direct.steps.touch!.notifications).toContainEqual({ method: 'notifications/resources/updated', params: { uri: WATCHED } });
        // A client of one era relayed over the other (era modern for a 2025 session, legacy for a
        // 2026-07-28 client): a tool asking its client with a request of its own answers what it
        // answers a client of the wire's era directly (a 2026-07-28 request cannot carry one; a 2025
        // session's is relayed as an input_required round). On the modern wire setLevel is the
        // gateway's to apply (the upstream has none), so the lines below it are dropped.
        const otherWire = era === 'modern' ? !pinned : era === 'legacy' && pinned;
        const wires = otherWire ? (await exchangesAt(pinned ? 'v2 legacy (2025-11-25)' : 'v2 pinned to 2026-07-28', plain.url)).steps : {};
        for (const key of Object.keys(direct.steps)) {
          let expected = direct.steps[key]!;
          if (otherWire && (key === 'tools/call test_sampling' || key === 'tools/call test_elicitation')) expected = wires[key]!;
          if (era === 'modern' && !pinned && key.endsWith('after setLevel')) expected = atWarningOrAbove(expected);
          expect(through.steps[key], key).toEqual(expected);
        }
        // With era legacy a 2026-07-28 client's subscription is held over the upstream's 2025
        // session, whose own lines about it (which a client of the modern wire never gets directly)
        // may reach the client after its exchanges, or before their end under load: not compared.
        const dataOf = (n: unknown): string => String((n as { params: { data?: unknown } }).params.data);
        const relayed = era === 'legacy' && pinned ? through.unsolicited.filter((n) => !/^(Uns|S)ubscribed/.test(dataOf(n))) : through.unsolicited;
        expect(relayed).toEqual(lines);
      },
      60_000,
    );
  });
});
