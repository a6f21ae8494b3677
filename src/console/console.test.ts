// The console over a real SQLite store and a real listener, driven over HTTP as a browser's forms
// would: sign-in and sessions, decisions and who may make them, tenants, and the security headers.
// The Chromium tests (console-browser.test.ts) drive the same pages through a real browser.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isAuthFailure, tokenAuthenticator, tokenDigest } from '../mcp/serve/auth.js';
import { defineTool } from '../runtime/define.js';
import { createGovernedRuntime } from '../runtime/governed.js';
import { createRuntime } from '../runtime/runtime.js';
import { operatorKeyFromSecret } from '../store/operator-key.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { Store } from '../store/types.js';
import type { ConsoleOptions } from './console.js';
import { Agent, serveConsole, type ServedConsole } from './test-support/http-client.js';

const key = operatorKeyFromSecret('cd'.repeat(32));
const dir = mkdtempSync(join(tmpdir(), 'te-console-'));
const auth = tokenAuthenticator({
  tokens: [
    { sha256: tokenDigest('approver-acme'), principal: 'user:rita', tenant: 'acme', roles: ['approver'] },
    { sha256: tokenDigest('viewer-acme'), principal: 'user:vic', tenant: 'acme', roles: ['viewer'] },
    { sha256: tokenDigest('admin-any'), principal: 'user:ada', roles: ['admin'] },
    { sha256: tokenDigest('ops-acme'), principal: 'user:ops', tenant: 'acme', roles: ['approver'] },
    { sha256: tokenDigest('no-role'), principal: 'user:nobody', tenant: 'acme' },
  ],
});
const verifyToken: ConsoleOptions['verifyToken'] = async (t) => {
  const who = await auth.authenticate(`Bearer ${t}`);
  return isAuthFailure(who) ? undefined : who;
};

const purge = defineTool({
  name: 'warehouse_purge',
  description: 'Deletes every item of a warehouse.',
  approvalMode: 'destructive',
  input: z.object({ warehouse: z.string() }),
  handler: async ({ warehouse }) => ({ purged: warehouse }),
});

let store: Store;
let served: ServedConsole;
beforeAll(async () => {
  store = await openSqliteStore({ path: join(dir, 'calls.db') });
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await served?.close();
});

/** A paused call of a principal of `tenant`, through a real governed runtime: its approval id and tool call id. */
async function pause(tenant: string, warehouse: unknown, who = 'ops'): Promise<{ approvalId: string; toolCallId: string }> {
  const governed = createGovernedRuntime({
    runtime: createRuntime({ tools: [purge] }),
    store,
    operatorKey: key,
    principalChain: [{ kind: 'user', id: who, tenant_id: tenant }],
  });
  const paused = await governed.invoke('warehouse_purge', { warehouse } as never, { idempotencyKey: `k-${Math.random()}` });
  await governed.close();
  expect(paused.status).toBe('paused');
  return { approvalId: paused.metadata!.approvalId as string, toolCallId: paused.toolCallId! };
}

async function start(options: Partial<ConsoleOptions> = {}): Promise<ServedConsole> {
  served = await serveConsole({ store, verifyToken, operatorKey: async () => key, ...options });
  return served;
}

