// The live calls stream and the inbox's updates over HTTP, on a real listener over real stores:
// SQLite, and two PostgreSQL stores (two processes' worth of connections) on one schema, where a
// row committed through one wakes the other's stream by NOTIFY. The SSE bodies are read as they
// come; what a browser makes of them is tried in src/cli/console-live-browser.test.ts.
import { connect } from 'node:net';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { CallFeedReader } from '../store/call-feed-reader.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { AUDIT_COLUMNS, auditRowValues } from '../store/rows.js';
import { freshSchemas, describePg } from '../store/test-support/pg.js';
import { makeApproval, makeAudit } from '../store/test-support/store-suite.js';
import type { ApprovalRequest, AuditRecord, Store } from '../store/types.js';
import type { ConsoleOptions } from './console.js';
import { Agent, serveConsole, type ServedConsole } from './test-support/http-client.js';
import { storeFileForTests } from './test-support/store-file.js';
import { tokenVerifier } from './test-support/token-verifier.js';

const file = storeFileForTests('te-console-live-');
const verifyToken = tokenVerifier([
  { token: 'approver-acme', principal: 'user:rita', tenant: 'acme', roles: ['approver'] },
  { token: 'admin-any', principal: 'user:ada', roles: ['admin'] },
]);

const served: ServedConsole[] = [];
const streams: Stream[] = [];
afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  for (const c of served.splice(0)) await c.close();
});

async function start(over: Store, options: Partial<ConsoleOptions> = {}): Promise<ServedConsole> {
  const c = await serveConsole({ store: over, verifyToken, ...options });
  served.push(c);
  return c;
}

async function signedIn(c: ServedConsole, token: string): Promise<Agent> {
  const a = new Agent(c.url);
  expect((await a.signIn(token)).status).toBe(303);
  return a;
}

/** A call's two rows as the gateway writes them: `started`, then its outcome. */
function call(tool: string, principal: { id: string; tenant?: string }, end: { status?: 'ok' | 'error'; category?: 'elevation' | null } = {}): AuditRecord[] {
  const chain = [{ kind: 'user' as const, id: principal.id, ...(principal.tenant && { tenant_id: principal.tenant }) }];
  const base = makeAudit({ tool, principalChain: chain, callEnvelope: { tool, args: {} }, resultEnvelope: {} });
  const status = end.status ?? 'ok';
  return [
    { ...base, status: 'started', category: null, endedAt: base.startedAt, latencyMs: 0, outcome: { status: 'started' } },
    { ...base, status, category: end.category ?? null, endedAt: base.startedAt + 7, latencyMs: 7, outcome: { status } },
  ];
}

interface Stream {
  status: number;
  events: { id?: string; event: string; data: Record<string, unknown> }[];
  text: () => string;
  close(): void;
}

/** Opens an SSE stream as the agent and parses its events as they come. */
async function stream(a: Agent, path: string, headers: Record<string, string> = {}): Promise<Stream> {
  const ac = new AbortController();
  const res = await fetch(`${a.base}${path}`, {
    headers: { cookie: [...a.cookies].map(([k, v]) => `${k}=${v}`).join('; '), accept: 'text/event-stream', ...headers },
    signal: ac.signal,
  });
  let raw = '';
  const s: Stream = { status: res.status, events: [], text: () => raw, close: () => ac.abort() };
  streams.push(s);
  if (res.status !== 200 || !res.body) return s;
  void (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        raw += decoder.decode(chunk, { stream: true });
        for (let end = raw.indexOf('\n\n'); end !== -1; end = raw.indexOf('\n\n')) {
          const block = raw.slice(0, end);
          raw = raw.slice(end + 2);
          const e: { id?: string; event: string; data: Record<string, unknown> } = { event: 'message', data: {} };
          let data: string | undefined;
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) e.id = line.slice(4);
            else if (line.startsWith('event: ')) e.event = line.slice(7);
            else if (line.startsWith('data: ')) data = line.slice(6);
          }
          if (data === undefined) continue;
          e.data = JSON.parse(data) as Record<string, unknown>;
          s.events.push(e);
        }
      }
    } catch {
      // Aborted by the test.
    }
  })();
  return s;
}

/** Waits for the stream's `ready` event: every call committed after it reaches the stream. */
async function ready(s: Stream): Promise<void> {
  await expect.poll(() => s.events.some((e) => e.event === 'ready'), { timeout: 5_000 }).toBe(true);
}