describe('sign-in and sessions', () => {
  it('exchanges a token for an HttpOnly, SameSite=Strict session cookie; a wrong token or one without a role is refused', async () => {
    const c = await start();
    const anon = new Agent(c.url);
    expect((await anon.request('/inbox')).status).toBe(303);
    expect((await anon.signIn('wrong-token')).status).toBe(401);
    expect((await anon.signIn('no-role')).status).toBe(401);
    const a = new Agent(c.url);
    const ok = await a.signIn('approver-acme');
    expect(ok.status).toBe(303);
    const set = ok.headers.getSetCookie().find((x) => x.startsWith('te_console='))!;
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Strict/);
    expect(set).not.toMatch(/Secure/);
    const inbox = await a.request('/inbox');
    expect(inbox.status).toBe(200);
    expect(inbox.body).toContain('user:rita');
  });

  it('a sign-in POST without the form value of its own GET is refused (no sign-in CSRF)', async () => {
    const c = await start();
    const a = new Agent(c.url);
    expect((await a.request('/sign-in', { form: { pre: 'forged', token: 'approver-acme' } })).status).toBe(403);
  });

  it('rate-limits failed sign-ins per address, counted across the consoles over one store', async () => {
    // A store of its own: the failures of this file's other tests, from the same address, count in the shared one.
    const own = await openSqliteStore({ path: join(dir, 'limit.db') });
    const options: ConsoleOptions = { store: own, verifyToken, operatorKey: async () => key, signInLimit: { failures: 3, windowMs: 60_000 } };
    const [one, two] = [await serveConsole(options), await serveConsole(options)];
    try {
      const [a, b] = [new Agent(one.url), new Agent(two.url)];
      expect((await a.signIn('guess-0')).status).toBe(401);
      expect((await b.signIn('guess-1')).status).toBe(401);
      expect((await a.signIn('guess-2')).status).toBe(401);
      // Three failures between the two: even the right token waits out the window now, on either console.
      expect((await b.signIn('approver-acme')).status).toBe(429);
      expect((await a.signIn('approver-acme')).status).toBe(429);
    } finally {
      await one.close();
      await two.close();
      await own.close();
    }
  });

  it('never adopts a session id the client brings (fixation), and a signed-out session cannot be replayed', async () => {
    const c = await start();
    const a = new Agent(c.url);
    a.cookies.set('te_console', 'attacker-chosen-id');
    await a.signIn('approver-acme');
    const minted = a.cookies.get('te_console')!;
    expect(minted).not.toBe('attacker-chosen-id');
    const attacker = new Agent(c.url);
    attacker.cookies.set('te_console', 'attacker-chosen-id');
    expect((await attacker.request('/inbox')).status).toBe(303);

    const page = await a.request('/inbox');
    const csrf = Agent.csrfOf(page.body)!;
    expect((await a.request('/sign-out', { form: { csrf } })).status).toBe(303);
    const replay = new Agent(c.url);
    replay.cookies.set('te_console', minted);
    expect((await replay.request('/inbox')).status).toBe(303);
    expect((await replay.request('/sign-out', { form: { csrf } })).status).toBe(403);
  });

  it('ends a session after its idle time and after its absolute time', async () => {
    let now = 1_000_000;
    const c = await start({ sessions: { idleMs: 1000, absoluteMs: 5000, now: () => now } });
    const a = new Agent(c.url);
    await a.signIn('viewer-acme');
    now += 900;
    expect((await a.request('/inbox')).status).toBe(200);
    now += 1000;
    expect((await a.request('/inbox')).status).toBe(303);
    await a.signIn('viewer-acme');
    for (let i = 0; i < 6; i++) {
      now += 900;
      if (i < 4) expect((await a.request('/inbox')).status).toBe(200);
    }
    expect((await a.request('/inbox')).status).toBe(303);
  });
});

describe('sessions in the store, shared by every console over it', () => {
  it('a session of one console works on another over the same file; sign-out on it ends the first one and its open live stream', async () => {
    // A second console process over the same SQLite file: its own connection, its own memory.
    const other = await openSqliteStore({ path: join(dir, 'calls.db') });
    const b = await serveConsole({ store: other, verifyToken, operatorKey: async () => key, sessions: { streamCheckMs: 100 } });
    try {
      const c = await start({ sessions: { streamCheckMs: 100 } });
      const onA = new Agent(c.url);
      await onA.signIn('approver-acme');
      const id = onA.cookies.get('te_console')!;
      const stream = await fetch(`${c.url}/live/events`, { headers: { cookie: `te_console=${id}` } });
      expect(stream.status).toBe(200);
      const onB = new Agent(b.url);
      onB.cookies.set('te_console', id);
      const inbox = await onB.request('/inbox');
      expect(inbox.status).toBe(200);
      expect(inbox.body).toContain('user:rita');
      expect((await onB.request('/sign-out', { form: { csrf: Agent.csrfOf(inbox.body)! } })).status).toBe(303);
      expect((await onA.request('/inbox')).status).toBe(303);
      // The stream opened on A before the sign-out ends within its check interval.
      const started = Date.now();
      const reader = stream.body!.getReader();
      while (!(await reader.read()).done);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await b.close();
      await other.close();
    }
  });
});