const calls = (s: Stream) =>
  s.events.filter((e) => e.event === 'call').map((e) => `${e.data.tool}:${e.data.phase}:${e.data.status}:${(e.data.principals as string[]).join(',')}`);

describe('the live calls stream', () => {
  it('sends calls as they start and end, only the tenant’s to an approver, all to an admin; filters apply on the server', async () => {
    const c = await start(file.store);
    const rita = await signedIn(c, 'approver-acme');
    const ada = await signedIn(c, 'admin-any');
    const mine = await stream(rita, '/live/events');
    const all = await stream(ada, '/live/events');
    const failures = await stream(ada, '/live/events?status=error&category=elevation');
    const gus = await stream(ada, '/live/events?principal=user%3Agus&tool=read_notes');
    // Streams of one view (the same identity's reach and filters) are sent one chunk: each still gets it all.
    const mineToo = await stream(rita, '/live/events');
    const allToo = await stream(ada, '/live/events');
    expect(mine.status).toBe(200);
    for (const s of [mine, all, failures, gus, mineToo, allToo]) await ready(s);
    await file.store.appendAudit(call('read_notes', { id: 'ops', tenant: 'acme' }));
    await file.store.appendAudit(call('read_notes', { id: 'gus', tenant: 'globex' }));
    await file.store.appendAudit(call('delete_item', { id: 'gus', tenant: 'globex' }, { status: 'error', category: 'elevation' }));
    await file.store.appendAudit(call('<img src=x onerror=alert(1)>\u202e', { id: 'ops', tenant: 'acme' }));
    await expect.poll(() => calls(all).length, { timeout: 5_000 }).toBe(8);
    await expect.poll(() => calls(mine).length, { timeout: 5_000 }).toBe(4);
    expect(calls(mine)).toEqual([
      'read_notes:start:started:user:ops',
      'read_notes:end:ok:user:ops',
      '<img src=x onerror=alert(1)>\\u{202e}:start:started:user:ops',
      '<img src=x onerror=alert(1)>\\u{202e}:end:ok:user:ops',
    ]);
    expect(mine.text()).not.toContain('gus');
    expect(calls(all)).toContain('delete_item:end:error:user:gus');
    expect(all.events.filter((e) => e.event === 'call')[1]!.data).toMatchObject({
      latencyMs: 7,
      toolCallId: expect.stringMatching(/^call_/),
      runId: expect.any(String),
      traceId: expect.any(String),
    });
    expect(calls(failures)).toEqual(['delete_item:end:error:user:gus']);
    expect(calls(gus)).toEqual(['read_notes:start:started:user:gus', 'read_notes:end:ok:user:gus']);
    await expect.poll(() => calls(allToo).length, { timeout: 5_000 }).toBe(8);
    expect(calls(allToo)).toEqual(calls(all));
    await expect.poll(() => calls(mineToo).length, { timeout: 5_000 }).toBe(4);
    expect(calls(mineToo)).toEqual(calls(mine));
  }, 30_000);

  it('resumes after Last-Event-ID with what the client missed', async () => {
    const c = await start(file.store);
    const rita = await signedIn(c, 'approver-acme');
    const first = await stream(rita, '/live/events');
    await ready(first);
    await file.store.appendAudit(call('one', { id: 'ops', tenant: 'acme' }));
    await expect.poll(() => calls(first).length, { timeout: 5_000 }).toBe(2);
    const lastId = first.events.filter((e) => e.event === 'call')[1]!.id!;
    first.close();
    await file.store.appendAudit(call('two', { id: 'ops', tenant: 'acme' }));
    await file.store.appendAudit(call('hidden', { id: 'gus', tenant: 'globex' }));
    const again = await stream(rita, '/live/events', { 'last-event-id': lastId });
    await expect.poll(() => calls(again).length, { timeout: 5_000 }).toBe(2);
    expect(calls(again)).toEqual(['two:start:started:user:ops', 'two:end:ok:user:ops']);
  }, 30_000);

  it('a stream that missed more than the bound gets the newest rows, after a skipped event; exactly the bound is no skip', async () => {
    const c = await start(file.store, { live: { catchUp: 10 } });
    const rita = await signedIn(c, 'approver-acme');
    const first = await stream(rita, '/live/events');
    await ready(first);
    await file.store.appendAudit(call('before', { id: 'ops', tenant: 'acme' }));
    await expect.poll(() => calls(first).length, { timeout: 5_000 }).toBe(2);
    const lastId = Number(first.events.filter((e) => e.event === 'call')[1]!.id!);
    first.close();
    // 8 calls, 16 rows: 6 more than the bound.
    for (let i = 0; i < 8; i++) await file.store.appendAudit(call(`missed-${i}`, { id: 'ops', tenant: 'acme' }));
    const again = await stream(rita, '/live/events', { 'last-event-id': String(lastId) });
    await ready(again);
    const kinds = again.events.map((e) => e.event);
    expect(kinds[0]).toBe('skipped');
    expect(again.events[0]!.data).toEqual({ rows: 6 });
    expect(kinds.slice(1)).toEqual([...Array(10).fill('call'), 'ready']);
    const seqs = again.events.filter((e) => e.event === 'call').map((e) => Number(e.id));
    expect(seqs).toEqual(Array.from({ length: 10 }, (_, i) => lastId + 7 + i));
    expect(calls(again).at(-1)).toBe('missed-7:end:ok:user:ops');
    again.close();

    // Exactly the bound missed: all of it, and no skipped event.
    const last = seqs.at(-1)!;
    for (let i = 0; i < 5; i++) await file.store.appendAudit(call(`bound-${i}`, { id: 'ops', tenant: 'acme' }));
    const exact = await stream(rita, '/live/events', { 'last-event-id': String(last) });
    await ready(exact);
    expect(exact.events.map((e) => e.event)).toEqual([...Array(10).fill('call'), 'ready']);
    expect(Number(exact.events[0]!.id)).toBe(last + 1);
  }, 30_000);

  it('answers 400 to filters that can never match, the stream and its page, as the audit list does', async () => {
    const c = await start(file.store);
    const rita = await signedIn(c, 'approver-acme');
    const cases: [string, RegExp][] = [
      ['status=bogus', /^unknown status 'bogus' \(one of started, ok, error, paused, completed, failed, rejected, blocked, interrupted\)$/],
      ['category=nope', /^unknown category 'nope' \(one of /],
      ['principal=alice', /^principal must be KIND:ID with KIND one of user, .*; got 'alice'$/],
      ['principal=robot%3Aalice', /^principal must be KIND:ID/],
    ];
    for (const [query, message] of cases) {
      const events = await rita.request(`/live/events?${query}`);
      expect(events.status, query).toBe(400);
      expect(events.body.trim()).toMatch(message);
      const page = await rita.request(`/live?${query}`);
      expect(page.status, query).toBe(400);
      expect(page.body).toContain('<p class="notice error">');
    }
    // The same words as the audit list's for the same value.
    const list = await rita.request('/audit?category=nope');
    expect(list.status).toBe(400);
    const said = /<p class="notice error">([^<]*)<\/p>/.exec(list.body)![1];
    expect((await rita.request('/live/events?category=nope')).body.trim()).toBe(said!.replaceAll('&#39;', "'"));
    expect(/<p class="notice error">([^<]*)<\/p>/.exec((await rita.request('/live?category=nope')).body)![1]).toBe(said);
    // Valid filters still stream.
    const ok = await stream(rita, '/live/events?status=started&principal=user%3Aops&category=elevation');
    expect(ok.status).toBe(200);
    await ready(ok);
  });

  it('refuses streams past the bound, and without a session', async () => {
    const c = await start(file.store, { live: { maxSubscribers: 2 } });
    const rita = await signedIn(c, 'approver-acme');
    expect((await new Agent(c.url).request('/live/events')).status).toBe(303);
    expect((await stream(rita, '/live/events')).status).toBe(200);
    expect((await stream(rita, '/live/events')).status).toBe(200);
    const third = await stream(rita, '/live/events');
    expect(third.status).toBe(503);
    expect(third.events).toEqual([]);
  });
});

describe('a client that does not read', () => {
  it('is disconnected once it is more than the bound behind, freeing its place, rather than buffered', async () => {
    const c = await start(file.store, { live: { maxSubscribers: 1, maxBufferBytes: 64 * 1024 } });
    const rita = await signedIn(c, 'approver-acme');
    const { port } = new URL(c.url);
    // A raw connection that asks for the stream and then never reads a byte.
    const slow = connect(Number(port), '127.0.0.1');
    slow.pause();
    slow.write(`GET /console/live/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nCookie: ${[...rita.cookies].map(([k, v]) => `${k}=${v}`).join('; ')}\r\n\r\n`);
    try {
      // It holds the one place: another stream is refused.
      await expect.poll(async () => (await stream(rita, '/live/events')).status, { timeout: 5_000 }).toBe(503);
      // Calls until the kernel's buffers are full and the server's own passes the bound (about 600 bytes an event).
      let freed = false;
      for (let batch = 0; batch < 60 && !freed; batch++) {
        await file.store.appendAudit(Array.from({ length: 500 }, () => call('flood', { id: 'ops', tenant: 'acme' })).flat());
        freed = (await stream(rita, '/live/events')).status === 200;
      }
      expect(freed).toBe(true);
    } finally {
      slow.destroy();
    }
  }, 120_000);
});

describe('the inbox updates', () => {
  const request = (id: string, tenant: string, over: Partial<ApprovalRequest> = {}): ApprovalRequest =>
    makeApproval({ id, principalChain: [{ kind: 'user', id: 'ops', tenant_id: tenant }], createdAt: Date.now(), ...over });

  it("says another approver's decision, an expiry and an approval not yet run; another tenant's request is left out", async () => {
    const c = await start(file.store);
    const rita = await signedIn(c, 'approver-acme');
    await file.store.createApproval(request('apr_up_1', 'acme'));
    await file.store.createApproval(request('apr_up_2', 'acme', { expiresAt: Date.now() + 1_000 }));
    await file.store.createApproval(request('apr_up_3', 'globex'));
    const ask = async () =>
      JSON.parse((await rita.request('/inbox/updates?ids=apr_up_1,apr_up_2,apr_up_3')).body) as {
        requests: Record<string, { state: string; text: string }>;
        waiting: string[];
      };
    const before = await ask();
    expect(before.requests.apr_up_1!.state).toBe('pending');
    expect(before.requests.apr_up_3).toBeUndefined();
    expect(before.waiting).toEqual(expect.arrayContaining(['apr_up_1', 'apr_up_2']));
    expect(before.waiting).not.toContain('apr_up_3');
    expect(before.requests.apr_up_2!.state).toBe('pending');
    await file.store.transitionApproval('apr_up_1', 'pending', 'approved', { at: Date.now(), by: 'user:bob', reason: 'ok <b>' });
    // The request's expiry passes: the same request now reads as expired.
    await expect.poll(async () => (await ask()).requests.apr_up_2!.state, { timeout: 5_000, interval: 100 }).toBe('expired');
    const after = await ask();
    expect(after.requests.apr_up_1).toEqual({
      state: 'approved',
      text: 'Approved by user:bob (ok <b>), not yet run: no gateway serving this store has run it yet.',
    });
    expect(after.requests.apr_up_2!.state).toBe('expired');
    expect(after.waiting).not.toContain('apr_up_2');
    await file.store.transitionApproval('apr_up_1', 'approved', 'completed', { at: Date.now() });
    expect((await ask()).requests.apr_up_1!.text).toBe('Approved by user:bob (ok <b>) and run.');
  });

  it('names the approvers of a multi-approver decision one after another, as the CLI does, not as JSON', async () => {
    const c = await start(file.store);
    const rita = await signedIn(c, 'approver-acme');
    await file.store.createApproval(request('apr_up_q', 'acme', { policyDecision: { approvers: 2 } as never }));
    await file.store.transitionApproval('apr_up_q', 'pending', 'approved', {
      at: Date.now(),
      by: JSON.stringify(['user:rita', 'user:rose']),
      reason: 'second',
    });
    await file.store.transitionApproval('apr_up_q', 'approved', 'completed', { at: Date.now() });
    const said = JSON.parse((await rita.request('/inbox/updates?ids=apr_up_q')).body) as { requests: Record<string, { text: string }> };
    expect(said.requests.apr_up_q!.text).toBe('Approved by user:rita, user:rose (second) and run.');
  });
});

describePg('the live calls stream on PostgreSQL', (url) => {
  const fresh = freshSchemas(url);
  it('a call committed through one store wakes the stream of a console over another (NOTIFY, no poll)', async () => {
    const schema = fresh();
    const a = await openPostgresStore({ connectionString: url, schema, chainKey: false });
    const b = await openPostgresStore({ connectionString: url, schema, chainKey: false });
    try {
      // A poll slower than the test: only the NOTIFY can bring the rows in time.
      const c = await start(b, { live: { pollMs: 600_000 } });
      const ada = await signedIn(c, 'admin-any');
      const s = await stream(ada, '/live/events');
      await ready(s);
      await a.appendAudit(call('pg_tool', { id: 'ops', tenant: 'acme' }));
      await expect.poll(() => calls(s), { timeout: 5_000 }).toEqual(['pg_tool:start:started:user:ops', 'pg_tool:end:ok:user:ops']);
    } finally {
      for (const s of streams.splice(0)) s.close();
      for (const c of served.splice(0)) await c.close();
      await a.close();
      await b.close();
    }
  }, 30_000);
});

describePg('the call feed reader on PostgreSQL', (url) => {
  const fresh = freshSchemas(url);
  it('reads at most once per signalGapMs however often the store signals, and delivers the same rows as reading per signal', async () => {
    const schema = fresh();
    const writer = await openPostgresStore({ connectionString: url, schema, chainKey: false });
    const s = await openPostgresStore({ connectionString: url, schema, chainKey: false });
    const readers = [0, 200].map((signalGapMs) => {
      const got: string[] = [];
      let reads = 0;
      const feed = { ...s.callFeed, after: (seq: number, limit: number) => (reads++, s.callFeed.after(seq, limit)), watch: s.callFeed.watch?.bind(s.callFeed) };
      // A poll slower than the test: every read comes from a NOTIFY.
      const reader = new CallFeedReader(feed, {
        pollMs: 600_000,
        batch: 1_000,
        signalGapMs,
        onRows: (rows) => got.push(...rows.map((r) => `${r.tool}:${r.status}`)),
      });
      return { reader, got, reads: () => reads };
    });
    try {
      const head = await s.callFeed.head();
      for (const r of readers) r.reader.start(head);
      // The LISTEN connections are up once their first read (made on connecting) is done.
      await expect.poll(() => readers.every((r) => r.reads() > 0), { timeout: 5_000 }).toBe(true);
      const before = readers.map((r) => r.reads());
      const t0 = Date.now();
      for (let i = 0; i < 40; i++) await writer.appendAudit(call(`t${i}`, { id: 'ops' }));
      await expect.poll(() => readers.map((r) => r.got.length), { timeout: 5_000 }).toEqual([80, 80]);
      expect(readers[1]!.got).toEqual(readers[0]!.got);
      // 40 commits, 40 signals: the gapped reader read once per 200 ms at most (plus the read a signal starts at once).
      expect(readers[1]!.reads() - before[1]!).toBeLessThanOrEqual(Math.ceil((Date.now() - t0) / 200) + 1);
    } finally {
      for (const r of readers) r.reader.stop();
      await writer.close();
      await s.close();
    }
  }, 30_000);

  it('a row whose transaction took its seq first and committed last is still delivered, once', async () => {
    const schema = fresh();
    const s = await openPostgresStore({ connectionString: url, schema, chainKey: false });
    const slow = new pg.Client({ connectionString: url, options: `-c search_path="${schema}"` });
    await slow.connect();
    const got: string[] = [];
    const reader = new CallFeedReader(s.callFeed, { pollMs: 50, batch: 100, onRows: (rows) => got.push(...rows.map((r) => `${r.tool}:${r.status}`)) });
    try {
      reader.start(await s.callFeed.head());
      const [early] = call('early', { id: 'ops' }, {}).slice(1);
      await slow.query('BEGIN');
      await slow.query(
        `INSERT INTO audit (${AUDIT_COLUMNS.join(', ')}) VALUES (${AUDIT_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`,
        auditRowValues(early!, (b) => b),
      );
      await s.appendAudit(call('late', { id: 'ops' }));
      await expect.poll(() => got, { timeout: 5_000 }).toEqual(['late:started', 'late:ok']);
      await slow.query('COMMIT');
      await expect.poll(() => got, { timeout: 5_000 }).toEqual(['late:started', 'late:ok', 'early:ok']);
      await s.appendAudit(call('after', { id: 'ops' }));
      await expect.poll(() => got.length, { timeout: 5_000 }).toBe(5);
      expect(got.slice(3)).toEqual(['after:started', 'after:ok']);
    } finally {
      reader.stop();
      await slow.end();
      await s.close();
    }
  }, 30_000);
});