describe('decisions', () => {
  it('an approver approves: the request is approved and signed as the signed-in identity', async () => {
    const { approvalId } = await pause('acme', 'west');
    const c = await start();
    const a = new Agent(c.url);
    await a.signIn('approver-acme');
    const inbox = await a.request('/inbox');
    expect(inbox.body).toContain(approvalId);
    const csrf = Agent.csrfOf(inbox.body)!;
    const r = await a.request(`/approvals/${approvalId}/decide`, { form: { csrf, decision: 'approve', reason: 'ticket OPS-12' } });
    expect(r.status).toBe(303);
    const after = await store.getApproval(approvalId);
    expect(after).toMatchObject({ state: 'approved', decidedBy: 'user:rita', decisionReason: 'ticket OPS-12' });
    expect(after!.decisionSignature).toEqual(expect.any(String));
    // Decided: no longer in the inbox; deciding again is refused as not pending.
    expect((await a.request('/inbox')).body).not.toContain(approvalId);
    expect((await a.request(`/approvals/${approvalId}/decide`, { form: { csrf, decision: 'reject' } })).status).toBe(409);
  });

  it('two approvers deciding at once: one decision wins, the other is told it was decided meanwhile', async () => {
    const { approvalId } = await pause('acme', 'race');
    const c = await start();
    const [a, b] = [new Agent(c.url), new Agent(c.url)];
    await a.signIn('approver-acme');
    await b.signIn('admin-any');
    const [ca, cb] = [Agent.csrfOf((await a.request('/inbox')).body)!, Agent.csrfOf((await b.request('/inbox')).body)!];
    const answers = await Promise.all([
      a.request(`/approvals/${approvalId}/decide`, { form: { csrf: ca, decision: 'approve' } }),
      b.request(`/approvals/${approvalId}/decide`, { form: { csrf: cb, decision: 'reject' } }),
    ]);
    expect(answers.map((x) => x.status).sort()).toEqual([303, 409]);
    const after = await store.getApproval(approvalId);
    expect(after!.decidedBy).toBe(answers[0]!.status === 303 ? 'user:rita' : 'user:ada');
    expect(after!.state).toBe(answers[0]!.status === 303 ? 'approved' : 'rejected');
  });

  it('a reject is settled and logged as rejected by the signed-in identity', async () => {
    const { approvalId, toolCallId } = await pause('acme', 'east');
    const c = await start();
    const a = new Agent(c.url);
    await a.signIn('approver-acme');
    const csrf = Agent.csrfOf((await a.request('/inbox')).body)!;
    expect((await a.request(`/approvals/${approvalId}/decide`, { form: { csrf, decision: 'reject', reason: 'wrong warehouse' } })).status).toBe(303);
    expect(await store.getApproval(approvalId)).toMatchObject({ state: 'rejected', decidedBy: 'user:rita' });
    const records = (await store.listAudit({ toolCallId }, { order: 'asc' })).records;
    expect(records.map((x) => x.status)).toEqual(['paused', 'rejected']);
    expect(records[1]!.resultEnvelope).toMatchObject({ error: 'Rejected by user:rita: wrong warehouse' });
  });

  it('a principal of the call cannot approve it', async () => {
    const { approvalId } = await pause('acme', 'own', 'ops');
    const c = await start();
    const a = new Agent(c.url);
    await a.signIn('ops-acme');
    const csrf = Agent.csrfOf((await a.request('/inbox')).body)!;
    const r = await a.request(`/approvals/${approvalId}/decide`, { form: { csrf, decision: 'approve' } });
    expect(r.status).toBe(403);
    expect(r.body).toContain('may not approve it');
    expect((await store.getApproval(approvalId))!.state).toBe('pending');
  });

  it('a state change without the CSRF token, from another origin, or through GET is refused', async () => {
    const { approvalId } = await pause('acme', 'csrf');
    const c = await start();
    const a = new Agent(c.url);
    await a.signIn('approver-acme');
    const csrf = Agent.csrfOf((await a.request('/inbox')).body)!;
    expect((await a.request(`/approvals/${approvalId}/decide`, { form: { decision: 'approve' } })).status).toBe(403);
    expect((await a.request(`/approvals/${approvalId}/decide`, { form: { csrf: `${csrf}x`, decision: 'approve' } })).status).toBe(403);
    expect(
      (await a.request(`/approvals/${approvalId}/decide`, { form: { csrf, decision: 'approve' }, headers: { origin: 'http://evil.example' } })).status,
    ).toBe(403);
    expect((await a.request(`/approvals/${approvalId}/decide?decision=approve&csrf=${csrf}`)).status).toBe(405);
    expect((await store.getApproval(approvalId))!.state).toBe('pending');
  });

  it('a viewer sees no decision form and is refused if it posts anyway', async () => {
    const { approvalId } = await pause('acme', 'viewer');
    const c = await start();
    const v = new Agent(c.url);
    await v.signIn('viewer-acme');
    const inbox = await v.request('/inbox');
    expect(inbox.body).toContain(approvalId);
    expect(inbox.body).not.toContain('value="approve"');
    const csrf = Agent.csrfOf(inbox.body)!;
    const r = await v.request(`/approvals/${approvalId}/decide`, { form: { csrf, decision: 'approve' } });
    expect(r.status).toBe(403);
    expect((await store.getApproval(approvalId))!.state).toBe('pending');
  });
});

describe('tenants', () => {
  it("another tenant's requests and records are invisible and answer as not found; an admin sees all", async () => {
    const theirs = await pause('globex', 'theirs');
    const c = await start();
    const a = new Agent(c.url);
    await a.signIn('approver-acme');
    expect((await a.request('/inbox')).body).not.toContain(theirs.approvalId);
    const [record] = (await store.listAudit({ toolCallId: theirs.toolCallId })).records;
    expect((await a.request('/audit')).body).not.toContain(record!.id);
    const shown = await a.request(`/audit/${record!.id}`);
    const missing = await a.request('/audit/aud_does_not_exist');
    expect(shown.status).toBe(404);
    expect(shown.body).toBe(missing.body);
    const csrf = Agent.csrfOf((await a.request('/inbox')).body)!;
    expect((await a.request(`/approvals/${theirs.approvalId}/decide`, { form: { csrf, decision: 'reject' } })).status).toBe(404);
    expect((await store.getApproval(theirs.approvalId))!.state).toBe('pending');

    const admin = new Agent(c.url);
    await admin.signIn('admin-any');
    expect((await admin.request('/inbox')).body).toContain(theirs.approvalId);
    expect((await admin.request(`/audit/${record!.id}`)).status).toBe(200);
  });
});

describe('pages', () => {
  it('carry a strict CSP without inline script, refuse framing, and load only their own files', async () => {
    const c = await start();
    const a = new Agent(c.url);
    const signIn = await a.request('/sign-in');
    await a.signIn('admin-any');
    for (const p of [signIn, await a.request('/inbox'), await a.request('/audit')]) {
      const csp = p.headers.get('content-security-policy')!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).toContain("frame-ancestors 'none'");
      expect(p.headers.get('x-frame-options')).toBe('DENY');
      // No inline script: every <script> has a src of the console's own.
      expect([...p.body.matchAll(/<script([^>]*)>/g)].map((m) => m[1])).toEqual([' src="/console/assets/console.js" defer']);
      expect(p.body).not.toMatch(/https?:\/\//);
    }
    expect((await a.request('/assets/console.css')).headers.get('content-type')).toContain('text/css');
  });

  it('show every stored string inert: HTML, script, ANSI escapes, bidi overrides, a 1 MB string', async () => {
    const hostile = `<script>window.pwned=1</script><img src=x onerror=alert(1)>\u001b[31mred\u001b[0m \u202eevil\u202c "quoted' ${'A'.repeat(1_000_000)}`;
    const { toolCallId } = await pause('acme', hostile);
    const c = await start();
    const a = new Agent(c.url);
    await a.signIn('approver-acme');
    const inbox = await a.request('/inbox');
    const [record] = (await store.listAudit({ toolCallId })).records;
    const shown = await a.request(`/audit/${record!.id}`);
    for (const body of [inbox.body, shown.body]) {
      expect(body).toContain('&lt;script&gt;window.pwned=1&lt;/script&gt;');
      // The 1 MB string reached the page, cut with a note rather than whole.
      expect(body).toMatch(/more characters not shown/);
      expect(body).not.toContain('<script>window');
      expect(body).not.toContain('<img src=x');
      expect(body).not.toContain('\u001b');
      expect(body).not.toContain('\u202e');
      expect(body).toContain('\\u{202e}');
      expect(body.length).toBeLessThan(400_000);
    }
  });

  it('keyset-pages the audit list with the CLI filters and refuses a bad filter', async () => {
    for (let i = 0; i < 3; i++) await pause('acme', `page-${i}`);
    const c = await start();
    const a = new Agent(c.url);
    await a.signIn('admin-any');
    const bad = await a.request('/audit?status=nope');
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('unknown status');
    const all = (await store.listAudit({ tool: 'warehouse_purge', status: 'paused' }, { limit: 10_000 })).records.length;
    const seen = new Set<string>();
    let next: string | undefined = '/audit?tool=warehouse_purge&status=paused';
    let pages = 0;
    while (next) {
      const p = await a.request(next);
      expect(p.status).toBe(200);
      for (const m of p.body.matchAll(/href="\/console\/audit\/([^"]+)"/g)) seen.add(m[1]!);
      next = /id="older" href="\/console([^"]+)"/.exec(p.body)?.[1]?.replace(/&amp;/g, '&');
      pages++;
    }
    expect(seen.size).toBe(all);
    expect(pages).toBeGreaterThanOrEqual(1);
  });
});
